"""Conformance tables: each checklist item of the upstream specifications, the tests that ran for it, a status.

    python -m devcluster.conformance generate --junit .reports/junit.xml --spec-dir ../shared/specs
    python -m devcluster.conformance check    --junit .reports/junit.xml --spec-dir ../shared/specs

The items come from the specifications (not from the committed tables); an item counts as
tested only when a test named after it passed in that junit report; partial, deviation and
not implemented come from the reviewed grades (docs/conformance/grades.toml). `generate`
writes docs/conformance/*.md; `check` (run by `make test`) fails when they disagree with the run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from devcluster.conformance_sources import (
    KINDS,
    ConformanceError,
    Item,
    load_grades,
    parse_checklist,
    read_junit,
)
from devcluster.conformance_tables import STATUSES, Row, build_rows, counts, disagreements, render, unknown_ids

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs" / "conformance"
GRADES_FILE = DOCS / "grades.toml"


def tables(spec_dir: Path, junit: Path, grades_file: Path = GRADES_FILE) -> tuple[dict[str, list[Row]], list[str]]:
    """The rows of every kind, and the tests that name IDs their checklist does not have."""
    if not spec_dir.is_dir():
        raise ConformanceError(f"the specification directory {spec_dir} does not exist; the checklist items come "
                               "from it (in CI: ../shared/specs next to the clone)")
    items: dict[str, list[Item]] = {kind: parse_checklist(spec_dir, kind) for kind in KINDS}
    grades = load_grades(grades_file, items)
    evidence = read_junit(junit)
    rows: dict[str, list[Row]] = {}
    strays: list[str] = []
    for kind in KINDS:
        mine = [e for e in evidence if e.kind == kind]
        rows[kind] = build_rows(items[kind], mine, grades[kind])
        strays += unknown_ids(items[kind], mine)
    return rows, strays


def summary(kind: str, rows: list[Row]) -> str:
    found = counts(rows)
    return f"{KINDS[kind][0]}: {len(rows)} items: " + ", ".join(f"{found[s]} {s}" for s in STATUSES)


def generate(spec_dir: Path, junit: Path, docs: Path = DOCS, grades_file: Path = GRADES_FILE) -> int:
    rows, strays = tables(spec_dir, junit, grades_file)
    docs.mkdir(parents=True, exist_ok=True)
    for kind, kind_rows in rows.items():
        (docs / f"{kind}.md").write_text(render(KINDS[kind][0], kind_rows))
        print(summary(kind, kind_rows))
    for stray in strays:
        print(f"warning: {stray}", file=sys.stderr)
    return 0


def check(spec_dir: Path, junit: Path, docs: Path = DOCS, grades_file: Path = GRADES_FILE) -> int:
    rows, strays = tables(spec_dir, junit, grades_file)
    problems = list(strays)
    for kind, kind_rows in rows.items():
        path = docs / f"{kind}.md"
        committed = path.read_text() if path.is_file() else ""
        problems += disagreements(kind, committed, kind_rows, render(KINDS[kind][0], kind_rows))
        print(summary(kind, kind_rows))
    if problems:
        print(f"docs/conformance disagrees with {junit} ({len(problems)} problem(s)):", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        print("Fix the tests, or regenerate from this full run with `make conformance` and review the diff "
              "(a status other than tested needs a grade in docs/conformance/grades.toml).", file=sys.stderr)
        return 1
    print("docs/conformance agrees with this run")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devcluster.conformance")
    parser.add_argument("command", choices=("generate", "check"))
    parser.add_argument("--junit", type=Path, default=REPO / ".reports" / "junit.xml")
    parser.add_argument("--spec-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    action = generate if args.command == "generate" else check
    try:
        return action(args.spec_dir, args.junit)
    except ConformanceError as exc:
        print(f"conformance {args.command} failed: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
