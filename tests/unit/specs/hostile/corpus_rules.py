"""Corpus: every validation rule of both kinds and of the pod template they share, and inputs made to give
huge error messages."""

from __future__ import annotations

import copy
from typing import Any

from unit.specs.hostile.corpus import (
    BCJ_CONTAINER,
    BCJ_POD,
    DELETE,
    TF_CONTAINER,
    TF_TEMPLATE,
    Case,
    Kind,
    Step,
    edited,
    field_case,
    tf_manifest,
)

BCJ: Kind = "BroadcastJob"
TF: Kind = "TFJob"
BCJ_C = "spec.template.spec.containers[0]"
TF_C = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]"
WORKER: tuple[Step, ...] = ("spec", "tfReplicaSpecs", "Worker")
BIG = 300_000


def bcj(name: str, steps: tuple[Step, ...], value: Any, path: str) -> Case:
    return field_case(f"bcj-{name}", BCJ, steps, value, path, "broadcastjob-rules")


def tf(name: str, steps: tuple[Step, ...], value: Any, path: str) -> Case:
    return field_case(f"tf-{name}", TF, steps, value, path, "tfjob-rules")


def pod(name: str, bcj_change: tuple[tuple[Step, ...], Any], tf_change: tuple[tuple[Step, ...], Any],
        path: str) -> list[Case]:
    """A pod template rule broken in each kind; `path` is relative to the pod spec."""
    return [Case(f"bcj-pod-{name}", BCJ, lambda: edited(BCJ, bcj_change), f"spec.template.spec{path}",
                 "pod-template-rules"),
            Case(f"tf-pod-{name}", TF, lambda: edited(TF, tf_change),
                 f"spec.tfReplicaSpecs[Worker].template.spec{path}", "pod-template-rules")]


def with_types(*types: str) -> dict[str, Any]:
    """A TFJob whose replica specs are exactly `types`, each a copy of the Worker spec with one replica."""
    manifest = tf_manifest()
    worker = manifest["spec"]["tfReplicaSpecs"]["Worker"]
    manifest["spec"]["tfReplicaSpecs"] = {t: {**copy.deepcopy(worker), "replicas": 1} for t in types}
    return manifest


def heavy_template() -> dict[str, Any]:
    """901 replicas of a 1,200-value template: more pod values than one pass may build."""
    env = [{"name": f"E{i}", "value": "v"} for i in range(240)]
    return edited(TF, ((*WORKER, "replicas"), 900), ((*TF_CONTAINER, "env"), env))


def broadcast_job_rules() -> list[Case]:
    policy = ("spec", "completionPolicy")
    template_spec = BCJ_POD
    return [
        bcj("v1-name-with-dot", ("metadata", "name"), "my.job", "metadata.name"),
        bcj("name-upper-case", ("metadata", "name"), "MyJob", "metadata.name"),
        bcj("name-300", ("metadata", "name"), "a" * 300, "metadata.name"),
        bcj("name-missing", ("metadata", "name"), DELETE, "metadata.name"),
        bcj("v3-never-with-ttl", policy, {"type": "Never", "ttlSecondsAfterFinished": 10},
            "spec.completionPolicy.ttlSecondsAfterFinished"),
        bcj("v4-never-with-deadline", policy, {"type": "Never", "activeDeadlineSeconds": 10},
            "spec.completionPolicy.activeDeadlineSeconds"),
        bcj("v6-restart-always", (*template_spec, "restartPolicy"), "Always", "spec.template.spec.restartPolicy"),
        bcj("v6-restart-missing", (*template_spec, "restartPolicy"), DELETE, "spec.template.spec.restartPolicy"),
        bcj("v8-reserved-label", ("spec", "template", "metadata", "labels"), {"broadcastjob-name": "other"},
            "spec.template.metadata.labels"),
        bcj("v9-no-containers", (*template_spec, "containers"), [], "spec.template.spec.containers"),
        bcj("v13-parallelism-negative", ("spec", "parallelism"), -1, "spec.parallelism"),
        bcj("v13-parallelism-plain-string", ("spec", "parallelism"), "5", "spec.parallelism"),
        bcj("v13-parallelism-bad-percent", ("spec", "parallelism"), "5.5%", "spec.parallelism"),
        bcj("v14-unknown-completion-type", (*policy, "type"), "Sometimes", "spec.completionPolicy.type"),
        bcj("v14-unknown-failure-type", ("spec", "failurePolicy", "type"), "Retry", "spec.failurePolicy.type"),
        bcj("v15-restart-limit-negative", ("spec", "failurePolicy", "restartLimit"), -1,
            "spec.failurePolicy.restartLimit"),
        bcj("v15-deadline-zero", (*policy, "activeDeadlineSeconds"), 0, "spec.completionPolicy.activeDeadlineSeconds"),
        bcj("v15-ttl-negative", (*policy, "ttlSecondsAfterFinished"), -5,
            "spec.completionPolicy.ttlSecondsAfterFinished"),
        bcj("v16-node-name", (*template_spec, "nodeName"), "node-1", "spec.template.spec.nodeName"),
        bcj("api-version", ("apiVersion",), "apps.kruise.io/v2", "apiVersion"),
        bcj("kind", ("kind",), "Job", "kind"),
        bcj("spec-missing", ("spec",), DELETE, "spec"),
        bcj("spec-a-list", ("spec",), [], "spec"),
        bcj("template-missing", ("spec", "template"), DELETE, "spec.template"),
        bcj("template-a-string", ("spec", "template"), "pod", "spec.template"),
        bcj("metadata-a-list", ("metadata",), ["name"], "metadata"),
        bcj("paused-a-string", ("spec", "paused"), "yes", "spec.paused"),
        bcj("completion-policy-a-list", policy, ["Always"], "spec.completionPolicy"),
        bcj("failure-policy-a-string", ("spec", "failurePolicy"), "FailFast", "spec.failurePolicy"),
        bcj("namespace-invalid", ("metadata", "namespace"), "Bad_NS", "metadata.namespace"),
        bcj("label-key-invalid", ("metadata", "labels"), {"bad key!": "x"}, "metadata.labels"),
        bcj("annotation-key-invalid", ("metadata", "annotations"), {"/x": "y"}, "metadata.annotations"),
        bcj("annotations-over-256k", ("metadata", "annotations"), {"a": "x" * 140_000, "b": "y" * 140_000},
            "metadata.annotations"),
    ]


def tf_job_rules() -> list[Case]:
    run = ("spec", "runPolicy")
    return [
        tf("b1-name-starts-with-digit", ("metadata", "name"), "00test", "metadata.name"),
        tf("b2-name-300", ("metadata", "name"), "a" * 300, "metadata.name"),
        tf("name-upper-case", ("metadata", "name"), "MnIst", "metadata.name"),
        tf("name-missing", ("metadata", "name"), DELETE, "metadata.name"),
        tf("name-with-dot", ("metadata", "name"), "mnist.v2", "metadata.name"),
        tf("b4-replica-specs-missing", ("spec", "tfReplicaSpecs"), DELETE, "spec.tfReplicaSpecs"),
        tf("replica-specs-a-list", ("spec", "tfReplicaSpecs"), ["Worker"], "spec.tfReplicaSpecs"),
        tf("b12-null-replica-spec", WORKER, None, "spec.tfReplicaSpecs[Worker].template.spec.containers"),
        tf("replica-spec-a-string", WORKER, "Worker", "spec.tfReplicaSpecs[Worker]"),
        tf("b5-no-containers", (*TF_TEMPLATE, "spec", "containers"), [],
           "spec.tfReplicaSpecs[Worker].template.spec.containers"),
        tf("b6-empty-image", (*TF_CONTAINER, "image"), "", f"{TF_C}.image"),
        tf("b7-no-tensorflow-container", (*TF_CONTAINER, "name"), "trainer",
           "spec.tfReplicaSpecs[Worker].template.spec.containers"),
        Case("tf-b8-chief-and-master", TF, lambda: with_types("Chief", "Master", "Worker"), "spec.tfReplicaSpecs",
             "tfjob-rules"),
        Case("tf-chief-replicas-2", TF, lambda: edited(TF, (("spec", "tfReplicaSpecs", "Chief"),
                                                            {**tf_manifest()["spec"]["tfReplicaSpecs"]["Worker"],
                                                             "replicas": 2})),
             "spec.tfReplicaSpecs[Chief].replicas", "tfjob-rules"),
        tf("b9-managed-by-other", (*run, "managedBy"), "someone/else", "spec.runPolicy.managedBy"),
        Case("tf-b13-unknown-replica-type", TF, lambda: with_types("Worker", "Trainer"), "spec.tfReplicaSpecs",
             "tfjob-rules"),
        tf("b13-unknown-restart-policy", (*WORKER, "restartPolicy"), "Sometimes",
           "spec.tfReplicaSpecs[Worker].restartPolicy"),
        tf("b13-unknown-clean-pod-policy", (*run, "cleanPodPolicy"), "Some", "spec.runPolicy.cleanPodPolicy"),
        tf("b13-unknown-success-policy", ("spec", "successPolicy"), "AnyWorker", "spec.successPolicy"),
        Case("tf-duplicate-replica-types", TF, lambda: with_types("Worker", "worker"), "spec.tfReplicaSpecs[worker]",
             "tfjob-rules"),
        tf("api-version", ("apiVersion",), "kubeflow.org/v2", "apiVersion"),
        tf("kind", ("kind",), "PyTorchJob", "kind"),
        tf("spec-a-list", ("spec",), ["x"], "spec"),
        tf("run-policy-a-list", run, [], "spec.runPolicy"),
        tf("scheduling-policy-a-string", (*run, "schedulingPolicy"), "gang", "spec.runPolicy.schedulingPolicy"),
        tf("min-resources-a-list", (*run, "schedulingPolicy"), {"minResources": ["cpu"]},
           "spec.runPolicy.schedulingPolicy.minResources"),
        tf("suspend-a-string", (*run, "suspend"), "yes", "spec.runPolicy.suspend"),
        tf("dynamic-worker-an-int", ("spec", "enableDynamicWorker"), 1, "spec.enableDynamicWorker"),
        tf("namespace-invalid", ("metadata", "namespace"), "-ns-", "metadata.namespace"),
        tf("label-key-invalid", ("metadata", "labels"), {"a/b/c": "x"}, "metadata.labels"),
        tf("annotation-key-invalid", ("metadata", "annotations"), {"bad key": "y"}, "metadata.annotations"),
        tf("tfjob-port-zero", (*TF_CONTAINER, "ports", 0, "containerPort"), 0, f"{TF_C}.ports[0].containerPort"),
        tf("template-a-list", (*TF_TEMPLATE,), [], "spec.tfReplicaSpecs[Worker].template"),
        tf("template-spec-a-string", (*TF_TEMPLATE, "spec"), "pod", "spec.tfReplicaSpecs[Worker].template.spec"),
        tf("containers-an-object", (*TF_TEMPLATE, "spec", "containers"), {"name": "tensorflow"},
           "spec.tfReplicaSpecs[Worker].template.spec.containers"),
        tf("container-a-string", (*TF_TEMPLATE, "spec", "containers", 0), "tensorflow", f"{TF_C}"),
        Case("tf-pod-values-over-limit", TF, heavy_template, "spec.tfReplicaSpecs", "tfjob-rules"),
    ]


def pod_template_rules() -> list[Case]:
    bc, tc = BCJ_CONTAINER, TF_CONTAINER
    volumes = [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]
    return [
        *pod("duplicate-volume-names", ((*BCJ_POD, "volumes"), volumes), ((*TF_TEMPLATE, "spec", "volumes"), volumes),
             ".volumes[1].name"),
        *pod("volume-name-invalid", ((*BCJ_POD, "volumes"), [{"name": "Data_1"}]),
             ((*TF_TEMPLATE, "spec", "volumes"), [{"name": "Data_1"}]), ".volumes[0].name"),
        *pod("mount-of-unknown-volume", ((*bc, "volumeMounts"), [{"name": "nope", "mountPath": "/x"}]),
             ((*tc, "volumeMounts"), [{"name": "nope", "mountPath": "/x"}]), ".containers[0].volumeMounts[0].name"),
        *pod("port-name-invalid", ((*bc, "ports", 0, "name"), "HTTP--x"), ((*tc, "ports"),
             [{"name": "HTTP--x", "containerPort": 80}]), ".containers[0].ports[0].name"),
        *pod("env-name-invalid", ((*bc, "env", 0, "name"), "1=BAD"), ((*tc, "env", 0, "name"), "1=BAD"),
             ".containers[0].env[0].name"),
        *pod("toleration-operator-invalid", ((*BCJ_POD, "tolerations", 0, "operator"), "Maybe"),
             ((*TF_TEMPLATE, "spec", "tolerations"), [{"key": "k", "operator": "Maybe"}]), ".tolerations[0].operator"),
        *pod("toleration-effect-invalid", ((*BCJ_POD, "tolerations", 0, "effect"), "Never"),
             ((*TF_TEMPLATE, "spec", "tolerations"), [{"key": "k", "effect": "Never"}]), ".tolerations[0].effect"),
        *pod("dns-none-without-config", ((*BCJ_POD, "dnsPolicy"), "None"),
             ((*TF_TEMPLATE, "spec", "dnsPolicy"), "None"), ".dnsConfig"),
        *pod("ephemeral-containers", ((*BCJ_POD, "ephemeralContainers"), [{"name": "debug", "image": "busybox"}]),
             ((*TF_TEMPLATE, "spec", "ephemeralContainers"), [{"name": "debug", "image": "busybox"}]),
             ".ephemeralContainers"),
        *pod("pull-policy-invalid", ((*bc, "imagePullPolicy"), "Sometimes"), ((*tc, "imagePullPolicy"), "Sometimes"),
             ".containers[0].imagePullPolicy"),
        *pod("resource-name-invalid", ((*bc, "resources", "limits"), {"gpu": "1"}),
             ((*tc, "resources", "limits"), {"gpu": "1"}), ".containers[0].resources.limits[gpu]"),
        *pod("requests-over-limits", ((*bc, "resources", "requests", "cpu"), "2"),
             ((*tc, "resources"), {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
             ".containers[0].resources.requests"),
        *pod("hostname-invalid", ((*BCJ_POD, "hostname"), "Host_1"), ((*TF_TEMPLATE, "spec", "hostname"), "Host_1"),
             ".hostname"),
        *pod("termination-message-policy-invalid", ((*bc, "terminationMessagePolicy"), "Always"),
             ((*tc, "terminationMessagePolicy"), "Always"), ".containers[0].terminationMessagePolicy"),
        bcj("duplicate-container-names", (*BCJ_POD, "containers"),
            [{"name": "main", "image": "busybox"}, {"name": "main", "image": "busybox"}],
            "spec.template.spec.containers[1].name"),
    ]


def bounded_message_cases() -> list[Case]:
    def big(name: str, kind: Kind, steps: tuple[Step, ...], value: Any, path: str) -> Case:
        return field_case(name, kind, steps, value, path, "bounded-messages")

    many_env = [{"name": f"{i}BAD", "value": "v"} for i in range(3000)]
    return [
        big("bcj-name-300k", BCJ, ("metadata", "name"), "N" * BIG, "metadata.name"),
        big("tf-name-300k", TF, ("metadata", "name"), "n" * BIG, "metadata.name"),
        big("bcj-label-value-300k", BCJ, ("metadata", "labels", "app"), "v" * BIG, "metadata.labels"),
        big("tf-label-key-300k", TF, ("metadata", "labels"), {"k" * BIG: "v"}, "metadata.labels"),
        big("tf-replica-type-300k", TF, ("spec", "tfReplicaSpecs", "T" * BIG), {}, "spec.tfReplicaSpecs"),
        big("bcj-resource-name-300k", BCJ, (*BCJ_CONTAINER, "resources", "limits", "r" * BIG), "1",
            f"{BCJ_C}.resources.limits[{'r' * 64}…]"),
        big("bcj-image-pull-policy-300k", BCJ, (*BCJ_CONTAINER, "imagePullPolicy"), "p" * BIG,
            f"{BCJ_C}.imagePullPolicy"),
        big("bcj-3000-bad-env-names", BCJ, (*BCJ_CONTAINER, "env"), many_env, f"{BCJ_C}.env[0].name"),
        big("tf-3000-bad-env-names", TF, (*TF_CONTAINER, "env"), many_env, f"{TF_C}.env[0].name"),
        big("tf-unknown-types-3000", TF, ("spec", "tfReplicaSpecs"), {f"t{i}": None for i in range(3000)},
            "spec.tfReplicaSpecs"),
    ]


def rule_cases() -> list[Case]:
    return [*broadcast_job_rules(), *tf_job_rules(), *pod_template_rules(), *bounded_message_cases()]
