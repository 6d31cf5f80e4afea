"""Jobs complete with the same result as without faults while the proxy throttles, fails, resets,
slows, expires and cuts the engine's requests and watches (issue 8 §3; a seeded catalogue)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devcluster.fault_proxy import FaultProxy
from devcluster.fault_rules import STATUS
from tests.integration.faults.fault_cases import CASES, FaultCase
from tests.integration.faults.fault_harness import BCJ, EXPECTED, TF, manifest_for, run_job

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("kind", [BCJ, TF])
def test_without_faults_the_job_has_the_expected_result(kind: str, kubeconfig: str, core_api: client.CoreV1Api,
                                                        namespace: str, node_factory: Any, tmp_path: Path) -> None:
    node_factory(3, labels={"pool": namespace})
    with FaultProxy(kubeconfig, tmp_path) as proxy:
        run = run_job(core_api, namespace, proxy, manifest_for(kind, namespace))

    assert run.outcome == "finished"
    assert run.result == EXPECTED[kind]
    assert run.injected == {}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_job_completes_with_the_same_result_under_faults(case: FaultCase, kubeconfig: str,
                                                             core_api: client.CoreV1Api, namespace: str,
                                                             node_factory: Any, tmp_path: Path) -> None:
    node_factory(3, labels={"pool": namespace})
    rules = case.rules(namespace)
    with FaultProxy(kubeconfig, tmp_path, rules, seed=case.seed) as proxy:
        run = run_job(core_api, namespace, proxy, manifest_for(case.kind, namespace))

    assert run.outcome == "finished"
    assert run.result == EXPECTED[case.kind]
    assert sum(run.injected.values()) >= 1, "the proxy injected nothing: the case tested nothing"
    for fault in case.expect:
        assert run.injected.get(fault, 0) >= 1, f"{fault} was never injected"
    for asked, waited in run.retry_gaps:
        assert waited >= asked, f"retried {waited:.2f} s after a 429 with Retry-After {asked}"
    if not case.chaos:
        throttled = sum(r.fired for r in rules if r.fault == STATUS and r.retry_after)
        assert len(run.retry_gaps) == throttled, "every throttled request was retried"
