"""The differential corpus: manifests run by both engines with the same scripted pod outcomes.

Each case builds its manifest from the node pool the test made for it (BroadcastJobs select that pool; TFJob
replicas land on any schedulable node). `explained` maps a pattern of a difference line to why it is expected:
an intended fix of this provider (Δ) or a documented deviation. Anything else fails the case.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

SIM = "sim.airflow-broadcast.io"
BCJ = "apps.kruise.io/v1beta1"
TF = "kubeflow.org/v1"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
F10_PAUSE_FLAP = ("Δ F10 (intended fix): upstream does not persist the pause, so each later pass emits `Continue` "
                  "and then `Paused` again; ours stays paused (phase, counters and pods are the same)")
Q1_DEADLINE = ("Δ Q1 (training-operator #3358, intended fix): upstream checks activeDeadlineSeconds only when some "
               "other event makes it reconcile, so a job whose pods just run is never failed; ours wakes up at the "
               "deadline, fails the job (TFJobFailed) and cleans up per cleanPodPolicy")
Q5_BACKOFF_CLEANUP = ("Q5 (training-operator #3419, follows v1.9.4 by design): v1.9.0 deletes every pod and service of "
                      "a job failed by backoffLimit, ignoring cleanPodPolicy (None here); ours applies cleanPodPolicy "
                      "as v1.9.4 does, so the failed job's pod and service stay")


def fail_until(seconds: float) -> str:
    """An RFC 3339 UTC time `seconds` from now: pods created before it fail, later ones succeed."""
    return datetime.fromtimestamp(math.ceil(time.time() + seconds), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def outcome(result: str | None = "Succeeded", after: str = "1s", **extra: str) -> dict[str, str]:
    """Pod annotations that script the kwok outcome (no result: the pod runs until deleted)."""
    notes = {f"{SIM}/after": after, **{f"{SIM}/{k.replace('_', '-')}": v for k, v in extra.items()}}
    if result is not None:
        notes[f"{SIM}/result"] = result
    return notes


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    build: Callable[[str, list[str]], dict[str, Any]]
    nodes: int = 3
    extra_nodes: tuple[tuple[int, Mapping[str, Any]], ...] = ()  # (count, node_factory options) in the pool
    explained: Mapping[str, str] = field(default_factory=dict)
    source: str = "corpus"
    upstream_timeout: float = 60.0
    hold: float | None = None  # a job meant to stay open (paused, suspended): compare both after this long


# ---- BroadcastJob ------------------------------------------------------------------------------
def bcj(name: str, pool: str, *, notes: Mapping[str, str], policy: str = "Never", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": BCJ, "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": {"metadata": {"annotations": dict(notes)},
                                  "spec": {"nodeSelector": {"pool": pool}, "restartPolicy": policy,
                                           "containers": [{"name": "c", "image": "busybox:1.36"}]}}, **spec}}


def templated(body: dict[str, Any]) -> dict[str, Any]:
    """Template labels, env and ports, which both engines must pass through to every pod unchanged."""
    template = body["spec"]["template"]
    template["metadata"]["labels"] = {"app": "agent", "tier": "node"}
    template["spec"]["containers"][0].update({"env": [{"name": "MODE", "value": "scan"}],
                                              "ports": [{"name": "metrics", "containerPort": 9100}]})
    return body


def requests(body: dict[str, Any]) -> dict[str, Any]:
    """Resource requests that only the default-sized nodes satisfy."""
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "memory": "2Gi"}}
    return body


def kruise_sample(name: str, pool: str, notes: Mapping[str, str], completion: Mapping[str, Any]) -> dict[str, Any]:
    """Kruise's config/samples BroadcastJob (v1beta1), with a node selector and a scripted outcome added."""
    body = {"apiVersion": BCJ, "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [{"name": "pi", "image": "perl",
                                                           "command": ["perl", "-Mbignum=bpi", "-wle",
                                                                       "print bpi(2000)"]}],
                                           "restartPolicy": "Never"}},
                     "completionPolicy": dict(completion)}}
    template = body["spec"]["template"]
    template["metadata"] = {"annotations": dict(notes)}
    template["spec"]["nodeSelector"] = {"pool": pool}
    return body


BROADCAST_CASES = [
    Case("bcj-all-succeed", "BroadcastJob", lambda pool, nodes: bcj("dj-all", pool, notes=outcome())),
    Case("bcj-parallelism-1", "BroadcastJob",
         lambda pool, nodes: bcj("dj-par1", pool, notes=outcome(after="0s"), parallelism=1)),
    Case("bcj-ineligible-taint", "BroadcastJob", lambda pool, nodes: bcj("dj-taint", pool, notes=outcome()),
         extra_nodes=((1, {"taints": [TAINT]}),)),
    Case("bcj-fail-continue", "BroadcastJob",
         lambda pool, nodes: bcj("dj-continue", pool, notes=outcome(fail_nodes=nodes[0]),
                                 failurePolicy={"type": "Continue"})),
    Case("bcj-fail-fastfail", "BroadcastJob",
         # One node fails, the others run until FailFast deletes them (if several failed, which failed pods
         # are left and which running ones are deleted would be a race).
         lambda pool, nodes: bcj("dj-fastfail", pool, notes=outcome(result=None, fail_nodes=nodes[0], exit_code="3"),
                                 failurePolicy={"type": "FailFast"})),
    Case("bcj-deadline", "BroadcastJob",
         lambda pool, nodes: bcj("dj-deadline", pool, notes=outcome(result=None),
                                 completionPolicy={"type": "Always", "activeDeadlineSeconds": 3})),
    Case("bcj-parallelism-percent", "BroadcastJob",
         lambda pool, nodes: bcj("dj-percent", pool, notes=outcome(after="0s"), parallelism="50%"), nodes=4),
    Case("bcj-all-fail-continue", "BroadcastJob",
         lambda pool, nodes: bcj("dj-allfail", pool, notes=outcome(result="Failed", exit_code="2"),
                                 failurePolicy={"type": "Continue"})),
    Case("bcj-template-labels-env", "BroadcastJob",
         lambda pool, nodes: templated(bcj("dj-labels", pool, notes=outcome()))),
    Case("bcj-ineligible-cordoned", "BroadcastJob", lambda pool, nodes: bcj("dj-cordon", pool, notes=outcome()),
         extra_nodes=((1, {"unschedulable": True}),)),
    Case("bcj-ineligible-too-small", "BroadcastJob",
         lambda pool, nodes: requests(bcj("dj-small", pool, notes=outcome())),
         extra_nodes=((1, {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}}),)),
    Case("bcj-restart-limit", "BroadcastJob",
         lambda pool, nodes: bcj("dj-restarts", pool, notes=outcome(result=None, restarts="3"), policy="OnFailure",
                                 failurePolicy={"type": "FailFast", "restartLimit": 1}),
         nodes=1),  # one pod: with more, which pods are over the limit when the job fails is a race (F5, F7)
    Case("bcj-fail-then-succeed-never", "BroadcastJob",
         lambda pool, nodes: bcj("dj-failuntil", pool, notes=outcome(fail_until=fail_until(2)),
                                 failurePolicy={"type": "Continue"})),
    Case("bcj-paused-at-creation", "BroadcastJob",
         lambda pool, nodes: bcj("dj-paused", pool, notes=outcome(), paused=True), hold=5.0),
    Case("bcj-fail-pause", "BroadcastJob",
         lambda pool, nodes: bcj("dj-failpause", pool, notes=outcome(fail_nodes=nodes[0]),
                                 failurePolicy={"type": "Pause"}), hold=8.0,
         explained={r"^events: .*upstream=.*'<job>/Continue'": F10_PAUSE_FLAP}),
    Case("bcj-completion-never", "BroadcastJob",
         lambda pool, nodes: bcj("dj-never", pool, notes=outcome(), completionPolicy={"type": "Never"}), hold=6.0),
    Case("bcj-kruise-sample-ttl", "BroadcastJob",
         lambda pool, nodes: kruise_sample("broadcastjob-ttl", pool, outcome(),
                                           {"type": "Always", "ttlSecondsAfterFinished": 200}),
         source="kruise config/samples/apps_v1beta1_broadcastjob-ttl.yaml"),
]


# ---- TFJob -------------------------------------------------------------------------------------
def replica(count: int, notes: Mapping[str, str], policy: str = "Never", port: bool = True) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "tensorflow", "image": "tensorflow/tensorflow:2.9.1"}
    if port:
        container["ports"] = [{"name": "tfjob-port", "containerPort": 2222}]
    return {"replicas": count, "restartPolicy": policy,
            "template": {"metadata": {"annotations": dict(notes)}, "spec": {"containers": [container]}}}


def tfjob(name: str, replicas: Mapping[str, Any], success_policy: str | None = None,
          **run_policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"tfReplicaSpecs": copy.deepcopy(dict(replicas))}
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": TF, "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def chief_ps_workers(chief: Mapping[str, str], worker: Mapping[str, str]) -> dict[str, Any]:
    return {"Chief": replica(1, chief), "PS": replica(1, outcome(result=None)), "Worker": replica(2, worker)}


TF_CASES = [
    Case("tf-chief-ps-workers-clean-running", "TFJob",
         lambda pool, nodes: tfjob("dj-cpw", chief_ps_workers(outcome(after="4s"), outcome()),
                                   cleanPodPolicy="Running"), nodes=0),
    Case("tf-workers-succeed", "TFJob",
         lambda pool, nodes: tfjob("dj-workers", {"Worker": replica(2, outcome())}), nodes=0),
    Case("tf-worker-fails-never", "TFJob",
         lambda pool, nodes: tfjob("dj-wfail", {"Worker": replica(2, outcome(result="Failed", exit_code="1"))}),
         nodes=0),
    Case("tf-clean-all", "TFJob",
         lambda pool, nodes: tfjob("dj-cleanall", chief_ps_workers(outcome(after="3s"), outcome()),
                                   cleanPodPolicy="All"), nodes=0),
    Case("tf-clean-none", "TFJob",
         lambda pool, nodes: tfjob("dj-cleannone", chief_ps_workers(outcome(after="3s"), outcome()),
                                   cleanPodPolicy="None"), nodes=0),
    Case("tf-deadline", "TFJob",
         lambda pool, nodes: tfjob("dj-tf-deadline", {"Worker": replica(1, outcome(result=None))},
                                   activeDeadlineSeconds=3),
         nodes=0, explained={".": Q1_DEADLINE}, upstream_timeout=15.0),
    Case("tf-exitcode-permanent", "TFJob",
         lambda pool, nodes: tfjob("dj-exitcode", {"Worker": replica(1, outcome(result="Failed", exit_code="1"),
                                                                    policy="ExitCode")}), nodes=0),
    Case("tf-onfailure-restarts", "TFJob",
         lambda pool, nodes: tfjob("dj-onfailure", {"Worker": replica(1, outcome(restarts="1"), policy="OnFailure")}),
         nodes=0),
    Case("tf-success-all-workers", "TFJob",
         lambda pool, nodes: tfjob("dj-allworkers", {"Worker": replica(2, outcome())}, success_policy="AllWorkers"),
         nodes=0),
    Case("tf-chief-evaluator-worker", "TFJob",
         lambda pool, nodes: tfjob("dj-evaluator", {"Chief": replica(1, outcome(after="3s")),
                                                    "Evaluator": replica(1, outcome(result=None)),
                                                    "Worker": replica(1, outcome())}, cleanPodPolicy="Running"),
         nodes=0),
    Case("tf-master-worker", "TFJob",
         lambda pool, nodes: tfjob("dj-master", {"Master": replica(1, outcome(after="2s")),
                                                 "Worker": replica(2, outcome())}), nodes=0),
    Case("tf-ps-workers", "TFJob",
         lambda pool, nodes: tfjob("dj-psworkers", {"PS": replica(2, outcome(result=None)),
                                                    "Worker": replica(2, outcome())}, cleanPodPolicy="Running"),
         nodes=0),
    Case("tf-always", "TFJob",
         lambda pool, nodes: tfjob("dj-always", {"Worker": replica(1, outcome(), policy="Always")}), nodes=0),
    Case("tf-exitcode-retryable", "TFJob",
         lambda pool, nodes: tfjob("dj-retry", {"Worker": replica(
             1, outcome(exit_code="137", fail_until=fail_until(2)), policy="ExitCode")}), nodes=0),
    Case("tf-backoff-onfailure", "TFJob",
         lambda pool, nodes: tfjob("dj-backoff", {"Worker": replica(1, outcome(result=None, restarts="3"),
                                                                   policy="OnFailure")}, backoffLimit=1), nodes=0,
         explained={r"^(pods|services)\.": Q5_BACKOFF_CLEANUP, r"^events:": Q5_BACKOFF_CLEANUP}),
    Case("tf-suspended-at-creation", "TFJob",
         lambda pool, nodes: tfjob("dj-suspend", {"Worker": replica(2, outcome())}, suspend=True), nodes=0, hold=5.0),
    Case("tf-sample-simple", "TFJob",
         lambda pool, nodes: tfjob("tfjob-simple", {"Worker": replica(2, outcome(), policy="OnFailure", port=False)}),
         nodes=0, source="training-operator examples/tensorflow/simple.yaml (command dropped, outcome scripted)"),
]

CASES = BROADCAST_CASES + TF_CASES
