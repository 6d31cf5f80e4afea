"""The conformance generator and check on a small spec and junit report; the committed tables and grades parse.

The real gate is `make test`: it runs `python -m devcluster.conformance check` on its own junit
report, against the specifications, after the whole suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devcluster.conformance import DOCS, GRADES_FILE, check, generate, tables
from devcluster.conformance_sources import KINDS, ConformanceError, Item, level_of, load_grades, read_junit
from devcluster.conformance_tables import NOT_RUN, ROW, STATUSES

BCJ_SPEC = """# BroadcastJob
### A. Schema
A1 [U] Group `apps.kruise.io`.
A2 [U] Template is required.
### N. Events
E1 [U] `SuccessfulCreate` Normal.  E2 [X] `FailedCreate` Warning with a | pipe.
"""
TF_SPEC = """# TFJob
- A1 cleanPodPolicy unset → `None`.
- B3 (Δ) long names rejected.
"""
GRADES = """
[broadcastjob.E2]
grade = "not implemented"
note = "no such event"

[tfjob.A1]
grade = "deviation"
note = "the record is a ConfigMap"
"""


def case(classname: str, name: str, level: str | None, outcome: str = "") -> str:
    props = f'<properties><property name="level" value="{level}" /></properties>' if level else ""
    return f'<testcase classname="{classname}" name="{name}" time="0.1">{props}{outcome}</testcase>'


SKIPPED = '<skipped type="pytest.skip" message="no cluster" />'
XFAIL = '<skipped type="pytest.xfail" message="known bug" />'
FAILED = '<failure message="assert 1 == 2">boom</failure>'


def junit(path: Path, *cases: str) -> Path:
    path.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
                    + "".join(cases) + "</testsuite></testsuites>")
    return path


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "broadcastjob.md").write_text(BCJ_SPEC)
    (specs / "tfjob.md").write_text(TF_SPEC)
    (tmp_path / "grades.toml").write_text(GRADES)
    report = junit(tmp_path / "junit.xml",
                   case("tests.unit.specs.test_bcj", "test_A1_group", "unit"),
                   case("tests.unit.specs.test_bcj", "test_not_a_checklist_test", "unit"),
                   case("tests.integration.broadcast.test_bcj_int", "test_A2_E1_template[one]", "cluster"),
                   case("tests.integration.broadcast.test_bcj_int", "test_A2_E1_template[two]", "cluster", SKIPPED),
                   case("tests.unit.reconcilers.tf_job.test_tf", "test_A1_default", "unit", XFAIL),
                   case("tests.e2e.test_tf_job_e2e.TestNames", "test_B3_long_names", "airflow"))
    return {"specs": specs, "junit": report, "grades": tmp_path / "grades.toml", "docs": tmp_path / "docs"}


def statuses(world: dict[str, Path]) -> dict[tuple[str, str], str]:
    rows, _ = tables(world["specs"], world["junit"], world["grades"])
    return {(kind, r.item.id): r.status for kind, kind_rows in rows.items() for r in kind_rows}


def test_level_comes_from_the_fixtures_a_test_uses() -> None:
    assert level_of(["tmp_path"]) == "unit"
    assert level_of(["namespace", "core_api", "kubeconfig", "cluster"]) == "cluster"
    assert level_of(["airflow_env", "cluster", "namespace"]) == "airflow"


def test_this_run_records_the_level_of_each_test(request: pytest.FixtureRequest) -> None:
    assert ("level", "unit") in request.node.user_properties


def test_only_a_test_that_passed_makes_a_row_tested(world: dict[str, Path]) -> None:
    assert statuses(world) == {
        ("broadcastjob", "A1"): "tested",
        ("broadcastjob", "A2"): NOT_RUN,  # one parameter set was skipped
        ("broadcastjob", "E1"): NOT_RUN,
        ("broadcastjob", "E2"): "not implemented: no such event",
        ("tfjob", "A1"): "deviation: the record is a ConfigMap",  # its test xfailed: the grade still stands
        ("tfjob", "B3"): "tested",
    }


def test_node_ids_levels_and_outcomes_come_from_the_report(world: dict[str, Path]) -> None:
    found = {e.nodeid: e for e in read_junit(world["junit"])}
    assert sorted(found) == [
        "tests/e2e/test_tf_job_e2e.py::TestNames::test_B3_long_names",
        "tests/integration/broadcast/test_bcj_int.py::test_A2_E1_template",
        "tests/unit/reconcilers/tf_job/test_tf.py::test_A1_default",
        "tests/unit/specs/test_bcj.py::test_A1_group",
    ]
    assert found["tests/e2e/test_tf_job_e2e.py::TestNames::test_B3_long_names"].kind == "tfjob"
    one = "tests/unit/specs/test_bcj.py::test_A1_group"
    assert found[one].cell() == f"`{one}` (unit)"
    both = found["tests/integration/broadcast/test_bcj_int.py::test_A2_E1_template"]
    assert (both.kind, both.ids, both.passed) == ("broadcastjob", ("A2", "E1"), False)
    assert both.cell().endswith("(cluster; 1 passed, 1 skipped)")


def test_check_agrees_with_the_run_it_was_generated_from(world: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(world["specs"], world["junit"], world["docs"], world["grades"]) == 0
    out = capsys.readouterr().out
    assert "BroadcastJob: 4 items: 1 tested, 0 partial, 0 deviation, 1 not implemented, 2 " + NOT_RUN in out
    table = (world["docs"] / "broadcastjob.md").read_text()
    assert "| E2 | X | `FailedCreate` Warning with a \\| pipe. |  | not implemented: no such event |" in table
    assert "| X | 1 | 0 | 0 | 0 | 1 | 0 |" in table
    assert check(world["specs"], world["junit"], world["docs"], world["grades"]) == 1, "rows without a passing test"
    assert "broadcastjob A2: no test passed in this run and no reviewed grade says why" in capsys.readouterr().err


def passing_world(world: dict[str, Path]) -> dict[str, Path]:
    junit(world["junit"], case("tests.unit.test_bcj", "test_A1_A2_E1_ok", "unit"),
          case("tests.unit.test_tf", "test_B3_ok", "cluster"))
    assert generate(world["specs"], world["junit"], world["docs"], world["grades"]) == 0
    assert check(world["specs"], world["junit"], world["docs"], world["grades"]) == 0
    return world


@pytest.mark.parametrize(("outcome", "shown"), [(SKIPPED, "1 skipped"), (FAILED, "1 failed"), (XFAIL, "1 xfailed")])
def test_check_fails_when_a_tested_row_did_not_pass_in_this_run(world: dict[str, Path], outcome: str, shown: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    passing_world(world)
    junit(world["junit"], case("tests.unit.test_bcj", "test_A1_A2_E1_ok", "unit", outcome),
          case("tests.unit.test_tf", "test_B3_ok", "cluster"))
    assert check(world["specs"], world["junit"], world["docs"], world["grades"]) == 1
    err = capsys.readouterr().err
    assert f"broadcastjob A1: the table says 'tested', this run gives '{NOT_RUN}'" in err
    assert f"(unit; {shown})" in err


def test_check_fails_when_a_test_did_not_run(world: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    passing_world(world)
    junit(world["junit"], case("tests.unit.test_bcj", "test_A1_A2_E1_ok", "unit"))
    assert check(world["specs"], world["junit"], world["docs"], world["grades"]) == 1
    assert f"tfjob B3: the table says 'tested', this run gives '{NOT_RUN}'" in capsys.readouterr().err


def test_check_fails_when_an_item_of_the_spec_has_no_row(world: dict[str, Path],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    passing_world(world)
    with (world["specs"] / "tfjob.md").open("a") as spec:
        spec.write("- B4 missing `tfReplicaSpecs` → Required.\n")
    junit(world["junit"], case("tests.unit.test_bcj", "test_A1_A2_E1_ok", "unit"),
          case("tests.unit.test_tf", "test_B3_B4_ok", "cluster"))
    assert check(world["specs"], world["junit"], world["docs"], world["grades"]) == 1
    assert "tfjob B4: the specification has this item, the committed table has no row" in capsys.readouterr().err


def test_check_fails_loudly_without_the_specs_or_levels(world: dict[str, Path],
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from devcluster.conformance import main

    assert main(["check", "--junit", str(world["junit"]), "--spec-dir", str(world["specs"] / "nope")]) == 2
    assert "specification directory" in capsys.readouterr().err
    junit(world["junit"], case("tests.unit.test_bcj", "test_A1_ok", None))
    with pytest.raises(ConformanceError, match="no `level` property"):
        read_junit(world["junit"])


@pytest.mark.parametrize(("grades", "problem"), [
    ('[broadcastjob.A9]\ngrade = "deviation"\nnote = "x"', "A9 is not an item"),
    ('[broadcastjob.A1]\ngrade = "deviation"\nnote = ""', "needs a one-line note"),
    ('[broadcastjob.A1]\ngrade = "works"\nnote = "x"', "is not one of"),
    ('[broadcastjob.A1]\ngrade = "not implemented"\nnote = "x"', "graded not implemented, yet tests carry its ID"),
])
def test_a_grade_must_be_known_explained_and_consistent(world: dict[str, Path], grades: str, problem: str) -> None:
    world["grades"].write_text(grades)
    with pytest.raises(ConformanceError, match=problem):
        tables(world["specs"], world["junit"], world["grades"])


def test_the_committed_tables_parse_and_match_the_grades() -> None:
    rows = {kind: [m for m in map(ROW.match, (DOCS / f"{kind}.md").read_text().splitlines()) if m] for kind in KINDS}
    assert all(rows.values()), "a committed table has no rows"
    grades = load_grades(GRADES_FILE, {k: [Item(m["id"], m["tag"], m["item"]) for m in found]
                                       for k, found in rows.items()})
    for kind, found in rows.items():
        for row in found:
            status, where = row["status"].strip(), f"{kind} {row['id']}"
            assert status.split(":", 1)[0] in STATUSES, f"{where}: {status}"
            grade = grades[kind].get(row["id"])
            if grade is not None and status != NOT_RUN:
                assert status == f"{grade.grade}: {grade.note}", where
            if status == "tested":
                assert any(";" not in t for t in row["tests"].split("<br>")), f"{where}: no passing test listed"
