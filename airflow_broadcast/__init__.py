"""Apache Airflow provider for OpenKruise BroadcastJobs and Kubeflow TFJobs.

Airflow itself is the controller: deferrable triggers drive the reconciliation
of each job against the Kubernetes API. Importing this package is cheap on
purpose, so DAG parsing stays fast.
"""

__version__ = "0.1.0"
