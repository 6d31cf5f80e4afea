"""docs/rbac/handoff.yaml on the real cluster: with it (and role.yaml) a user hands both kinds to their real
controllers; without its rule for a kind, `cluster` fails naming the permission and `auto` keeps the job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from handoff_support import Runner, broadcast_task, custom_resources, task_runner, tf_job
from kubernetes import client
from support.rbac_grants import Grants, granted_roles, rbac_document, rules_of

from airflow_broadcast.cluster.api_errors import Forbidden
from airflow_broadcast.operators.tf_job import TFJobOperator

pytestmark = [pytest.mark.cluster, pytest.mark.differential]


@pytest.fixture
def grants(kubeconfig: str, upstream_namespace: str) -> Iterator[Grants]:
    yield from granted_roles(kubeconfig, upstream_namespace)


@pytest.fixture
def as_restricted(cluster: Any, upstream: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runner]:
    """Tasks run inline as the user `restricted`, who has only what `grants` binds."""
    yield from task_runner(cluster.restricted_kubeconfig, monkeypatch)


def tf_task(namespace: str, name: str, controller: str) -> TFJobOperator:
    return TFJobOperator(task_id="tf", manifest=tf_job(name, "Succeeded"), namespace=namespace,
                         controller=controller, deferrable=False)


def test_the_handoff_role_grants_exactly_the_verbs_the_handoff_uses() -> None:
    verbs = ("get", "list", "watch", "create", "delete")
    assert rules_of(rbac_document("handoff.yaml", "Role")) == {
        *{("apps.kruise.io", "broadcastjobs", v) for v in verbs}, *{("kubeflow.org", "tfjobs", v) for v in verbs}}


def test_with_the_role_and_the_handoff_role_both_kinds_run_on_their_controllers(
        grants: Grants, as_restricted: Runner, api_client: client.ApiClient, node_factory: Any,
        upstream_namespace: str) -> None:
    ns = upstream_namespace
    grants.namespace_role()
    grants.grant("handoff.yaml", "Role")

    bcj, _, _ = as_restricted(broadcast_task(node_factory, ns, "rbac-bcj", "Succeeded", controller="cluster"))
    tf, _, _ = as_restricted(tf_task(ns, "rbac-tf", "cluster"))

    assert (bcj["phase"], bcj["succeeded"]) == ("completed", 2)
    assert tf["phase"] == "Succeeded"
    assert [r["metadata"]["name"] for r in custom_resources(api_client, "BroadcastJob", ns)] == ["rbac-bcj"]
    assert [r["metadata"]["name"] for r in custom_resources(api_client, "TFJob", ns)] == ["rbac-tf"]


@pytest.mark.parametrize(("resource", "kind"), [("broadcastjobs", "BroadcastJob"), ("tfjobs", "TFJob")])
def test_without_the_rule_of_a_kind_cluster_mode_fails_naming_it(
        grants: Grants, as_restricted: Runner, api_client: client.ApiClient, node_factory: Any,
        upstream_namespace: str, resource: str, kind: str) -> None:
    ns = upstream_namespace
    grants.namespace_role()
    grants.grant("handoff.yaml", "Role", without=resource)
    task = (broadcast_task(node_factory, ns, "rbac-no", "Succeeded", controller="cluster") if kind == "BroadcastJob"
            else tf_task(ns, "rbac-no", "cluster"))

    with pytest.raises(Forbidden, match=f'cannot create resource "{resource}"') as raised:
        as_restricted(task)

    assert "docs/rbac.md" in str(raised.value)
    assert custom_resources(api_client, kind, ns) == []


def test_without_the_handoff_role_auto_runs_the_job_in_airflow_and_says_why(
        grants: Grants, as_restricted: Runner, api_client: client.ApiClient, upstream_namespace: str) -> None:
    grants.namespace_role()

    result, _, log = as_restricted(tf_task(upstream_namespace, "rbac-auto", "auto"))

    assert "controller='airflow' runs TFJob" in log
    assert 'cannot list resource "tfjobs"' in log and "docs/rbac/handoff.yaml" in log
    assert result["phase"] == "Succeeded" and result["record"] == "tfjob-rbac-auto"
    assert custom_resources(api_client, "TFJob", upstream_namespace) == []
