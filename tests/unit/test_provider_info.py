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


def test_every_module_that_defines_a_trigger_is_listed() -> None:
    """Airflow looks a trigger's class up from these lists (the UI, `airflow providers triggers`)."""
    import pkgutil

    from airflow.triggers.base import BaseTrigger

    import airflow_broadcast.triggers as package

    listed = {m for entry in get_provider_info()["triggers"] for m in entry["python-modules"]}
    defining = set()
    for found in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{found.name}")
        if any(isinstance(v, type) and issubclass(v, BaseTrigger) and v.__module__ == module.__name__
               for v in vars(module).values()):
            defining.add(module.__name__)
    assert "airflow_broadcast.triggers.handoff" in defining
    assert defining <= listed, sorted(defining - listed)
