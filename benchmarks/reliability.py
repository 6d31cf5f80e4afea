"""docs/reliability.md, every figure measured anew: `make reliability` (`python -m benchmarks.reliability`).

Parts, each writing its figures to benchmarks/results/reliability/:
- ttl: the TTL janitor's end-to-end tests with a real triggerer, which record what they asserted on;
- crash: `python -m benchmarks.crash` (SIGKILLed triggerers, about 15 minutes);
- faults: `python -m benchmarks.faults` (the fault proxy, outages, an apiserver restart, about 8 minutes);
- hostile: `python -m benchmarks.hostile` (the bad-input corpus, no cluster).
`--parts` runs some of them; the page is then assembled from the stored figures of all four.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from devcluster.control_plane import REPO_ROOT
from tests.support.figures import FIGURES_ENV, read_figures

PARTS = ("ttl", "crash", "faults", "hostile")
RESULTS = REPO_ROOT / "benchmarks" / "results" / "reliability"
TEMPLATE = REPO_ROOT / "benchmarks" / "templates" / "reliability.md"
PAGE = REPO_ROOT / "docs" / "reliability.md"
TTL_FIGURES = RESULTS / "ttl.jsonl"


def _run(*argv: str, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(argv), file=sys.stderr, flush=True)
    subprocess.run([sys.executable, *argv], cwd=REPO_ROOT, env=env, check=True)


def run_ttl() -> None:
    """The janitor's e2e tests; they must pass, and each records the timings it asserted on."""
    with tempfile.TemporaryDirectory() as tmp:
        figures = Path(tmp) / "ttl.jsonl"
        env = {**os.environ, FIGURES_ENV: str(figures)}
        _run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/e2e/test_ttl_janitor_e2e.py", env=env)
        shutil.copyfile(figures, TTL_FIGURES)


def run_part(part: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    if part == "ttl":
        run_ttl()
    elif part == "hostile":
        with open(RESULTS / "hostile.md", "w") as out:
            subprocess.run([sys.executable, "-m", "benchmarks.hostile"], cwd=REPO_ROOT, stdout=out, check=True)
    else:
        _run("-m", f"benchmarks.{part}")


def render_ttl(rows: list[dict[str, Any]]) -> str:
    when = time.strftime("%Y-%m-%d", time.gmtime(TTL_FIGURES.stat().st_mtime)) if TTL_FIGURES.exists() else "?"
    out = [
        "## TTL without a task", "",
        f"Measured on {when} by the janitor's end-to-end tests (`tests/e2e/test_ttl_janitor_e2e.py`), which assert",
        "each row: real api-server, scheduler, dag-processor and triggerer processes run the TTL janitor",
        "([ttl.md](ttl.md)); each job runs through `airflow dags test`, and its record and children are polled",
        "every 0.1 s. *Expiry* is the record's `expires-at`: completion time plus `ttlSecondsAfterFinished`.",
        "The bound is expiry + 5 s (from the janitor's return, when it was killed).", "",
        "| case | kind | TTL (s) | task ended before expiry (s) | record gone after expiry (s) |"
        " record and children gone after expiry (s) |", "|---|---|---|---|---|---|",
    ]
    for row in rows:
        out.append(f"| {row['case']} | {row['kind']} | {row['ttl']} | {row['task_ended_before_expiry']:.1f} | "
                   f"{row['record_gone_after_expiry']:.1f} | {row['children_gone_after_expiry']:.1f} |")
    if not rows:
        out.append("| (no figures recorded: run `make reliability`) | | | | | |")
    out.append("")
    return "\n".join(out)


def assemble() -> str:
    def fragment(name: str) -> str:
        path = RESULTS / name
        return path.read_text() if path.exists() else f"(no figures: run `make reliability`, part {name})\n"

    page = TEMPLATE.read_text()
    for key, text in (("ttl", render_ttl(read_figures(str(TTL_FIGURES)))), ("crash", fragment("crash.md")),
                      ("faults", fragment("faults.md")), ("hostile", fragment("hostile.md"))):
        page = page.replace("{{" + key + "}}", text.rstrip("\n") + "\n")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reliability", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated, of " + ", ".join(PARTS))
    parser.add_argument("--render-only", action="store_true", help="assemble the page from the stored figures")
    args = parser.parse_args(argv)
    parts = [] if args.render_only else [p for p in args.parts.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    for part in parts:
        run_part(part)
    PAGE.write_text(assemble())
    print(f"wrote {PAGE.relative_to(REPO_ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
