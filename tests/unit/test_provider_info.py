"""Everything get_provider_info() lists imports, and the entry point returns it."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from airflow_broadcast import __version__
from airflow_broadcast.get_provider_info import get_provider_info


def test_entry_point_returns_the_provider_info() -> None:
    (ep,) = [e for e in entry_points(group="apache_airflow_provider") if e.value.startswith("airflow_broadcast")]
    info = ep.load()()
    assert info["package-name"] == "airflow-provider-broadcast"
    assert info["versions"][0] == __version__
    assert info["name"] and info["description"]


def test_every_listed_module_imports() -> None:
    info = get_provider_info()
    modules = [m for key in ("hooks", "triggers", "operators", "sensors")
               for entry in info.get(key, []) for m in entry["python-modules"]]
    assert modules, "the provider lists no modules"
    for module in modules:
        importlib.import_module(module)


def test_no_connection_type_of_our_own() -> None:
    assert "connection-types" not in get_provider_info(), "reuse the cncf `kubernetes` connection type"
