"""The hostile-input corpus: named bad manifests for both kinds, each with the field path its rejection must name.

Inputs are built lazily (some are a megabyte), from a valid manifest of each kind with one
thing broken. The cases are spread over modules by theme; `CASES` gathers them all.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

Kind = Literal["BroadcastJob", "TFJob"]
Source = Mapping[str, Any] | str
Step = str | int
DELETE = object()
"""Set a field to DELETE to remove it."""


@dataclass(frozen=True)
class Case:
    """One bad input: `path` must appear in the rejection (a field path, or `line L, column C` for syntax)."""

    name: str
    kind: Kind
    build: Callable[[], Source]
    path: str
    category: str


def bcj_manifest() -> dict[str, Any]:
    return {
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "BroadcastJob",
        "metadata": {"name": "hostile", "labels": {"app": "x"}, "annotations": {"note": "x"}},
        "spec": {
            "parallelism": 2,
            "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": 30},
            "failurePolicy": {"type": "FailFast", "restartLimit": 1},
            "template": {
                "metadata": {"labels": {"app": "x"}, "annotations": {"note": "x"}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
                    "containers": [{
                        "name": "main", "image": "busybox:1.36", "command": ["sh", "-c"], "args": ["true"],
                        "env": [{"name": "MODE", "value": "fast"}],
                        "ports": [{"name": "http", "containerPort": 8080}],
                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                      "limits": {"cpu": "1", "memory": "128Mi"}},
                    }],
                },
            },
        },
    }


def tf_manifest() -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{
                "name": "tensorflow", "image": "tensorflow/tensorflow:2.9.1", "command": ["python", "train.py"],
                "env": [{"name": "MODE", "value": "fast"}],
                "ports": [{"name": "tfjob-port", "containerPort": 2222}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            }],
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": "hostile", "labels": {"app": "x"}, "annotations": {"note": "x"}},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3, "activeDeadlineSeconds": 600,
                          "ttlSecondsAfterFinished": 60},
            "tfReplicaSpecs": {
                "PS": {"replicas": 1, "restartPolicy": "Never", "template": copy.deepcopy(template)},
                "Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": template},
            },
        },
    }


BASES: dict[Kind, Callable[[], dict[str, Any]]] = {"BroadcastJob": bcj_manifest, "TFJob": tf_manifest}
BCJ_CONTAINER: tuple[Step, ...] = ("spec", "template", "spec", "containers", 0)
BCJ_POD: tuple[Step, ...] = ("spec", "template", "spec")
TF_TEMPLATE: tuple[Step, ...] = ("spec", "tfReplicaSpecs", "Worker", "template")
TF_CONTAINER: tuple[Step, ...] = (*TF_TEMPLATE, "spec", "containers", 0)


def edited(kind: Kind, *changes: tuple[tuple[Step, ...], Any]) -> dict[str, Any]:
    """The kind's valid manifest with each (steps, value) change applied; value DELETE removes the field."""
    manifest = BASES[kind]()
    for steps, value in changes:
        parent: Any = manifest
        for step in steps[:-1]:
            parent = parent[step]
        if value is DELETE:
            del parent[steps[-1]]
        else:
            parent[steps[-1]] = value
    return manifest


def at(kind: Kind, steps: tuple[Step, ...], value: Any) -> Callable[[], Source]:
    """A lazy manifest with one field set."""
    return lambda: edited(kind, (steps, value))


def as_yaml(manifest: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(manifest), sort_keys=False)


def base_yaml(kind: Kind) -> str:
    return as_yaml(BASES[kind]())


def field_case(name: str, kind: Kind, steps: tuple[Step, ...], value: Any, path: str, category: str) -> Case:
    """A case that sets one field of a valid manifest to a bad value."""
    return Case(name, kind, at(kind, steps, value), path, category)


def both(name: str, bcj: tuple[tuple[Step, ...], str], tf: tuple[tuple[Step, ...], str], value: Any,
         category: str) -> list[Case]:
    """The same bad value at the matching field of each kind: ((steps, expected path) per kind)."""
    return [field_case(f"bcj-{name}", "BroadcastJob", bcj[0], value, bcj[1], category),
            field_case(f"tf-{name}", "TFJob", tf[0], value, tf[1], category)]


def json_text(manifest: Mapping[str, Any]) -> str:
    return json.dumps(manifest)


def all_cases() -> list[Case]:
    from unit.specs.hostile.corpus_fields import field_cases
    from unit.specs.hostile.corpus_rules import rule_cases
    from unit.specs.hostile.corpus_text import text_cases

    cases = [*text_cases(), *field_cases(), *rule_cases()]
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    assert not duplicates, f"corpus case names must be unique: {duplicates}"
    return cases
