"""PNG plots for docs/performance.md: time to all Running against N per method; loop lag against job count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

IMG = Path(__file__).resolve().parent.parent / "docs" / "img"


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def running_vs_nodes(table: list[dict[str, Any]], out: Path = IMG / "perf-running-vs-nodes.png") -> Path | None:
    plt = _pyplot()
    if plt is None or not table:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for method in dict.fromkeys(r["method"] for r in table):
        points = sorted((r["nodes"], r["to_all_running_seconds"]) for r in table
                        if r["method"] == method and r["to_all_running_seconds"] is not None)
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=method,
                    linestyle="--" if not method.startswith("engine") else "-")
    ax.set_xlabel("nodes (one pod each)")
    ax.set_ylabel("seconds, first pod ADDED to all Running (median)")
    ax.set_title("Time to all Running, per method")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, out)


def lag_vs_jobs(steps: list[dict[str, Any]], out: Path = IMG / "perf-loop-lag-vs-jobs.png") -> Path | None:
    plt = _pyplot()
    points = [s for s in steps if s.get("loop_lag_p99_ms") is not None]
    if plt is None or not points:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    jobs = [max(s["jobs"], 1) for s in points]
    for key, label in (("loop_lag_p50_ms", "p50"), ("loop_lag_p99_ms", "p99"), ("loop_lag_max_ms", "max")):
        ax.plot(jobs, [s[key] for s in points], marker="o", label=label)
    ax.axhline(50, color="grey", linestyle=":", label="50 ms")
    ax.set_xscale("log")
    ax.set_xlabel("idle BroadcastJobs in one triggerer (0 shown at 1)")
    ax.set_ylabel("event-loop lag, ms")
    ax.set_title("Triggerer loop lag against job count")
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(plt, fig, out)


def _save(plt: Any, fig: Any, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
