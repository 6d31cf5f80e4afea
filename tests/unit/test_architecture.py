"""The layering rule holds: pure layers stay pure, adapters stay on top."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_broadcast"
PURE = ("specs", "reconcilers")
IMPURE_CALLS = {("datetime", "now"), ("datetime", "utcnow"), ("time", "time"), ("os", "environ"),
                ("random", "random"), ("date", "today")}


def test_import_linter_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint)], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_pure_layers_read_no_clock_environment_or_randomness() -> None:
    offenders = []
    for layer in PURE:
        for path in (PACKAGE / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                        and (node.value.id, node.attr) in IMPURE_CALLS):
                    offenders.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    assert offenders == []


MODULE_LINE_LIMIT = 300


def test_no_module_passes_the_size_limit() -> None:
    """A module that grows past the limit gets split by responsibility, not trimmed."""
    too_big = [f"{p.relative_to(PACKAGE)} ({n})" for p in PACKAGE.rglob("*.py")
               if (n := len(p.read_text().splitlines())) > MODULE_LINE_LIMIT]
    assert too_big == []


def test_test_modules_have_unique_basenames() -> None:
    """The tests have no __init__.py, so pytest imports them by basename: two of a name break collection."""
    tests = PACKAGE.parent / "tests"
    names = [p.name for p in tests.rglob("*.py") if p.name not in ("__init__.py", "conftest.py")
             and "support" not in p.parts]
    assert sorted({n for n in names if names.count(n) > 1}) == []
