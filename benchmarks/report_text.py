"""The fixed prose of docs/performance.md: the design rules (performance_design.md) and the client limits.

The numbers in them that depend on the engine (the client limits) are read from the engine's own defaults
when the page is generated, so the text follows whatever engine is checked out.
"""

from __future__ import annotations

from pathlib import Path

from airflow_broadcast.config import Settings
from benchmarks import overhead_runs, relist_memory
from benchmarks.common import load

DESIGN_TEMPLATE = Path(__file__).with_name("performance_design.md")


def _limits() -> tuple[float, int]:
    s = Settings()
    return s.client_qps, s.client_burst


def _rollout(qps: float) -> str:
    if qps <= 0:
        return "no client limit: bounded by the apiserver, the scheduler and the machine (see the table above)"
    return f"bounded by the client rate: about 5,000 / {qps:g} = {5000 / qps:,.0f} s of creates"


def design() -> str:
    qps, burst = _limits()
    return DESIGN_TEMPLATE.read_text().format(qps=f"{qps:g}", burst=burst, rollout=_rollout(qps),
                                              overhead_runs=overhead_runs.table(overhead_runs.load_runs()),
                                              relist_memory=relist_memory.summary(load("relist_memory")))


def client_limits_section() -> str:
    qps, burst = _limits()
    return f"""## Client limits: the defaults and why

The provider's shared client defaults to **{qps:g} requests/s with bursts of {burst}** per process
(`[airflow_broadcast] client_qps` / `client_burst`; 0 QPS turns the limiter off). For comparison:

| client | default QPS / burst |
| --- | --- |
| client-go `rest.Config` (no value set) | 5 / 10 |
| kube-controller-manager (`--kube-api-qps`, `--kube-api-burst`), per controller | 20 / 30 |
| kube-scheduler, kubelet | 50 / 100 |
| kubectl discovery | 50 / 300 |
| OpenKruise manager (shared by all its controllers) | 30 / 50 |
| this provider, per triggerer or worker process | {qps:g} / {burst} |

Client-side limits date from before the apiserver could protect itself. API Priority and Fairness
(on by default since Kubernetes 1.20, GA in 1.29) now queues and sheds load per priority level and flow
on the server, answering 429 with Retry-After when a level is saturated; the provider retries those
with backoff. The client limit therefore only has to stop one runaway process from flooding its own
priority level, not to protect the server. The `-lifted` rows of the table above show what the limit
costs at this machine's scale.
"""
