"""The TTL janitor for the examples' namespace: expired job records and their pods go when their TTL says.

Every example's manifest sets `ttlSecondsAfterFinished`; with this file in the DAG folder, the records are
deleted as soon as it expires (once the task read the result), with no task of the job running. The janitor
runs in the triggerer for as long as the DAG `airflow_broadcast_ttl_janitor` is active; each cleanup shows
as an event of its asset and a run of the DAG. See docs/ttl.md.
"""

# [START howto_ttl_janitor]
from airflow_broadcast.janitor import ttl_janitor_dag

dag = ttl_janitor_dag(namespaces=["demo"])
# [END howto_ttl_janitor]
