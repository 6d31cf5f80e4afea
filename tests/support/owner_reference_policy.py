"""The check of the OwnerReferencesPermissionEnforcement admission plugin, as a ValidatingAdmissionPolicy.

The local control plane runs without that plugin (most clusters do; OpenShift does not), so
without help no test could show why the Role grants `update` on `configmaps/finalizers`.
This policy, bound to one namespace, makes the same decision the plugin makes for our
children: creating a pod or Service whose ownerReference to a ConfigMap sets
`blockOwnerDeletion` needs `update` on that ConfigMap's `finalizers` subresource, asked of
the real RBAC authorizer for the requesting user. Its message is the plugin's wording.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes import client, config

_ALLOWED = (
    "!has(object.metadata.ownerReferences) || object.metadata.ownerReferences.all(ref, "
    "ref.kind != 'ConfigMap' || !has(ref.blockOwnerDeletion) || !ref.blockOwnerDeletion || "
    "authorizer.group('').resource('configmaps').subresource('finalizers')"
    ".namespace(request.namespace).name(ref.name).check('update').allowed())"
)
_MESSAGE = (
    "\"cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: "
    "User \\\"\" + request.userInfo.username + \"\\\" cannot update resource \\\"configmaps/finalizers\\\" "
    "in API group \\\"\\\" in the namespace \\\"\" + request.namespace + \"\\\"\""
)


def _probe_pod(name: str) -> dict[str, object]:
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "probe", "uid": str(uuid.uuid4()),
             "controller": True, "blockOwnerDeletion": True}
    return {"metadata": {"name": name, "ownerReferences": [owner]},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}


@contextmanager
def owner_references_enforced(kubeconfig: str, restricted_kubeconfig: str, namespace: str) -> Iterator[None]:
    """Enforce the plugin's check in `namespace` while the block runs; `restricted` must lack the permission."""
    admin = client.AdmissionregistrationV1Api(config.new_client_from_config(config_file=kubeconfig))
    name = f"owner-references-{namespace}"
    admin.create_validating_admission_policy({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"],
                                                         "resources": ["pods", "services"]}]},
                 "validations": [{"expression": _ALLOWED, "messageExpression": _MESSAGE, "reason": "Forbidden"}]},
    })
    try:
        admin.create_validating_admission_policy_binding({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": {
                         "matchLabels": {"kubernetes.io/metadata.name": namespace}}}},
        })
        try:
            _wait_enforced(restricted_kubeconfig, namespace)
            yield
        finally:
            admin.delete_validating_admission_policy_binding(name)
    finally:
        admin.delete_validating_admission_policy(name)


def _wait_enforced(restricted_kubeconfig: str, namespace: str, timeout: float = 30.0) -> None:
    """Policies take effect within moments; probe with a dry-run create as `restricted` until one is denied."""
    core = client.CoreV1Api(config.new_client_from_config(config_file=restricted_kubeconfig))
    deadline = time.monotonic() + timeout
    while True:
        try:
            core.create_namespaced_pod(namespace, _probe_pod(f"probe-{uuid.uuid4().hex[:6]}"), dry_run="All")
        except client.ApiException as exc:
            if exc.status == 403 and "configmaps/finalizers" in str(exc.body):
                return
            raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"the owner-reference policy did not take effect in {namespace} in {timeout} s")
        time.sleep(0.2)
