"""The `[airflow_broadcast]` section: declared to Airflow, shown by its CLI, and the engine's real defaults."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from airflow_broadcast.cluster.kube_client import KubeClient
from airflow_broadcast.cluster.reconcile_loop import RESYNC_SECONDS, THREAD_THRESHOLD
from airflow_broadcast.cluster.ttl_sweeper import SWEEP_EVERY_SECONDS, UNREAD_GRACE_SECONDS
from airflow_broadcast.config import DESCRIPTIONS, SECTION, Settings, read_settings
from airflow_broadcast.get_provider_info import get_provider_info

REPO = Path(__file__).resolve().parents[2]
OPTIONS = [field.name for field in dataclasses.fields(Settings)]


def test_provider_info_with_its_config_section_matches_airflows_schema() -> None:
    schema = json.loads(resources.files("airflow").joinpath("provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    assert list(info["config"][SECTION]["options"]) == OPTIONS


def test_the_declared_defaults_are_the_engines_own_defaults() -> None:
    """Code that runs without the section (the cluster layer, tests) behaves as a default configuration does."""
    client = inspect.signature(KubeClient).parameters
    defaults = Settings()
    assert (defaults.client_qps, defaults.client_burst) == (client["qps"].default, client["burst"].default)
    assert defaults.client_request_timeout == client["request_timeout"].default
    assert defaults.client_max_retries == client["max_retries"].default
    assert (defaults.resync_seconds, defaults.thread_threshold) == (RESYNC_SECONDS, THREAD_THRESHOLD)
    assert (defaults.ttl_sweep_seconds, defaults.unread_result_grace_seconds) == (SWEEP_EVERY_SECONDS,
                                                                                  UNREAD_GRACE_SECONDS)


def test_the_configuration_doc_lists_every_option_with_its_default() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    defaults = Settings()
    missing = [option for option in OPTIONS if f"| `{option}` | `{getattr(defaults, option)}` |" not in doc]
    assert missing == []


class _Conf:
    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def _get(self, section: str, key: str, fallback: Any = None) -> Any:
        assert section == SECTION
        return self.values.get(key, fallback)

    getboolean = getint = getfloat = _get


def test_unset_options_keep_their_defaults_and_negative_numbers_are_refused() -> None:
    assert read_settings(_Conf({})) == Settings()
    assert read_settings(_Conf({"client_qps": 0.0, "freeze_startup_heap": False})) == Settings(
        client_qps=0.0, freeze_startup_heap=False)
    with pytest.raises(ValueError, match=r"\[airflow_broadcast\] client_burst must not be negative"):
        read_settings(_Conf({"client_burst": -1}))


@pytest.mark.airflow
def test_airflow_config_list_shows_every_option_with_its_description_and_default(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(AIRFLOW_HOME=str(tmp_path), PYTHONPATH=str(REPO))  # this checkout's provider, a scratch home
    airflow = Path(sys.executable).parent / "airflow"
    result = subprocess.run([str(airflow), "config", "list", "--section", SECTION, "--include-descriptions",
                             "--show-values"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert f"[{SECTION}]" in lines
    defaults = Settings()
    for option in OPTIONS:
        line = lines.index(f"{option} = {getattr(defaults, option)}")
        comments = []
        while lines[line - 1].startswith("# "):
            line -= 1
            comments.insert(0, lines[line][2:])
        assert " ".join(comments) == " ".join(DESCRIPTIONS[option].split()), f"{option}'s description"
