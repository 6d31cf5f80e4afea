"""What the real controllers need from the API before and while they start: CRDs, namespaces, webhook
configurations they fill in, and training-operator's serving certificate copied where it reads it."""

from __future__ import annotations

import base64
import copy
import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from devcluster.crds import _established

KRUISE_NAMESPACE = "kruise-system"
KRUISE_WEBHOOK_PREFIX = "kruise-"
TRAINING_NAMESPACE = "kubeflow"
TRAINING_SECRET = "training-operator-webhook-cert"
TRAINING_WEBHOOK = "validator.training-operator.kubeflow.org"
# training-operator v1.9.0 hard-codes its cert directory (pkg/cert/cert.go); one per machine at a time.
TRAINING_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


def _api(kubeconfig: str) -> client.ApiClient:
    return config.new_client_from_config(config_file=kubeconfig)


def _create(create: Any, body: Any) -> None:
    """Create, keeping an object that already exists."""
    try:
        create(body)
    except ApiException as exc:
        if exc.status != 409:
            raise


def install_crd_files(kubeconfig: str, paths: list[Path], timeout: float = 60.0) -> list[str]:
    """Create the CRDs in `paths` (existing ones are kept) and wait until each is Established."""
    api = client.ApiextensionsV1Api(_api(kubeconfig))
    names = []
    for path in paths:
        for body in yaml.safe_load_all(path.read_text()):
            if body:
                names.append(body["metadata"]["name"])
                _create(api.create_custom_resource_definition, body)
    deadline = time.monotonic() + timeout
    pending = list(names)
    while pending := [name for name in pending if not _established(api, name)]:
        if time.monotonic() > deadline:
            raise TimeoutError(f"CRDs {', '.join(pending)} were not Established within {timeout} s")
        time.sleep(0.2)
    return names


def ensure_namespace(kubeconfig: str, name: str) -> None:
    _create(client.CoreV1Api(_api(kubeconfig)).create_namespace, {"metadata": {"name": name}})


def kruise_webhook_configurations(manifests: Path) -> list[dict[str, Any]]:
    """Kruise's own webhook configurations, named as its kustomization names them (prefix `kruise-`).

    They keep the service form: Kruise rewrites each to `https://$WEBHOOK_HOST:$WEBHOOK_PORT/<path>`
    and fills the caBundle with the certificate it makes for that host.
    """
    docs = []
    for body in yaml.safe_load_all(manifests.read_text()):
        if not body:
            continue
        doc = copy.deepcopy(body)
        doc["metadata"]["name"] = KRUISE_WEBHOOK_PREFIX + doc["metadata"]["name"]
        for hook in doc.get("webhooks", []):
            hook["clientConfig"]["service"].update({"name": "kruise-webhook-service", "namespace": KRUISE_NAMESPACE})
        docs.append(doc)
    return docs


def install_kruise_webhooks(kubeconfig: str, manifests: Path) -> None:
    api = client.AdmissionregistrationV1Api(_api(kubeconfig))
    for doc in kruise_webhook_configurations(manifests):
        create = (api.create_mutating_webhook_configuration if doc["kind"] == "MutatingWebhookConfiguration"
                  else api.create_validating_webhook_configuration)
        _create(create, doc)


def prepare_training_operator(kubeconfig: str) -> None:
    """The namespace, the empty Secret its cert rotator fills, and the webhook configuration it patches."""
    ensure_namespace(kubeconfig, TRAINING_NAMESPACE)
    core = client.CoreV1Api(_api(kubeconfig))
    _create(lambda b: core.create_namespaced_secret(TRAINING_NAMESPACE, b), {"metadata": {"name": TRAINING_SECRET}})
    admission = client.AdmissionregistrationV1Api(_api(kubeconfig))
    _create(admission.create_validating_webhook_configuration, {"metadata": {"name": TRAINING_WEBHOOK}, "webhooks": []})


def copy_training_operator_certs(kubeconfig: str) -> bool:
    """Copy the Secret's serving pair where the operator waits for it (as a mounted Secret would be).

    False while the operator has not filled the Secret yet.
    """
    core = client.CoreV1Api(_api(kubeconfig))
    data = core.read_namespaced_secret(TRAINING_SECRET, TRAINING_NAMESPACE).data or {}
    if not data.get("tls.crt") or not data.get("tls.key"):
        return False
    TRAINING_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for key in ("tls.crt", "tls.key"):
        target = TRAINING_CERT_DIR / key
        content = base64.b64decode(data[key])
        if not target.exists() or target.read_bytes() != content:
            tmp = target.with_suffix(".tmp")
            tmp.write_bytes(content)
            tmp.chmod(0o600)
            tmp.replace(target)
    return True


def remove_webhooks(kubeconfig: str) -> None:
    """Delete the webhook configurations that point at the controllers, so that a stopped controller does not
    block pod creation and deletion in the whole cluster (Kruise's pod webhooks fail closed)."""
    api = client.AdmissionregistrationV1Api(_api(kubeconfig))
    kruise = KRUISE_WEBHOOK_PREFIX
    deletes = [(api.delete_mutating_webhook_configuration, f"{kruise}mutating-webhook-configuration"),
               (api.delete_validating_webhook_configuration, f"{kruise}validating-webhook-configuration"),
               (api.delete_validating_webhook_configuration, TRAINING_WEBHOOK)]
    for delete, name in deletes:
        try:
            delete(name)
        except ApiException as exc:
            if exc.status != 404:
                raise
