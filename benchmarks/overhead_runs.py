"""Goal 1 over every recorded `overhead` run: the engine against the raw `nodeName` storm, two ways.

The ratio of medians compares each method's median round. The paired ratio divides each round's engine time by
the raw storm's time in the same round (the methods of a round run one after the other, within a minute or two)
before taking the median, so that a drift of the plane between rounds falls out of it. Both are listed for every
run kept in `benchmarks/results/overhead*.json`, so that one run's luck is never the whole story.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS

RAW, ENGINE, SHAPED = "raw-nodename", "engine-nodename-lifted", "raw-nodename-shaped"
GOAL = 1.1  # issue 12, goal 1: the engine at no more than 1.1 times the raw storm


def _rounds(result: dict[str, Any], nodes: int) -> list[dict[str, float]]:
    """Each round's time to all Running, by method, for the rounds in which the raw storm and the engine got there."""
    by_round: dict[int, dict[str, float]] = {}
    for run in result["runs"]:
        if run["nodes"] == nodes and run.get("reached") and run.get("to_all_running_seconds") is not None:
            by_round.setdefault(run["round"], {})[run["method"]] = run["to_all_running_seconds"]
    return [times for _, times in sorted(by_round.items()) if RAW in times and ENGINE in times]


def _ratios(rounds: list[dict[str, float]], method: str) -> tuple[float, float, list[float]] | None:
    """(ratio of medians, median of per-round ratios, per-round ratios) of `method` against the raw storm."""
    pairs = [(r[method], r[RAW]) for r in rounds if method in r]
    if not pairs:
        return None
    per_round = [m / raw for m, raw in pairs]
    of_medians = statistics.median(m for m, _ in pairs) / statistics.median(raw for _, raw in pairs)
    return of_medians, statistics.median(per_round), per_round


def run_rows(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (results file, node count) with both ratios of the engine, and of the shaped storm if run."""
    rows = []
    for name, result in results.items():
        machine = result.get("machine") or {}
        for nodes in sorted({run["nodes"] for run in result["runs"]}):
            rounds = _rounds(result, nodes)
            engine = _ratios(rounds, ENGINE)
            if engine is None:
                continue
            rows.append({"file": name, "commit": machine.get("commit"), "cpu": machine.get("cpu"),
                         "plane_cpus": result.get("plane_cpus"), "nodes": nodes, "rounds": len(rounds),
                         "engine": engine, "shaped": _ratios(rounds, SHAPED),
                         "engine_over_shaped": [r[ENGINE] / r[SHAPED] for r in rounds if SHAPED in r]})
    return sorted(rows, key=lambda r: (r["nodes"], r["file"]))


def load_runs(folder: Path = RESULTS) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted(folder.glob("overhead*.json"))}


def _cell(ratios: tuple[float, float, list[float]] | None) -> tuple[str, str]:
    if ratios is None:
        return "", ""
    of_medians, paired, per_round = ratios
    return f"{of_medians:.2f}", f"{paired:.2f} ({min(per_round):.2f} to {max(per_round):.2f})"


def _within(rows: list[dict[str, Any]], which: int) -> str:
    """The runs whose engine ratio (0: of medians, 1: paired) is at most GOAL at every size, or "none"."""
    runs: dict[str, bool] = {}
    for r in rows:
        runs[r["file"]] = runs.get(r["file"], True) and round(r["engine"][which], 2) <= GOAL
    met = [f"`{name}`" for name, ok in runs.items() if ok]
    return ", ".join(met) if met else "none"


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table of every run, and the pooled paired ratio of the runs with the plane under a quota."""
    rows = run_rows(results)
    lines = ["| nodes | run (`benchmarks/results/`) | code | CPU | plane quota (cores) | rounds "
             "| engine / raw, ratio of medians | engine / raw, paired: median (range) "
             "| shaped / raw, ratio of medians | shaped / raw, paired: median (range) |",
             "|" + " --- |" * 10]
    for r in rows:
        engine, shaped = _cell(r["engine"]), _cell(r["shaped"])
        quota = r["plane_cpus"] if r["plane_cpus"] else "none (shared cores)"
        lines.append(f"| {r['nodes']:,} | `{r['file']}` | {r['commit']} | {r['cpu']} | {quota} | {r['rounds']} "
                     f"| {engine[0]} | {engine[1]} | {shaped[0]} | {shaped[1]} |")
    pooled, against_shaped = [], []
    for nodes in sorted({r["nodes"] for r in rows}):
        quota_rows = [r for r in rows if r["nodes"] == nodes and r["plane_cpus"]]
        ratios = [x for r in quota_rows for x in r["engine"][2]]
        if ratios:
            pooled.append(f"{statistics.median(ratios):.2f} at {nodes:,} nodes ({len(ratios)} rounds, "
                          f"{sum(x <= GOAL for x in ratios)} of them at {GOAL} or less)")
        shaped = [x for r in quota_rows for x in r["engine_over_shaped"]]
        if shaped:
            against_shaped.append(f"{statistics.median(shaped):.2f} at {nodes:,} nodes ({len(shaped)} rounds)")
    summary = [f"Runs with the engine at {GOAL} or less of the raw storm at every size they ran: by the ratio of "
               f"medians, {_within(rows, 0)}; by the paired ratio, {_within(rows, 1)}."]
    if pooled:
        summary.append("Pooled over every run with the plane under its quota, the median paired ratio of the engine "
                       "to the raw storm is " + " and ".join(pooled) + ".")
    if against_shaped:
        summary.append("In the runs that also ran the shaped storm, the engine's time over the shaped storm's in "
                       "the same round has a median of " + " and ".join(against_shaped) + ".")
    return "\n".join([*lines, "", " ".join(summary)]).rstrip()
