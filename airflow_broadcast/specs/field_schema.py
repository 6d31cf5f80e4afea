"""The fields Kubernetes knows, for what no other check covers: unknown fields and mistyped scalars.

The API server drops a field its schema does not know and, with its default `Warn` field
validation, answers `unknown field "spec.foo"`; a string field given a number or a list
item of the wrong type is a 422 (a CRD's schema) or a 400 (a core type). These tables
describe the two kinds and their pod templates far enough for that: every field of the
job, pod template, pod spec, container, env var, port, mount, toleration and volume.
Deeper objects (affinity, probes, security contexts, volume sources) are passed through
as they are. `KNOWN` marks a field whose value another validator checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

from airflow_broadcast.specs.api_types import MAX_INT32, MAX_INT64
from airflow_broadcast.specs.field_errors import FieldError, invalid
from airflow_broadcast.specs.json_fields import is_int
from airflow_broadcast.specs.manifest_limits import child_path, item_path, key_path
from airflow_broadcast.specs.name_rules import inclusive_range_error

KNOWN, STRING, BOOLEAN, INT32, INT64 = "known", "string", "boolean", "int32", "int64"
MAX_UNKNOWN_FIELD_WARNINGS = 20


@dataclass(frozen=True)
class ListOf:
    item: Field


@dataclass(frozen=True)
class MapOf:
    """An object with keys of the user's choosing (replica types), each value a `value`."""

    value: Field


Field = Union[str, "ListOf", "MapOf", Mapping[str, "Field"]]

_RANGES = {INT32: (-MAX_INT32 - 1, MAX_INT32), INT64: (-MAX_INT64 - 1, MAX_INT64)}


def known_fields(*names: str) -> dict[str, Field]:
    """Fields whose values other validators check (or that are passed through as they are)."""
    return dict.fromkeys(names, KNOWN)


OBJECT_META: Mapping[str, Field] = {
    **known_fields("name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
             "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences",
             "managedFields", "selfLink"),
    "generateName": STRING, "finalizers": ListOf(STRING),
}
CONTAINER: Mapping[str, Field] = {
    **known_fields("name", "image", "imagePullPolicy", "envFrom", "lifecycle", "livenessProbe", "readinessProbe",
             "startupProbe", "resizePolicy", "securityContext", "terminationMessagePolicy", "volumeDevices"),
    "args": ListOf(STRING), "command": ListOf(STRING), "workingDir": STRING, "restartPolicy": STRING,
    "stdin": BOOLEAN, "stdinOnce": BOOLEAN, "tty": BOOLEAN, "terminationMessagePath": STRING,
    "env": ListOf({**known_fields("name", "valueFrom"), "value": STRING}),
    "ports": ListOf({**known_fields("containerPort", "hostPort", "name", "protocol"), "hostIP": STRING}),
    "volumeMounts": ListOf({**known_fields("name", "mountPath"), "readOnly": BOOLEAN, "subPath": STRING,
                            "subPathExpr": STRING, "mountPropagation": STRING, "recursiveReadOnly": STRING}),
    "resources": known_fields("limits", "requests", "claims"),
}
VOLUME_SOURCES = (
    "awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "configMap", "csi", "downwardAPI",
    "emptyDir", "ephemeral", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs",
    "hostPath", "image", "iscsi", "nfs", "persistentVolumeClaim", "photonPersistentDisk", "portworxVolume",
    "projected", "quobyte", "rbd", "scaleIO", "secret", "storageos", "vsphereVolume",
)
POD_SPEC: Mapping[str, Field] = {
    **known_fields("activeDeadlineSeconds", "affinity", "dnsConfig", "dnsPolicy", "ephemeralContainers", "hostAliases",
             "hostname", "nodeName", "nodeSelector", "overhead", "priorityClassName", "readinessGates",
             "resourceClaims", "resources", "restartPolicy", "schedulingGates", "securityContext",
             "serviceAccountName", "subdomain", "terminationGracePeriodSeconds", "topologySpreadConstraints"),
    "containers": ListOf(CONTAINER), "initContainers": ListOf(CONTAINER),
    "automountServiceAccountToken": BOOLEAN, "enableServiceLinks": BOOLEAN, "hostIPC": BOOLEAN,
    "hostNetwork": BOOLEAN, "hostPID": BOOLEAN, "hostUsers": BOOLEAN, "setHostnameAsFQDN": BOOLEAN,
    "shareProcessNamespace": BOOLEAN, "imagePullSecrets": ListOf({"name": STRING}), "os": {"name": STRING},
    "preemptionPolicy": STRING, "priority": INT32, "runtimeClassName": STRING, "schedulerName": STRING,
    "serviceAccount": STRING,
    "tolerations": ListOf({**known_fields("key", "operator", "value", "effect"), "tolerationSeconds": INT64}),
    "volumes": ListOf(known_fields("name", *VOLUME_SOURCES)),
}
POD_TEMPLATE: Mapping[str, Field] = {"metadata": OBJECT_META, "spec": POD_SPEC}
TYPE_META: Mapping[str, Field] = {**known_fields("apiVersion", "kind", "status"), "metadata": OBJECT_META}


def check_fields(document: Mapping[str, Any], schema: Mapping[str, Field]) -> tuple[list[FieldError], list[str]]:
    """(type errors, unknown-field warnings) of a JSON-shaped document, walked without recursion.

    A list or object of the wrong type is worded as the validators word it ("must be a
    list", "must be an object"), so that `merge_errors` reports it once.
    """
    errors: list[FieldError] = []
    unknown: list[str] = []
    pending: list[tuple[Any, Field, str]] = [(document, schema, "")]
    while pending:
        value, field, path = pending.pop()
        if isinstance(field, ListOf):
            if not isinstance(value, list):
                errors.append(invalid(path, value, "must be a list"))
                continue
            for index, item in enumerate(value):
                _check(item, field.item, path, index, errors, pending)
        elif not isinstance(value, Mapping) or isinstance(field, str):
            errors.append(invalid(path or "<root>", value, "must be an object"))
        else:
            for key, item in value.items():
                name = key if isinstance(key, str) else str(key)
                if isinstance(field, MapOf):
                    if item is not None:
                        pending.append((item, field.value, key_path(path, name)))
                elif (item_field := field.get(name)) is None:
                    unknown.append(child_path(path, name))
                elif item is not None:
                    _check(item, item_field, path, name, errors, pending)
    return errors, _unknown_warnings(sorted(unknown))


def _check(value: Any, field: Field, path: str, key: str | int, errors: list[FieldError],
           pending: list[tuple[Any, Field, str]]) -> None:
    """A scalar is checked at once (its path is built only for an error); anything else is walked later."""
    if isinstance(field, str):
        if field != KNOWN and (problem := _scalar_problem(value, field)) is not None:
            errors.append(invalid(item_path(path, key), value, problem))
    elif value is not None:
        pending.append((value, field, item_path(path, key)))


def _scalar_problem(value: Any, kind: str) -> str | None:
    if kind == KNOWN:
        return None
    if kind == STRING:
        return None if isinstance(value, str) else "must be a string"
    if kind == BOOLEAN:
        return None if isinstance(value, bool) else "must be a boolean"
    if value is None:
        return None
    if not is_int(value):
        return "must be an integer"
    low, high = _RANGES[kind]
    return None if low <= value <= high else inclusive_range_error(low, high)


def _unknown_warnings(paths: list[str]) -> list[str]:
    """`unknown field "<path>"` per field, as the API server words it; at most a few, then a count."""
    warnings = [f'unknown field "{path}"' for path in paths[:MAX_UNKNOWN_FIELD_WARNINGS]]
    if len(paths) > MAX_UNKNOWN_FIELD_WARNINGS:
        warnings.append(f"… and {len(paths) - MAX_UNKNOWN_FIELD_WARNINGS} more unknown fields")
    return warnings
