"""The ledgers of the large jobs a process is driving, so that each pass starts from the last one's rows.

A pass takes its job's ledger out and puts it back when it is done, so two passes of one job (a trigger
running twice at once, in two threads) never share one: the second builds its own from scratch. Only
ledgers of many rows are kept, and only a few of them, so small and idle jobs keep nothing here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_broadcast.reconcilers.broadcast_job.ledger import NodeLedger
from airflow_broadcast.reconcilers.broadcast_job.ledger_rows import RowRules
from airflow_broadcast.reconcilers.broadcast_job.memo import IdentityMemo
from airflow_broadcast.reconcilers.broadcast_job.node_eligibility import FitnessCheck, compile_fitness, with_selection
from airflow_broadcast.reconcilers.broadcast_job.pods import template_hash
from airflow_broadcast.reconcilers.broadcast_job.retries import FailureHandling
from airflow_broadcast.reconcilers.observed import JobRecord
from airflow_broadcast.specs.broadcast_job.spec import BroadcastJobSpec

KEEP_ABOVE = 64  # rows: below this a pass from scratch costs about as much as a diff
MAX_KEPT = 8

_kept: dict[str, NodeLedger] = {}
# One compiled check per job template in use; a small bound, so that the templates of jobs long gone are let go.
_template_checks: IdentityMemo[Mapping[str, Any], None, FitnessCheck] = IdentityMemo(max_entries=1024)


def _compile_template(template: Mapping[str, Any], _: None) -> FitnessCheck:
    return compile_fitness(template.get("spec") or {}, template=True)


# V18: the template's hash, once per template in use rather than once per pass.
_template_ids: IdentityMemo[Mapping[str, Any], None, str] = IdentityMemo(max_entries=1024)


def take_ledger(spec: BroadcastJobSpec, record: JobRecord, *, kruise_compat: bool) -> NodeLedger:
    """The job's kept ledger when it was built for these very inputs, else a new one."""
    owner_kind = str(record.owner_reference.get("kind") or "") or None
    restart_limit = spec.failure_policy.restart_limit
    failures = FailureHandling(spec.failure_policy.backoff_limit_per_node, spec.pod_failure_rules,
                               _template_ids(str(id(spec.template)), spec.template, None, lambda t, _: template_hash(t))
                               if spec.rerun_on_template_change else None,
                               restart_limit)
    key = (spec.name, record.uid, owner_kind, restart_limit, failures, kruise_compat, id(spec.template),
           spec.node_selection)
    ledger = _kept.pop(record.uid, None)
    if ledger is not None and ledger.key == key and ledger.template is spec.template:
        return ledger
    template_fits = _template_checks(str(id(spec.template)), spec.template, None, _compile_template)
    rules = RowRules(template_fits=with_selection(spec.node_selection, template_fits),
                     warn_unschedulable=not kruise_compat, keep_successes=not kruise_compat,
                     failures=failures)
    return NodeLedger(key, spec.template, rules, (spec.name, record.uid, owner_kind), restart_limit)


def keep_ledger(uid: str, ledger: NodeLedger) -> None:
    if len(ledger.rows) <= KEEP_ABOVE:
        return
    _kept[uid] = ledger
    while len(_kept) > MAX_KEPT:
        del _kept[next(iter(_kept))]


def forget_ledgers() -> None:
    _kept.clear()
