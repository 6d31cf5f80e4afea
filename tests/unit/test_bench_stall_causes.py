"""The triggerer benchmark names what held the loop through each blocked warning, from the sampled stacks."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.stall_causes import cause_of, gc_summary, recount, warning_causes

LOG_WRITE = ["airflow/jobs/triggerer_job_runner.py:1591 run_trigger", "structlog/_output.py:347 msg"]
COLLECTING = ["airflow_broadcast/reconcilers/journal.py:106 changed_objects", "benchmarks/lag_probe.py:76 __call__"]
PROVIDER = ["python3.11/asyncio/events.py:80 _run", "airflow_broadcast/cluster/informers.py:113 upsert",
            "airflow_broadcast/cluster/cache_journals.py:37 record"]
AIOHTTP = ["aiohttp/http_writer.py:116 _writelines", "python3.11/ssl.py:930 write"]


def test_each_cause_is_named_by_the_frames_of_the_stacks_sampled_in_the_block() -> None:
    assert cause_of([AIOHTTP, COLLECTING], collected=False) == "collector"
    assert cause_of([AIOHTTP], collected=True) == "collector"
    assert cause_of([PROVIDER, LOG_WRITE], collected=True) == "log_write"
    assert cause_of([AIOHTTP, PROVIDER], collected=False) == "provider"
    assert cause_of([AIOHTTP], collected=False) == "other"
    assert cause_of([], collected=False) == "unsampled"


def test_a_warning_gets_the_samples_taken_inside_its_block_and_the_longest_ones_frame() -> None:
    warnings = [(100.0, 0.7), (200.0, 0.25), (300.0, 0.22)]
    samples = [(99.5, 0.1, 4096, AIOHTTP), (99.9, 0.6, 2_000_000, LOG_WRITE),  # inside the first block
               (199.9, 0.15, 0, PROVIDER),  # inside the second
               (250.0, 0.2, 0, COLLECTING)]  # between blocks: explains none
    result = warning_causes(warnings, [], samples)

    assert result["blocked_warnings_by_cause"] == {"log_write": 1, "descheduled": 0, "off_cpu": 0, "other_threads": 0,
                                                   "collector": 0, "provider": 1, "other": 0, "unsampled": 1}
    first, second, third = result["blocked_warning_details"]
    assert first == {"at": 100.0, "seconds": 0.7, "cause": "log_write", "loop_thread_cpu": None, "process_cpu": None,
                     "loop_thread_run_queue_wait": None, "busiest_thread": None, "log_queue_bytes": 2_000_000,
                     "frame": "structlog/_output.py:347 msg"}
    assert (second["cause"], second["frame"]) == ("provider", "airflow_broadcast/cluster/cache_journals.py:37 record")
    assert (third["cause"], third["frame"]) == ("unsampled", None)


def test_a_stalls_cpu_tells_a_loop_that_ran_from_one_that_waited_for_other_threads_or_a_cpu() -> None:
    warnings = [(100.0, 0.3), (200.0, 0.3), (300.0, 0.3), (400.0, 0.5)]
    stalls = [(99.99, 0.2, 0.18, 0.19), (199.99, 0.2, 0.02, 0.17), (299.99, 0.2, 0.02, 0.03),
              (399.99, 0.45, 0.14, 0.14)]
    samples = [(99.9, 0.1, 0, PROVIDER, {}), (199.9, 0.1, 0, PROVIDER, {"airflow-broadcast-writer": 0.015}),
               (299.9, 0.1, 0, PROVIDER, {}), (399.9, 0.4, 0, COLLECTING, {})]
    pauses = [(399.95, 2, 0.4)]  # 0.4 s of wall time, but the process got 0.14 s of CPU through it

    result = warning_causes(warnings, pauses, samples, stalls)

    assert [d["cause"] for d in result["blocked_warning_details"]] == ["provider", "other_threads", "descheduled",
                                                                       "descheduled"]
    assert result["blocked_warning_details"][1]["busiest_thread"] == "airflow-broadcast-writer"
    assert result["blocked_warning_details"][2]["process_cpu"] == 0.03
    assert result["blocked_warning_details"][2]["loop_thread_run_queue_wait"] is None  # an older probe's stall


def test_the_run_queue_wait_tells_a_process_that_waited_for_a_cpu_from_one_that_was_off_the_cpus() -> None:
    warnings = [(100.0, 0.3), (200.0, 0.3)]
    stalls = [(99.99, 0.2, 0.02, 0.03, 0.15), (199.99, 0.2, 0.02, 0.03, 0.01)]
    samples = [(99.9, 0.1, 0, PROVIDER, {}), (199.9, 0.1, 0, PROVIDER, {})]

    details = warning_causes(warnings, [], samples, stalls)["blocked_warning_details"]

    assert [d["cause"] for d in details] == ["descheduled", "off_cpu"]
    assert [d["loop_thread_run_queue_wait"] for d in details] == [0.15, 0.01]


def test_the_gc_summary_adds_the_causes_only_when_the_probe_sampled_stacks(tmp_path: Path) -> None:
    log = "2026-12-04T10:00:10.000000Z [info     ] Triggerer's async thread was blocked for 0.30 seconds, exceeding\n"
    t10 = 1796378410.0
    probe = tmp_path / "probe.jsonl"
    probe.write_text(json.dumps({"t": t10, "gc": [[t10 - 0.05, 2, 0.2]], "stalls": [],
                                 "stall_stacks": [[t10 - 0.1, 0.2, 0, AIOHTTP]]}) + "\n")

    assert gc_summary(log, probe)["blocked_warnings_by_cause"]["collector"] == 1
    probe.write_text(json.dumps({"t": t10, "gc": [], "stalls": []}) + "\n")
    assert "blocked_warnings_by_cause" not in gc_summary(log, probe)


def test_a_result_is_recounted_from_the_log_and_probe_its_run_kept(tmp_path: Path) -> None:
    log = "2026-12-04T10:00:10.000000Z [info     ] Triggerer's async thread was blocked for 0.30 seconds, exceeding\n"
    t10 = 1796378410.0
    results = tmp_path / "triggerer.json"
    results.write_text(json.dumps({"steps": [], "blocked_warnings_by_cause": {"provider": 1}, "floor": {"steps": []}}))
    (tmp_path / "triggerer-provider.log").write_text(log)
    line = {"t": t10, "gc": [], "stalls": [[t10 - 0.05, 0.2, 0.02, 0.03]],
            "stall_stacks": [[t10 - 0.1, 0.2, 0, PROVIDER, {}]]}
    (tmp_path / "triggerer-provider.probe.jsonl").write_text(json.dumps(line) + "\n")
    who_ran = [{"t": t10 - 0.2, "cpu": {"kube-apiserver": 0.3, "trigger runner": 0.01}, "idle": 0.0, "steal": 0.0},
               {"t": t10, "cpu": {"kube-apiserver": 0.2, "etcd": 0.15}, "idle": 0.0, "steal": 0.0},
               {"t": t10 + 5, "cpu": {"kwok": 0.4}, "idle": 0.0, "steal": 0.0}]  # after the block
    (tmp_path / "triggerer-provider.cpu.jsonl").write_text("".join(json.dumps(x) + "\n" for x in who_ran))

    recounted = recount(results, tmp_path)

    assert recounted["blocked_warnings_by_cause"]["descheduled"] == 1
    assert recounted["blocked_warning_details"][0]["cpu_by_role"] == {"kube-apiserver": 0.5, "etcd": 0.15,
                                                                      "trigger runner": 0.01}
    assert recounted["cpu_by_role_through_warnings"]["kube-apiserver"] == 0.5
    assert recounted["blocked_warnings_by_cause"]["provider"] == 0
    assert recounted["floor"] == {"steps": []}  # the comparator's files were not kept: left as it was
    assert json.loads(results.read_text()) == recounted
