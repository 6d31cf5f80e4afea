"""Inputs of the conformance tables: the specs' checklists, a pytest junit report and the reviewed grades.

Nothing here guesses: a missing spec, a report without test levels or a grade without a
reason is a `ConformanceError`, so a table can never claim more than the run showed.
"""

from __future__ import annotations

import re
import tomllib
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

KINDS = {"broadcastjob": ("BroadcastJob", "broadcastjob.md"), "tfjob": ("TFJob", "tfjob.md")}
GRADES = ("partial", "deviation", "not implemented")
LEVEL_PROPERTY = "level"
ID_PREFIX = re.compile(r"^test_((?:[A-Z]\d+_)+)")
BCJ_ITEM = re.compile(r"([A-Z]\d+) \[(U|F|X)\] (.*?)(?=\s+[A-Z]\d+ \[[UFX]\] |$)")
TF_ITEM = re.compile(r"^- ([A-N]\d+) (.*)$")


class ConformanceError(Exception):
    """The inputs cannot give honest tables (missing spec, unreadable report, ungraded reason...)."""


@dataclass(frozen=True)
class Item:
    id: str
    tag: str
    text: str


@dataclass(frozen=True)
class Grade:
    grade: str
    note: str


@dataclass
class Evidence:
    """Every run of one test function (all its parameter sets) in one junit report."""

    nodeid: str
    kind: str
    ids: tuple[str, ...]
    levels: set[str] = field(default_factory=set)
    outcomes: Counter[str] = field(default_factory=Counter)

    @property
    def passed(self) -> bool:
        """Only a function whose every run passed counts: a skipped parameter set may be the precise one."""
        return bool(self.outcomes) and set(self.outcomes) == {"passed"}

    def cell(self) -> str:
        level = "/".join(sorted(self.levels))
        if self.passed:
            return f"`{self.nodeid}` ({level})"
        runs = ", ".join(f"{n} {outcome}" for outcome, n in sorted(self.outcomes.items()))
        return f"`{self.nodeid}` ({level}; {runs})"


def level_of(fixturenames: Iterable[str]) -> str:
    """What a test really uses, from the fixtures it requests (directly or through other fixtures).

    airflow: a real Airflow (the `airflow` CLI or `airflow dags test`) on the real cluster;
    cluster: the real local control plane; unit: neither.
    """
    used = set(fixturenames)
    if "airflow_env" in used:
        return "airflow"
    if "cluster" in used:
        return "cluster"
    return "unit"


def parse_checklist(spec_dir: Path, kind: str) -> list[Item]:
    spec = spec_dir / KINDS[kind][1]
    if not spec.is_file():
        raise ConformanceError(f"the {KINDS[kind][0]} specification {spec} does not exist (give --spec-dir)")
    items: list[Item] = []
    for line in spec.read_text().splitlines():
        if kind == "broadcastjob":
            if BCJ_ITEM.match(line.strip()):
                items.extend(Item(m[1], m[2], m[3].strip()) for m in BCJ_ITEM.finditer(line.strip()))
            continue
        match = TF_ITEM.match(line)
        if match:
            text = match[2].strip()
            items.append(Item(match[1], "Δ" if "(Δ)" in text else "U", text))
    seen = Counter(i.id for i in items)
    if not items or max(seen.values()) > 1:
        twice = sorted(i for i, n in seen.items() if n > 1)
        raise ConformanceError(f"{spec}: no checklist items found" if not items else f"{spec}: IDs twice: {twice}")
    return items


def kind_of(module: str) -> str:
    """Which specification a test module belongs to: TFJob modules say so in their path."""
    parts = module.split("/")
    stem = parts[-1].removesuffix(".py")
    return "tfjob" if {"tfjob", "tf_job"} & set(parts) or "tf" in stem.split("_") else "broadcastjob"


def _nodeid(classname: str, name: str) -> tuple[str, str]:
    """(module path, function node id) from junit's dotted classname, e.g. `tests.unit.test_x.TestY`."""
    parts = classname.split(".")
    split = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts))
    module = "/".join(parts[:split]) + ".py"
    return module, "::".join([module, *parts[split:], name.split("[", 1)[0]])


def _outcome(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed" if child.tag == "failure" else "error"
        if child.tag == "skipped":
            return "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def read_junit(path: Path) -> list[Evidence]:
    """The checklist tests of a junit report, one `Evidence` per test function."""
    if not path.is_file():
        raise ConformanceError(f"the junit report {path} does not exist (run `make test` first)")
    try:
        cases = list(ET.parse(path).getroot().iter("testcase"))
    except ET.ParseError as exc:
        raise ConformanceError(f"{path} is not a junit report: {exc}") from exc
    if not cases:
        raise ConformanceError(f"{path} holds no test results")
    found: dict[str, Evidence] = {}
    for case in cases:
        name, classname = case.get("name", ""), case.get("classname", "")
        match = ID_PREFIX.match(name)
        if not match or not classname:
            continue
        module, nodeid = _nodeid(classname, name)
        levels = [p.get("value", "") for p in case.iter("property") if p.get("name") == LEVEL_PROPERTY]
        if not levels:
            raise ConformanceError(f"{path}: {nodeid} has no `{LEVEL_PROPERTY}` property; produce the report with "
                                   "this repository's tests/conftest.py (pytest --junitxml=...)")
        ids = tuple(i for i in match[1].split("_") if i)
        evidence = found.setdefault(nodeid, Evidence(nodeid, kind_of(module), ids))
        evidence.levels.update(levels)
        evidence.outcomes[_outcome(case)] += 1
    return sorted(found.values(), key=lambda e: e.nodeid)


def load_grades(path: Path, items: dict[str, list[Item]]) -> dict[str, dict[str, Grade]]:
    """The reviewed grades: every row that is not plainly tested, with the reason a reader needs."""
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConformanceError(f"cannot read the grades {path}: {exc}") from exc
    grades: dict[str, dict[str, Grade]] = {kind: {} for kind in KINDS}
    problems: list[str] = [f"{path}: unknown kind [{k}]" for k in raw if k not in KINDS]
    for kind, entries in raw.items():
        known = {i.id for i in items.get(kind, [])}
        for item_id, raw_entry in (entries if kind in KINDS else {}).items():
            entry = raw_entry if isinstance(raw_entry, dict) else {}
            grade, note = str(entry.get("grade", "")), " ".join(str(entry.get("note", "")).split())
            if item_id not in known:
                problems.append(f"{path}: {kind} {item_id} is not an item of the specification")
            elif grade not in GRADES:
                problems.append(f"{path}: {kind} {item_id}: grade {grade!r} is not one of {', '.join(GRADES)}")
            elif not note or "|" in note:
                problems.append(f"{path}: {kind} {item_id}: a {grade} grade needs a one-line note without '|'")
            else:
                grades[kind][item_id] = Grade(grade, note)
    if problems:
        raise ConformanceError("\n".join(problems))
    return grades
