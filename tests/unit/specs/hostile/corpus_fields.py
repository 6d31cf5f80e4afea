"""Corpus: values of the wrong type where Kubernetes wants a string, boolean or integer; numbers out of range;
quantities the API server would refuse."""

from __future__ import annotations

from unit.specs.hostile.corpus import (
    BCJ_CONTAINER,
    BCJ_POD,
    TF_CONTAINER,
    TF_TEMPLATE,
    Case,
    Kind,
    Step,
    both,
    field_case,
)

from airflow_broadcast.specs.tf_job.replica_validation import MAX_REPLICAS

BCJ: Kind = "BroadcastJob"
TF: Kind = "TFJob"
INT32_OVER = 2**31
INT64_OVER = 2**63
BCJ_C = "spec.template.spec.containers[0]"
TF_C = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]"
TF_POD = "spec.tfReplicaSpecs[Worker].template.spec"
RUN: tuple[Step, ...] = ("spec", "runPolicy")
SCHED: tuple[Step, ...] = (*RUN, "schedulingPolicy")
WORKER: tuple[Step, ...] = ("spec", "tfReplicaSpecs", "Worker")


def container_pair(name: str, field: tuple[Step, ...], value: object, category: str = "not-a-string") -> list[Case]:
    """The same bad value in a container field of each kind."""
    dotted = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in field)
    return both(name, ((*BCJ_CONTAINER, *field), BCJ_C + dotted), ((*TF_CONTAINER, *field), TF_C + dotted), value,
                category)


def pod_pair(name: str, field: tuple[Step, ...], value: object, category: str) -> list[Case]:
    """The same bad value in a pod spec field of each kind."""
    dotted = "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in field)
    return both(name, ((*BCJ_POD, *field), "spec.template.spec" + dotted), ((*TF_TEMPLATE, "spec", *field),
                                                                         TF_POD + dotted), value, category)


def string_cases() -> list[Case]:
    return [
        *container_pair("env-value-int", ("env", 0, "value"), 5),
        *container_pair("env-value-bool", ("env", 0, "value"), True),
        *container_pair("env-value-object", ("env", 0, "value"), {"secret": "x"}),
        *container_pair("env-name-int", ("env", 0, "name"), 7),
        *container_pair("args-int", ("args",), [1]),
        *container_pair("args-null-item", ("args",), ["a", None]),
        *container_pair("args-a-string", ("args",), "python main.py"),
        *container_pair("command-float", ("command",), ["sh", 1.5]),
        *container_pair("command-nested-list", ("command",), [["sh"]]),
        *container_pair("working-dir-int", ("workingDir",), 0),
        *container_pair("stdin-a-string", ("stdin",), "true"),
        *container_pair("termination-message-path-bool", ("terminationMessagePath",), False),
        *container_pair("mount-read-only-a-string", ("volumeMounts", 0, "readOnly"), "no"),
        *container_pair("mount-sub-path-int", ("volumeMounts", 0, "subPath"), 1),
        *container_pair("port-host-ip-int", ("ports", 0, "hostIP"), 127001),
        field_case("bcj-image-int", BCJ, (*BCJ_CONTAINER, "image"), 3, f"{BCJ_C}.image", "not-a-string"),
        field_case("tf-image-list", TF, (*TF_CONTAINER, "image"), ["tf"], f"{TF_C}.image", "not-a-string"),
        field_case("bcj-container-name-int", BCJ, (*BCJ_CONTAINER, "name"), 12, f"{BCJ_C}.name", "not-a-string"),
        *pod_pair("service-account-int", ("serviceAccountName",), 5, "not-a-string"),
        *pod_pair("scheduler-name-bool", ("schedulerName",), True, "not-a-string"),
        *pod_pair("host-network-a-string", ("hostNetwork",), "yes", "not-a-string"),
        *pod_pair("image-pull-secret-name-int", ("imagePullSecrets",), [{"name": 1}], "not-a-string"),
        *pod_pair("os-a-string", ("os",), "linux", "not-a-string"),
        *pod_pair("node-selector-value-int", ("nodeSelector",), {"disk": 1}, "not-a-string"),
        field_case("bcj-toleration-value-int", BCJ, (*BCJ_POD, "tolerations", 0, "value"), 5,
                   "spec.template.spec.tolerations[0].value", "not-a-string"),
        *both("label-value-bool", (("metadata", "labels", "app"), "metadata.labels"),
              (("metadata", "labels", "app"), "metadata.labels"), True, "not-a-string"),
        *both("annotation-value-int", (("metadata", "annotations", "note"), "metadata.annotations"),
              (("metadata", "annotations", "note"), "metadata.annotations"), 1, "not-a-string"),
        *both("annotation-value-null", (("metadata", "annotations", "note"), "metadata.annotations"),
              (("metadata", "annotations", "note"), "metadata.annotations"), None, "not-a-string"),
        *both("template-label-value-float", (("spec", "template", "metadata", "labels", "app"),
                                             "spec.template.labels"),
              ((*TF_TEMPLATE, "metadata", "labels", "app"), "spec.tfReplicaSpecs[Worker].template.labels"), 1.5,
              "not-a-string"),
        *both("name-int", (("metadata", "name"), "metadata.name"), (("metadata", "name"), "metadata.name"), 42,
              "not-a-string"),
        *both("namespace-list", (("metadata", "namespace"), "metadata.namespace"),
              (("metadata", "namespace"), "metadata.namespace"), ["a"], "not-a-string"),
        *both("finalizers-int", (("metadata", "finalizers"), "metadata.finalizers[0]"),
              (("metadata", "finalizers"), "metadata.finalizers[0]"), [1], "not-a-string"),
        field_case("tf-restart-policy-int", TF, (*WORKER, "restartPolicy"), 1,
                   "spec.tfReplicaSpecs[Worker].restartPolicy", "not-a-string"),
        field_case("tf-success-policy-bool", TF, ("spec", "successPolicy"), False, "spec.successPolicy",
                   "not-a-string"),
        field_case("tf-clean-pod-policy-int", TF, (*RUN, "cleanPodPolicy"), 0, "spec.runPolicy.cleanPodPolicy",
                   "not-a-string"),
        field_case("tf-queue-int", TF, SCHED, {"queue": 5}, "spec.runPolicy.schedulingPolicy.queue", "not-a-string"),
        field_case("bcj-completion-type-int", BCJ, ("spec", "completionPolicy", "type"), 1,
                   "spec.completionPolicy.type", "not-a-string"),
    ]


def number_cases() -> list[Case]:
    bcj_policy = ("spec", "completionPolicy")
    return [
        field_case("tf-replicas-1e8", TF, (*WORKER, "replicas"), 10**8, "spec.tfReplicaSpecs[Worker].replicas",
                   "numbers"),
        field_case("tf-replicas-over-int32", TF, (*WORKER, "replicas"), INT32_OVER,
                   "spec.tfReplicaSpecs[Worker].replicas", "numbers"),
        field_case("tf-replicas-negative", TF, (*WORKER, "replicas"), -1, "spec.tfReplicaSpecs[Worker].replicas",
                   "numbers"),
        field_case("tf-replicas-fraction", TF, (*WORKER, "replicas"), 1.5, "spec.tfReplicaSpecs[Worker].replicas",
                   "numbers"),
        field_case("tf-replicas-bool", TF, (*WORKER, "replicas"), True, "spec.tfReplicaSpecs[Worker].replicas",
                   "numbers"),
        field_case("tf-replicas-string", TF, (*WORKER, "replicas"), "2", "spec.tfReplicaSpecs[Worker].replicas",
                   "numbers"),
        field_case("tf-replicas-2-to-the-100000", TF, (*WORKER, "replicas"), 2**100_000,
                   "spec.tfReplicaSpecs.Worker.replicas", "numbers"),
        field_case("bcj-affinity-weight-2-to-the-64", BCJ, (*BCJ_POD, "affinity"), {"weight": 2**64},
                   "spec.template.spec.affinity.weight", "numbers"),
        field_case("tf-replicas-total-over-limit", TF, ("spec", "tfReplicaSpecs", "PS", "replicas"), MAX_REPLICAS - 1,
                   "spec.tfReplicaSpecs", "numbers"),
        field_case("tf-backoff-over-int32", TF, (*RUN, "backoffLimit"), INT32_OVER, "spec.runPolicy.backoffLimit",
                   "numbers"),
        field_case("tf-backoff-negative", TF, (*RUN, "backoffLimit"), -3, "spec.runPolicy.backoffLimit", "numbers"),
        field_case("tf-deadline-over-int64", TF, (*RUN, "activeDeadlineSeconds"), INT64_OVER,
                   "spec.runPolicy.activeDeadlineSeconds", "numbers"),
        field_case("tf-deadline-bool", TF, (*RUN, "activeDeadlineSeconds"), True,
                   "spec.runPolicy.activeDeadlineSeconds", "numbers"),
        field_case("tf-ttl-over-int32", TF, (*RUN, "ttlSecondsAfterFinished"), INT32_OVER,
                   "spec.runPolicy.ttlSecondsAfterFinished", "numbers"),
        field_case("tf-ttl-1e10", TF, (*RUN, "ttlSecondsAfterFinished"), 1e10, "spec.runPolicy.ttlSecondsAfterFinished",
                   "numbers"),
        field_case("tf-min-available-over-int32", TF, SCHED, {"minAvailable": INT32_OVER},
                   "spec.runPolicy.schedulingPolicy.minAvailable", "numbers"),
        field_case("tf-schedule-timeout-negative", TF, SCHED, {"scheduleTimeoutSeconds": -1},
                   "spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds", "numbers"),
        field_case("bcj-parallelism-over-int32", BCJ, ("spec", "parallelism"), INT32_OVER, "spec.parallelism",
                   "numbers"),
        field_case("bcj-parallelism-fraction", BCJ, ("spec", "parallelism"), 2.5, "spec.parallelism", "numbers"),
        field_case("bcj-parallelism-bool", BCJ, ("spec", "parallelism"), True, "spec.parallelism", "numbers"),
        field_case("bcj-restart-limit-over-int32", BCJ, ("spec", "failurePolicy", "restartLimit"), INT32_OVER,
                   "spec.failurePolicy.restartLimit", "numbers"),
        field_case("bcj-deadline-over-int64", BCJ, (*bcj_policy, "activeDeadlineSeconds"), INT64_OVER,
                   "spec.completionPolicy.activeDeadlineSeconds", "numbers"),
        field_case("bcj-deadline-fraction", BCJ, (*bcj_policy, "activeDeadlineSeconds"), 0.5,
                   "spec.completionPolicy.activeDeadlineSeconds", "numbers"),
        field_case("bcj-ttl-over-int32", BCJ, (*bcj_policy, "ttlSecondsAfterFinished"), INT32_OVER,
                   "spec.completionPolicy.ttlSecondsAfterFinished", "numbers"),
        field_case("bcj-ttl-bool", BCJ, (*bcj_policy, "ttlSecondsAfterFinished"), False,
                   "spec.completionPolicy.ttlSecondsAfterFinished", "numbers"),
        *container_pair("container-port-70000", ("ports", 0, "containerPort"), 70_000, "numbers"),
        *container_pair("container-port-fraction", ("ports", 0, "containerPort"), 80.5, "numbers"),
        *container_pair("host-port-bool", ("ports", 0, "hostPort"), True, "numbers"),
        *pod_pair("grace-period-over-int64", ("terminationGracePeriodSeconds",), INT64_OVER, "numbers"),
        *pod_pair("pod-deadline-over-int32", ("activeDeadlineSeconds",), INT32_OVER, "numbers"),
        *pod_pair("priority-over-int32", ("priority",), INT32_OVER, "numbers"),
        *pod_pair("toleration-seconds-over-int64", ("tolerations",),
                  [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": INT64_OVER}],
                  "numbers"),
    ]


def quantity_cases() -> list[Case]:
    def limits(name: str, resource: str, amount: object, section: str = "limits") -> list[Case]:
        field = ("resources", section, resource)
        return both(name, ((*BCJ_CONTAINER, *field), f"{BCJ_C}.resources.{section}[{resource}]"),
                    ((*TF_CONTAINER, *field), f"{TF_C}.resources.{section}[{resource}]"), amount, "quantities")

    return [
        *limits("cpu-huge-exponent", "cpu", "1e999999999"),
        *limits("cpu-exponent-beyond-int32", "cpu", "1e2147483648"),
        *limits("memory-30-digits", "memory", "9" * 30),
        *limits("memory-over-int64-integer", "memory", 2**64 - 1),
        *limits("cpu-negative", "cpu", "-1"),
        *limits("cpu-bad-format", "cpu", "1.2.3"),
        *limits("memory-bad-suffix", "memory", "5Zi"),
        *limits("gpu-fraction", "nvidia.com/gpu", "0.5"),
        *limits("memory-bool", "memory", True, "requests"),
        field_case("tf-min-resources-huge", TF, SCHED, {"minResources": {"cpu": "1e99999999999"}},
                   "spec.runPolicy.schedulingPolicy.minResources[cpu]", "quantities"),
    ]


def field_cases() -> list[Case]:
    return [*string_cases(), *number_cases(), *quantity_cases()]
