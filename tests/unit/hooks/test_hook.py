"""The hook reads the cncf `kubernetes` connection's documented extras and builds one configured client.

Connections come from `AIRFLOW_CONN_*` variables and kubeconfigs are real files, loaded by kubernetes_asyncio;
the exec plugin is a real process, so the token refresh is exercised end to end (no cluster is contacted).
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_broadcast.cluster import shared_clients
from airflow_broadcast.config import Settings
from airflow_broadcast.hooks import kubernetes as hook_module
from airflow_broadcast.hooks.kubernetes import BroadcastKubernetesHook, connection_namespace
from airflow_broadcast.version_compat import AirflowNotFoundException

EXEC_PLUGIN = """
import json, os, pathlib
counter = pathlib.Path(os.environ["TOKEN_COUNTER"])
n = int(counter.read_text() or 0) + 1 if counter.exists() else 1
counter.write_text(str(n))
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": f"token-{n}"}}))
"""


def kubeconfig(user: dict[str, Any], contexts: tuple[str, ...] = ("a",), current: str = "a") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": current,
        "clusters": [{"name": c, "cluster": {"server": f"https://{c}.example:6443"}} for c in contexts],
        "contexts": [{"name": c, "context": {"cluster": c, "user": "u"}} for c in contexts],
        "users": [{"name": "u", "user": user}],
    }


def exec_user(counter: Path) -> dict[str, Any]:
    """A kubeconfig user whose token comes from EXEC_PLUGIN: token-1, token-2, ... one per run."""
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                     "args": ["-c", EXEC_PLUGIN], "env": [{"name": "TOKEN_COUNTER", "value": str(counter)}]}}


def connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **extra: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "kubernetes", "extra": extra}))


def write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def test_a_kubeconfig_file_and_the_namespace_configure_the_client(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    connection(monkeypatch, "k8s", kube_config_path=write(tmp_path, kubeconfig({"token": "static"})), namespace="ops")
    hook = BroadcastKubernetesHook("k8s")
    api = await hook._new_api_client()
    try:
        assert api.configuration.host == "https://a.example:6443"
        assert await api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer static"
        assert api.configuration.verify_ssl is True
    finally:
        await api.close()
    assert await hook.default_namespace() == "ops"
    assert connection_namespace("k8s") == "ops"


async def test_inline_yaml_legacy_prefixed_extras_and_the_tasks_context_win(monkeypatch: pytest.MonkeyPatch) -> None:
    text = yaml.safe_dump(kubeconfig({"token": "t"}, contexts=("a", "b")))
    connection(monkeypatch, "legacy", extra__kubernetes__kube_config=text, extra__kubernetes__cluster_context="a",
               extra__kubernetes__namespace="old-style", disable_verify_ssl=True)
    for context, host in ((None, "https://a.example:6443"), ("b", "https://b.example:6443")):
        api = await BroadcastKubernetesHook("legacy", cluster_context=context)._new_api_client()
        try:
            assert api.configuration.host == host
            assert api.configuration.verify_ssl is False
        finally:
            await api.close()
    assert connection_namespace("legacy") == "old-style"


async def test_more_than_one_credential_source_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    connection(monkeypatch, "both", in_cluster="true", kube_config_path=write(tmp_path, kubeconfig({"token": "t"})))
    with pytest.raises(ValueError, match="mutually exclusive"):
        await BroadcastKubernetesHook("both")._new_api_client()


async def test_a_broken_inline_kubeconfig_names_the_place_and_never_quotes_its_text(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """YAML's own message quotes the broken line, which may hold a token; the message goes to the task log."""
    text = "users:\n- name: u\n  user:\n    token: SECRET-TOKEN-abc: [\n"
    connection(monkeypatch, "broken", kube_config=text)
    with pytest.raises(ValueError, match=r"not valid YAML at line 4, column \d+") as raised:
        await BroadcastKubernetesHook("broken")._new_api_client()
    assert "SECRET-TOKEN" not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


async def test_a_missing_default_connection_is_empty_any_other_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_KUBERNETES_DEFAULT", raising=False)
    assert await BroadcastKubernetesHook().connection_extras() == {}
    assert connection_namespace("kubernetes_default") == "default"
    with pytest.raises(AirflowNotFoundException):
        await BroadcastKubernetesHook("no_such_connection").connection_extras()
    with pytest.raises(AirflowNotFoundException):
        connection_namespace("no_such_connection")


async def test_exec_plugin_tokens_refresh_at_most_once_per_interval(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "runs"
    connection(monkeypatch, "eks", kube_config_path=write(tmp_path, kubeconfig(exec_user(counter))),
               disable_verify_ssl="true")
    clock = [1000.0]
    monkeypatch.setattr(hook_module.time, "monotonic", lambda: clock[0])
    api = await BroadcastKubernetesHook("eks", settings=Settings(credential_refresh_seconds=60))._new_api_client()
    cfg = api.configuration
    try:
        assert await cfg.get_api_key_with_prefix("BearerToken") == "Bearer token-1"
        clock[0] += 59
        assert await cfg.get_api_key_with_prefix("BearerToken") == "Bearer token-1"
        assert counter.read_text() == "1", "no plugin run within the interval"
        clock[0] += 2
        assert await cfg.get_api_key_with_prefix("BearerToken") == "Bearer token-2"
        assert cfg.verify_ssl is False, "a reload keeps the connection's TLS override"
    finally:
        await api.close()


async def test_a_failing_reload_keeps_the_current_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = tmp_path / "runs"
    connection(monkeypatch, "flaky", kube_config_path=write(tmp_path, kubeconfig(exec_user(counter))))
    clock = [1000.0]
    monkeypatch.setattr(hook_module.time, "monotonic", lambda: clock[0])
    api = await BroadcastKubernetesHook("flaky", settings=Settings(credential_refresh_seconds=1))._new_api_client()
    try:
        counter.write_text("not a number")  # the plugin now exits non-zero
        clock[0] += 5
        assert await api.configuration.get_api_key_with_prefix("BearerToken") == "Bearer token-1"
    finally:
        await api.close()


async def test_the_client_takes_the_provider_sections_settings(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for option, value in {"CLIENT_QPS": "7.5", "CLIENT_BURST": "9", "CLIENT_REQUEST_TIMEOUT": "12",
                          "CLIENT_MAX_RETRIES": "2", "FREEZE_STARTUP_HEAP": "False"}.items():
        monkeypatch.setenv(f"AIRFLOW__AIRFLOW_BROADCAST__{option}", value)
    connection(monkeypatch, "tuned", kube_config_path=write(tmp_path, kubeconfig({"token": "t"})))
    monkeypatch.setattr(shared_clients, "_frozen", False)
    gc.unfreeze()
    client = await BroadcastKubernetesHook("tuned").kube_client()
    try:
        assert (client.limiter.qps, client.limiter.burst) == (7.5, 9)
        assert (client.request_timeout, client.max_retries) == (12.0, 2)
        assert gc.get_freeze_count() == 0
    finally:
        await shared_clients.close_clients_on_this_loop()
