"""docs/performance.md from the JSON results, and the side-by-side ratio table printed by `make bench`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import plots
from benchmarks.common import REPO_ROOT, load
from benchmarks.report_text import client_limits_section, design

DOC = REPO_ROOT / "docs" / "performance.md"


TF_INTRO = ("`python -m benchmarks.run tfjob`: one TFJob in the engine's own process, its pods on kwok nodes. "
            "Workers succeed 5 s after they start, the PS run on, and the chief succeeds after `chief_seconds`, "
            "which `job_seconds` includes: the job succeeds with its chief, and a chief that ended within seconds "
            "would end the job before its last batches of pods were created. `pods`, `pods_succeeded` and "
            "`services` are counted after the job succeeded (`cleanPodPolicy: None`); peak RSS is the engine "
            "process's.")


def _fmt(value: Any, suffix: str = "") -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}{suffix}"
    if isinstance(value, float):
        value = int(value)
    return f"{value:,}{suffix}" if isinstance(value, int) else f"{value}{suffix}"


def ratio_rows(table: list[dict[str, Any]]) -> list[str]:
    head = ["| nodes | method | pinning | runs | to all Running (median, s) | ratio to raw, same pinning "
            "| ratio to DaemonSet | to all Succeeded (s) | pods accounted | CPU-s / 1,000 pod events "
            "| API requests | peak RSS (MiB) |",
            "|" + " --- |" * 12]
    return head + [
        f"| {r['nodes']:,} | {r['method']} | {r['pinning']} | {r['runs']} | {_fmt(r['to_all_running_seconds'])} "
        f"| {_fmt(r['vs_raw_same_pinning'])} | {_fmt(r['vs_daemonset'])} | {_fmt(r['to_all_succeeded_seconds'])} "
        f"| {r['pods_accounted']:,} | {_fmt(r['cpu_seconds_per_1000_pod_events'])} | {_fmt(r['api_requests'])} "
        f"| {_fmt(r['peak_rss_mib'])} |" for r in table]


def print_table(table: list[dict[str, Any]]) -> None:
    print("\n".join(ratio_rows(table)))


def _machine(results: dict[str, dict[str, Any]]) -> str:
    m = next((r["machine"] for r in results.values() if r and r.get("machine")), {})
    if not m:
        return "(no machine description recorded)"
    return (f"{m.get('cores')} cores ({m.get('cpu')}), {m.get('ram_gib')} GiB RAM, Linux {m.get('kernel')}, "
            f"Python {m.get('python')}, Airflow {m.get('airflow')}, Kubernetes {m.get('kubernetes')} with kwok, "
            f"{''.join(m.get('etcd') or [])}. Each section names the commit its run measured")


def _code(result: dict[str, Any]) -> str:
    """The commit a result's run measured, and the load it started under: results are refreshed piece by piece."""
    m = result.get("machine") or {}
    if not m.get("commit"):
        return ""
    load = ", ".join(f"{x:.2f}" for x in m.get("load_average_at_start", []))
    return f" Code at {m['commit']}" + (f"; load average at start {load}." if load else ".")


def _compare(result: dict[str, Any]) -> list[str]:
    table = result["table"]
    lines = ["## Side by side: time to all Running", "",
             f"{result['rounds']} interleaved round(s) per size to all Running (each pair of rounds in one order, "
             "forwards then backwards; the next pair starts one method further on), then "
             f"{result['complete_rounds']} round(s) of the completing methods with pods that succeed at once. "
             "Ratios are of medians from the same run. The raw ratio compares with the raw storm of the same "
             "pinning mode (the Job, unpinned, with the affinity storm); a DaemonSet ratio below 1 is faster. "
             "The Job is Indexed (N completions, parallelism N) and unpinned: a nodeSelector on the pool, the "
             f"scheduler places its pods. Cluster: {result.get('cluster', 'not recorded')}.{_quota(result)}"
             f"{_code(result)}",
             "", *ratio_rows(table), "", "![time to all Running against N](img/perf-running-vs-nodes.png)", ""]
    cost = [r for r in table if r["method"].startswith("engine")]
    if cost:
        lines += ["### Cost per event", "", "CPU-seconds of the engine's process (the trigger, its informers and "
                  "its shared client; process time, all threads) per 1,000 pod events seen by the pod watch:", "",
                  "| nodes | method | CPU-s | pod events | CPU-s / 1,000 events |", "| --- | --- | --- | --- | --- |"]
        for r in cost:
            runs = [x for x in result["runs"] if x["nodes"] == r["nodes"] and x["method"] == r["method"]
                    and not x["complete"]]
            events = sorted(x["pod_events"] for x in runs)[len(runs) // 2] if runs else None
            lines.append(f"| {r['nodes']:,} | {r['method']} | {_fmt(r['cpu_seconds'])} | {_fmt(events)} "
                         f"| {_fmt(r['cpu_seconds_per_1000_pod_events'])} |")
        lines.append("")
    detect = [x["last_done_to_event_seconds"] for x in result["runs"] if x.get("last_done_to_event_seconds")]
    if detect:
        ordered = sorted(detect)
        lines += [f"Detection in the engine's process (last pod Succeeded, as the benchmark's watch saw it, to the "
                  f"trigger's TriggerEvent), in this comparison: p50 "
                  f"{_median_ms(ordered):.0f} ms over {len(ordered)} jobs (max "
                  f"{ordered[-1] * 1000:.0f} ms).", ""]
    return lines


def _finish(result: dict[str, Any]) -> list[str]:
    """Engine-only runs to all Succeeded: detection and cost per size and pinning mode."""
    lines = ["## Detection at fleet size", "",
             "`python -m benchmarks.run finish`: the engine's jobs only, pods that succeed at once, "
             f"{result['complete_rounds']} round(s) per size and method.{_code(result)} Detection is the time "
             "from the last pod "
             "Succeeded (as the benchmark's watch saw it) to the trigger's TriggerEvent, with the trigger iterated "
             f"on after its event as Airflow's triggerer does.{_quota(result)}", "",
             "| nodes | method | detection per run (ms) | to all Succeeded (s) | CPU-s / 1,000 pod events |",
             "| --- | --- | --- | --- | --- |"]
    detected: list[float] = []
    for size in sorted({r["nodes"] for r in result["runs"]}):
        for method in sorted({r["method"] for r in result["runs"]}):
            runs = [r for r in result["runs"] if r["nodes"] == size and r["method"] == method]
            found = [r["last_done_to_event_seconds"] for r in runs if r.get("last_done_to_event_seconds") is not None]
            detected += found
            per_event = sorted(r["cpu_seconds_per_1000_pod_events"] for r in runs
                               if r.get("cpu_seconds_per_1000_pod_events") is not None)
            succeeded = sorted(r["to_all_succeeded_seconds"] for r in runs if r.get("to_all_succeeded_seconds"))
            lines.append(f"| {size:,} | {method} | {', '.join(f'{x * 1000:.0f}' for x in found) or 'n/a'} "
                         f"| {', '.join(_fmt(x) for x in succeeded) or 'n/a'} "
                         f"| {', '.join(_fmt(x) for x in per_event) or 'n/a'} |")
    if detected:
        ordered = sorted(detected)
        lines += ["", f"Detection over all {len(ordered)} jobs: p50 {_median_ms(ordered):.0f} ms, "
                  f"max {ordered[-1] * 1000:.0f} ms."]
    return [*lines, ""]


def _median_ms(ordered: list[float]) -> float:
    middle = len(ordered) // 2
    value = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return value * 1000


def _triggerer(result: dict[str, Any]) -> list[str]:
    lines = ["## Idle jobs in one real triggerer", "",
             "One `airflow triggerer` process runs every job's JobReconcileTrigger (each job one node, its pod "
             "Running) plus a probe trigger that samples the loop with the provider's LoopLag. The jobs are tasks "
             "of DAGs of 50 tasks and defer 50 at a time, a second apart (Airflow's triggerer supervisor "
             "deserializes a trigger's whole DAG for every new trigger, so one 1,000-task DAG would make "
             "Airflow's own start-up quadratic). Each step is "
             f"measured over {result['steps'][0]['window_seconds']} s once every pod runs.{_plane(result)}"
             f"{_code(result)}", "",
             "| jobs | loop lag p50 / p99 / max (ms) | blocked warnings (window) | triggerer RSS (MiB) "
             "| trigger runner RSS (MiB) | provider API requests/s | seconds to all Running |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for s in result["steps"]:
        lines.append(f"| {s['jobs']:,} | {_fmt(s['loop_lag_p50_ms'])} / {_fmt(s['loop_lag_p99_ms'])} / "
                     f"{_fmt(s['loop_lag_max_ms'])} | {s['blocked_warnings_in_window']} "
                     f"| {_fmt(s['triggerer_rss_mib'])} | {_fmt(s.get('runner_rss_mib'))} "
                     f"| {_fmt(s['provider_requests_per_second'])} "
                     f"| {_fmt(s.get('seconds_to_all_running'))} |")
    lines += ["", f"RSS per idle job (between the smallest and the largest job count): "
              f"{_fmt(result.get('rss_kib_per_idle_job'), ' KiB')} for the whole triggerer (its supervisor and its "
              f"trigger runner), {_fmt(result.get('runner_rss_kib_per_idle_job'), ' KiB')} in the trigger runner "
              "process, where the triggers and the provider's code run. \"Triggerer's async thread was blocked\" "
              f"warnings over the whole run, job start-up included: {result['blocked_warnings_total']}.{_gc(result)}",
              *_routes(result["steps"]), "", "![loop lag against job count](img/perf-loop-lag-vs-jobs.png)", ""]
    floor = result.get("floor")
    if floor:
        lines += ["Comparator, run next in a fresh triggerer: the same counts of Airflow's own `DateTimeTrigger` "
                  "(sleeping until 2100), i.e. what Airflow itself spends per deferred task. Per idle trigger: "
                  f"{_fmt(floor.get('rss_kib_per_idle_job'), ' KiB')} for the whole triggerer, "
                  f"{_fmt(floor.get('runner_rss_kib_per_idle_job'), ' KiB')} in the trigger runner; loop lag p99 by "
                  f"count (ms): {floor.get('loop_lag_p99_ms_by_jobs')}; blocked warnings over the run: "
                  f"{floor.get('blocked_warnings_total')}.{_gc(floor)}", ""]
        ours, base = result.get("runner_rss_kib_per_idle_job"), floor.get("runner_rss_kib_per_idle_job")
        if ours is not None and base is not None:
            share = _fmt(round(ours - base, 1), " KiB")
            lines += [f"The provider's own share per idle job in the trigger runner: {share} ({_fmt(ours)} - "
                      f"{_fmt(base)}).", ""]
    return lines


def _plane(result: dict[str, Any]) -> str:
    nice = result.get("plane_nice")
    if not nice:
        return (" The control plane's priority was left as it was (`--plane-nice 0`, or a cluster the benchmark did "
                "not start).")
    return (f" The private control plane (etcd, API server, controller-manager, scheduler, kwok) ran at niceness "
            f"{nice} through the provider's run and the comparator's, its threads and its sessions' scheduler "
            "groups alike (the kernel shares the CPUs between sessions first), as the triggerer does not share its "
            "cores with them in production. At equal priority on 2 cores, the pod creates of arriving jobs load the "
            "plane, and the triggerer is descheduled long enough for short blocked warnings that no provider work "
            "explains (`--plane-nice 0` measures that).")


def _quota(result: dict[str, Any]) -> str:
    if "plane_cpus" not in result:
        return " The control plane shared the machine's cores with the clients (a run from before `--plane-cpus`)."
    cores = result["plane_cpus"]
    if not cores:
        return " The control plane shared the machine's cores with the clients (no CPU quota)."
    return (f" The private control plane ran under a CPU quota of {cores:g} cores (`--plane-cpus`, a cgroup), the "
            "same for every method; the clients ran on the rest, as in production they do not share the API "
            "server's cores, so a client's own CPU is not taken from the plane that makes pods Running.")


def _simple(title: str, result: dict[str, Any], keys: list[str], intro: str = "") -> list[str]:
    code = " ".join(x for x in (intro, _code(result).strip()) if x)
    lines = [f"## {title}", "", *([code, ""] if code else []), "| figure | value |", "| --- | --- |"]
    lines += [f"| {k} | {_fmt(result.get(k))} |" for k in keys if k in result]
    return [*lines, ""]


def render() -> str:
    results = {name: load(name) for name in ("compare", "finish", "triggerer", "tf_job", "broadcast_job",
                                             "detection")}
    lines = ["# Performance", "",
             "Every figure below comes from `make bench` (`python -m benchmarks.run all`) and is regenerated with "
             "it; the raw results, with the machine's description, are in `benchmarks/results/*.json`. They are "
             "measurements, not assertions: no test fails on a time; CI runs a 50-node smoke of the same harness.",
             "", f"Machine: {_machine(results)}.", ""]
    compare, triggerer = results["compare"], results["triggerer"]
    if compare:
        lines += _compare(compare)
        plots.running_vs_nodes(compare["table"])
    if results["finish"]:
        lines += _finish(results["finish"])
    if triggerer:
        lines += _triggerer(triggerer)
        plots.lag_vs_jobs(triggerer["steps"])
    if results["detection"]:
        lines += _simple("Detection in a real triggerer", results["detection"],
                         ["runs", "last_done_to_task_success_p50_seconds", "last_done_to_task_success_max_seconds",
                          "last_done_to_task_success_p50_seconds_finish_in_triggerer",
                          "last_done_to_task_success_max_seconds_finish_in_triggerer", "task_states"])
    if results["tf_job"]:
        lines += _simple("TFJob", results["tf_job"], ["chief", "ps", "workers", "chief_seconds", "condition",
                                                       "pods", "pods_succeeded", "services", "job_seconds",
                                                       "engine_peak_rss_mib", "engine_cpu_seconds", "api_requests"],
                         TF_INTRO)
    if results["broadcast_job"]:
        lines += _simple("BroadcastJob through `airflow dags test`", results["broadcast_job"],
                         ["nodes", "task_state", "dags_test_wall_seconds", "to_all_succeeded_seconds",
                          "last_done_to_dags_test_exit_seconds", "nodes_accounted"])
    lines += [client_limits_section(), design()]
    return "\n".join(lines).rstrip() + "\n"


def write(path: Path = DOC) -> Path:
    path.write_text(render())
    return path


def _routes(steps: list[dict[str, Any]]) -> list[str]:
    """What the provider's idle requests were, step by step (results from before the count by route had none)."""
    counted = [(s["jobs"], s["provider_requests_in_window"]) for s in steps if "provider_requests_in_window" in s]
    if not counted:
        return []
    parts = [f"{jobs:,} jobs: " + (", ".join(f"{route} {n}" for route, n in routes.items()) or "none")
             for jobs, routes in counted]
    return ["", "The provider's API requests in each step's window, by route: " + "; ".join(parts) + ". Each "
            "collection the shared watches hold (per namespace) is watched 240 s at a time and listed again every "
            "other time (the periodic relist, at least 5 minutes apart): a `WATCH` every 240 s and a `LIST` every "
            "480 s, however many jobs share it."]


def _gc(result: dict[str, Any]) -> str:
    """What the trigger runner's long garbage collections explain (results from before the probe had none)."""
    if "blocked_warnings_during_gc" not in result:
        return ""
    return (f" Garbage collections of 0.1 s or more in the trigger runner: {result['gc_pauses_over_0_1s']} (0.2 s or "
            f"more: {result['gc_pauses_over_0_2s']}; longest {result['gc_max_pause_seconds']} s); blocked warnings "
            "that one of them explains: "
            f"{result['blocked_warnings_during_gc']}.{_stalls(result)}")


def _stalls(result: dict[str, Any]) -> str:
    """What the loop's thread did through each blocked warning (results from before the probe kept stalls had none)."""
    if "blocked_warnings_running_on_loop" not in result:
        return ""
    return (f" Of the blocked warnings, {result['blocked_warnings_running_on_loop']} matched a stall of the loop "
            "through which its thread ran for at least half the time (code on the loop, the collector's included), "
            f"{result['blocked_warnings_descheduled']} a stall through which it ran for less (the thread waited: "
            "for a CPU, for the interpreter lock another of the process's threads held, or in a blocking call), and "
            f"{result['blocked_warnings_without_stall']} no stall the probe saw.{_causes(result)}")


CAUSE_TEXT = {"collector": "a garbage collection", "log_write": "a write of a log line to the socket that Airflow's "
              "supervisor drains (Airflow's own lines are written on the loop)",
              "other_threads": "other threads of the trigger runner holding the interpreter lock",
              "descheduled": "the trigger runner waiting for a CPU",
              "off_cpu": "the trigger runner off the CPUs without waiting for one (a blocking call, or the virtual CPU "
              "not running)", "provider": "the provider's code on the loop",
              "other": "other code on the loop", "unsampled": "nothing sampled"}


def _causes(result: dict[str, Any]) -> str:
    """Each blocked warning's cause from the stacks the probe sampled (results from before it sampled have none)."""
    if "blocked_warnings_by_cause" not in result:
        return ""
    counts = ", ".join(f"{CAUSE_TEXT[cause]} {n}" for cause, n in result["blocked_warnings_by_cause"].items() if n)
    frames = "; ".join(f"{d['seconds']} s, {d['cause']}, in `{d['frame']}`"
                       for d in result["blocked_warning_details"] if d["frame"])
    return (" By the loop thread's stacks, sampled every 20 ms while the loop was 50 ms late, and the CPU time the "
            f"loop's thread and the whole process got through each stall: {counts or 'none'}"
            + (f" (each warning, with the innermost frame sampled: {frames})." if frames else "."))
