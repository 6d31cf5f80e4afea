"""The documented RBAC (docs/rbac) applied on the real cluster for the user `restricted`, whole or minus one rule.

The admin identity creates each Role/ClusterRole under a unique name and binds it to
`restricted`; cluster-scoped objects are deleted at cleanup (namespaced ones go with the
test's namespace).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

REPO = Path(__file__).resolve().parents[2]
RBAC_DIR = REPO / "docs" / "rbac"
USER = "restricted"
GROUP = "airflow-broadcast-testers"
RBAC_GROUP = "rbac.authorization.k8s.io"
# (file, kind) of every role the provider ships
ROLES = (("role.yaml", "Role"), ("clusterrole.yaml", "ClusterRole"),
         ("tfjob-extras.yaml", "Role"), ("tfjob-extras.yaml", "ClusterRole"))


def rbac_document(file: str, kind: str) -> dict[str, Any]:
    """The one document of `kind` in a docs/rbac file."""
    docs = [d for d in yaml.safe_load_all((RBAC_DIR / file).read_text()) if d and d.get("kind") == kind]
    assert len(docs) == 1, f"{file} must hold exactly one {kind}"
    return docs[0]


def rules_of(document: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(group, resource, verb) for rule in document["rules"] for group in rule.get("apiGroups", [])
            for resource in rule["resources"] for verb in rule["verbs"]}


def rule_resources(file: str, kind: str) -> list[str]:
    """The resources of each rule of the role, one entry per rule (the shipped rules name one resource each)."""
    rules = rbac_document(file, kind)["rules"]
    assert all(len(rule["resources"]) == 1 for rule in rules), f"{file} {kind}: one resource per rule"
    return [rule["resources"][0] for rule in rules]


class Grants:
    """Applies the documented roles for user `restricted`."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        api_client = config.new_client_from_config(config_file=kubeconfig)
        self.rbac = client.RbacAuthorizationV1Api(api_client)
        self.authz = client.AuthorizationV1Api(api_client)
        self.namespace = namespace
        self.suffix = f"{namespace}-{uuid.uuid4().hex[:6]}"
        self.cluster_roles: list[str] = []
        self.cluster_bindings: list[str] = []

    def subject(self) -> list[dict[str, str]]:
        return [{"kind": "User", "name": USER, "apiGroup": RBAC_GROUP}]

    def namespace_role(self, file: str = "role.yaml") -> None:
        self.grant(file, "Role")

    def cluster_role(self) -> None:
        self.grant("clusterrole.yaml", "ClusterRole")

    def grant(self, file: str, kind: str, *, without: str | None = None, only: str | None = None) -> None:
        """Bind the documented role of `kind` in `file`, minus the rule for resource `without` (or just
        the rule for `only`, under a name of its own)."""
        role = rbac_document(file, kind)
        rules = [rule for rule in role["rules"] if without not in rule["resources"]
                 and (only is None or only in rule["resources"])]
        part = f"-{only.replace('/', '-')}" if only else ""
        name = f"{role['metadata']['name']}{part}-{self.suffix}"
        namespaced = kind == "Role"
        metadata = {**role["metadata"], "name": name, **({"namespace": self.namespace} if namespaced else {})}
        binding = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": f"{kind}Binding",
                   "metadata": {k: v for k, v in metadata.items() if k in ("name", "namespace")},
                   "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": name}, "subjects": self.subject()}
        if namespaced:
            self.rbac.create_namespaced_role(self.namespace, {**role, "metadata": metadata, "rules": rules})
            self.rbac.create_namespaced_role_binding(self.namespace, binding)
        else:
            self.rbac.create_cluster_role({**role, "metadata": metadata, "rules": rules})
            self.cluster_roles.append(name)
            self.rbac.create_cluster_role_binding(binding)
            self.cluster_bindings.append(name)
        if rules:
            first = rules[0]
            self.wait_allowed(first["verbs"][0], first["resources"][0], self.namespace if namespaced else None,
                              group=first["apiGroups"][0])

    def grant_all(self, *, without: tuple[str, str, str] | None = None) -> None:
        """Every shipped role; `without` = (file, kind, resource) leaves out that one rule."""
        for file, kind in ROLES:
            skip = without[2] if without is not None and without[:2] == (file, kind) else None
            self.grant(file, kind, without=skip)

    def allowed(self, verb: str, resource: str, namespace: str | None, group: str = "") -> bool:
        resource, _, subresource = resource.partition("/")
        attributes: dict[str, str] = {"verb": verb, "resource": resource, "group": group}
        if subresource:
            attributes["subresource"] = subresource
        if namespace:
            attributes["namespace"] = namespace
        review = self.authz.create_subject_access_review({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": USER, "groups": [GROUP, "system:authenticated"], "resourceAttributes": attributes},
        })
        return bool(review.status.allowed)

    def wait_allowed(self, verb: str, resource: str, namespace: str | None, timeout: float = 30.0,
                     group: str = "") -> None:
        """The authorizer's cache follows new bindings within moments; wait for it, bounded."""
        deadline = time.monotonic() + timeout
        while not self.allowed(verb, resource, namespace, group):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{USER} still may not {verb} {resource} after {timeout} s")
            time.sleep(0.1)

    def cleanup(self) -> None:
        for name in self.cluster_bindings:
            self.rbac.delete_cluster_role_binding(name)
        for name in self.cluster_roles:
            self.rbac.delete_cluster_role(name)


def granted_roles(kubeconfig: str, namespace: str) -> Iterator[Grants]:
    """For a fixture: a Grants for the test's namespace, whose cluster-scoped objects are deleted afterwards."""
    grants = Grants(kubeconfig, namespace)
    try:
        yield grants
    finally:
        grants.cleanup()


def pod_template(pool: str, container: str, result: str = "Succeeded") -> dict[str, Any]:
    return {"metadata": {"annotations": {"sim.airflow-broadcast.io/result": result}},
            "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": "Never",
                     "containers": [{"name": container, "image": "busybox:1.36"}]}}


def broadcast_job(name: str, pool: str, result: str = "Succeeded") -> dict[str, Any]:
    return {"apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": pod_template(pool, "check", result),
                     "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600}}}


def tf_job(name: str, pool: str) -> dict[str, Any]:
    def replica() -> dict[str, Any]:
        return {"replicas": 1, "restartPolicy": "Never", "template": pod_template(pool, "tensorflow")}

    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"},
                     "tfReplicaSpecs": {"Chief": replica(), "Worker": replica()}}}

