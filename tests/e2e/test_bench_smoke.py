"""The benchmark harness cannot rot: a 50-node comparison and a few idle jobs in a real triggerer.

Structure only: every method ran and accounted for every pod, the ratios were computed, the
triggerer steps were measured. No assertion on a time.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from benchmarks.compare import compare
from benchmarks.methods import COMPLETING, DIAGNOSTIC, METHODS
from benchmarks.report import ratio_rows
from benchmarks.triggerer_load import bench_triggerer
from devcluster.control_plane import ClusterInfo

NODES = 50

pytestmark = [pytest.mark.cluster, pytest.mark.airflow]


def test_comparison_runs_every_method_and_computes_ratios(kubeconfig: str, core_api: client.CoreV1Api) -> None:
    result = compare(kubeconfig, [NODES], rounds=1, complete_rounds=1, timeout=300)

    runs = result["runs"]
    held = [r for r in runs if not r["complete"]]
    assert sorted(r["method"] for r in held) == sorted(METHODS)
    assert sorted(r["method"] for r in runs if r["complete"]) == sorted(COMPLETING)
    for run in runs:
        assert not run.get("error"), run
        assert run["reached"] and run["pods_running"] == NODES, run
        assert run["to_all_running_seconds"] is not None and run["cpu_seconds"] is not None
        if run["pinning"] != "unpinned":
            assert run["distinct_nodes"] == NODES, run  # one pod on every node of the pool
        if run["complete"]:
            assert run["pods_succeeded"] == NODES and run["to_all_succeeded_seconds"] is not None
    engine_done = [r for r in runs if r["complete"] and r["method"].startswith("engine")]
    assert all(r["event"]["status"] == "finished" and "last_done_to_event_seconds" in r for r in engine_done)

    table = {row["method"]: row for row in result["table"]}
    assert set(table) == set(METHODS)
    for method, row in table.items():
        assert row["pods_accounted"] == NODES
        assert row["vs_raw_same_pinning"] is not None and row["vs_daemonset"] is not None, method
        assert row["cpu_seconds_per_1000_pod_events"] is not None, method
    assert table["raw-affinity"]["vs_raw_same_pinning"] == 1.0  # each storm is its own pinning mode's base
    assert table["raw-nodename"]["raw_compared"] == "raw-nodename"
    assert len(ratio_rows(result["table"])) == 2 + len(METHODS)
    for run in runs:  # each method's namespace was gone before the next method started
        with pytest.raises(ApiException) as gone:
            core_api.read_namespace(run["namespace"])
        assert gone.value.status == 404, run["namespace"]


def test_idle_jobs_in_a_real_triggerer_are_measured(kubeconfig: str) -> None:
    result = bench_triggerer(kubeconfig, [2, 4], window=6, settle=2)

    assert [s["jobs"] for s in result["steps"]] == [0, 2, 4]
    for step in result["steps"]:
        assert step["lag_samples"] > 0 and step["loop_lag_p99_ms"] is not None, step
        assert step["triggerer_rss_mib"] > 0 and step["provider_requests_per_second"] is not None, step
    assert result["rss_kib_per_idle_job"] is not None
    assert set(result["requests_per_second_by_jobs"]) == {0, 2, 4}
    assert isinstance(result["blocked_warnings_total"], int)
    assert 0 <= result["blocked_warnings_during_gc"] <= result["blocked_warnings_total"]
    assert 0 <= result["gc_pauses_over_0_2s"] <= result["gc_pauses_over_0_1s"]


def test_the_overhead_storms_run_and_are_compared_with_the_raw_node_name_storm(cluster: ClusterInfo) -> None:
    result = compare(cluster.kubeconfig, [NODES], rounds=1, methods=("raw-nodename", *DIAGNOSTIC),
                     complete_rounds=0, timeout=300, plane_pids=cluster.pids)

    runs = {r["method"]: r for r in result["runs"]}
    assert set(runs) == {"raw-nodename", *DIAGNOSTIC}
    for method in DIAGNOSTIC:
        run = runs[method]
        assert not run.get("error"), run
        assert run["reached"] and run["pods_running"] == NODES and run["distinct_nodes"] == NODES, run
        assert run["watch_events"] >= NODES, run  # the watch ran: every pod's ADDED came before it was Running
    for run in runs.values():  # each round's bill to the plane: its processes' CPU and the pods it created
        assert set(run["plane_cpu_by_process"]) == set(cluster.pids), run
        assert run["plane_cpu_seconds"] == pytest.approx(sum(run["plane_cpu_by_process"].values()), abs=0.05)
        assert run["plane_cpu_by_process"]["kube-apiserver"] > 0, run
        assert run["plane_requests_top"].get("POST pods", 0) >= NODES, run
        assert run["plane_requests"] >= sum(run["plane_requests_top"].values()), run
    table = {row["method"]: row for row in result["table"]}
    assert {table[m]["raw_compared"] for m in DIAGNOSTIC} == {"raw-nodename"}
    assert all(table[m]["vs_raw_same_pinning"] is not None for m in DIAGNOSTIC)
