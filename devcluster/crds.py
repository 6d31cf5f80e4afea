"""CustomResourceDefinitions the tests and demos use (Kueue LocalQueue, scheduler-plugins and Volcano PodGroups).

Only the APIs are installed, not their controllers: the provider creates and reads
these objects, and tests play the part of the scheduler where a status matters.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

CRD_DIR = Path(__file__).resolve().parent / "crds"


def install_crds(kubeconfig: str, timeout: float = 30.0) -> list[str]:
    """Create every CRD in devcluster/crds (existing ones are kept) and wait until each is Established."""
    api = client.ApiextensionsV1Api(config.new_client_from_config(config_file=kubeconfig))
    names = []
    for path in sorted(CRD_DIR.glob("*.yaml")):
        body: dict[str, Any] = yaml.safe_load(path.read_text())
        names.append(body["metadata"]["name"])
        try:
            api.create_custom_resource_definition(body)
        except ApiException as exc:
            if exc.status != 409:
                raise
    deadline = time.monotonic() + timeout
    for name in names:
        while not _established(api, name):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {name} was not Established within {timeout} s")
            time.sleep(0.2)
    return names


def _established(api: client.ApiextensionsV1Api, name: str) -> bool:
    crd = api.read_custom_resource_definition(name)
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))
