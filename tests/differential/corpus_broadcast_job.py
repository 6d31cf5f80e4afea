"""The BroadcastJob cases of the differential corpus (checklist groups of the BroadcastJob spec, §7)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from corpus_common import Case, add_node, delete_node, fail_until, outcome, patch_node, set_spec

BCJ = "apps.kruise.io/v1beta1"
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
F10_PAUSE_FLAP = ("Δ F10 (intended fix): upstream does not persist the pause, so each later pass emits `Continue` "
                  "and then `Paused` again; ours stays paused (phase, counters and pods are the same)")

F6_ONCE = ("Δ F6/Q11 (intended fix): upstream emits `failed pod is found` twice in the failing pass, first with the "
           "failed count before it deletes the active pods, then after; ours emits it once, with the final counts")
# The first of upstream's two emissions when one pod failed and the others were still running.
F6_EXPLAINED = {r"^events\.<job>: only upstream: failed pod is found: failure policy is FailurePolicyTypeFailFast "
                r"and failed pod is found: 0 pods succeeded, 1 pods failed$": F6_ONCE}
NEVER_FAILED_COUNTS = ("Deviation (docs/broadcastjob.md, `completionPolicy: Never`): upstream keeps reconciling a "
                       "failed Never job (RC13), so the pods FailFast deleted later leave `failed`; the task ends at "
                       "the failing pass, whose counts include them, as they do for an Always job on both engines")
NEVER_EXPLAINED = {**F6_EXPLAINED, r"^status\.failed: ours=3 upstream=1$": NEVER_FAILED_COUNTS}


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


def with_pod_spec(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Extra pod template fields (tolerations, affinity)."""
    body["spec"]["template"]["spec"].update(fields)
    return body


def kruise_sample(name: str, pool: str, notes: Mapping[str, str], completion: Mapping[str, Any],
                  container: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A BroadcastJob of Kruise's samples (v1beta1), with a node selector and a scripted outcome added."""
    pi = {"name": "pi", "image": "perl", "command": ["perl", "-Mbignum=bpi", "-wle", "print bpi(2000)"]}
    body = {"apiVersion": BCJ, "kind": "BroadcastJob", "metadata": {"name": name},
            "spec": {"template": {"spec": {"containers": [dict(container or pi)], "restartPolicy": "Never"}},
                     "completionPolicy": dict(completion)}}
    template = body["spec"]["template"]
    template["metadata"] = {"annotations": dict(notes)}
    template["spec"]["nodeSelector"] = {"pool": pool}
    return body


LONG = outcome(after="6s")  # pods still running when a node changes under them
ZONE_A = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}

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
                                 failurePolicy={"type": "FailFast"}), explained=F6_EXPLAINED),
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
         explained={r"^events\.<job>: only upstream: Continue: continue to process job$": F10_PAUSE_FLAP}),
    Case("bcj-completion-never", "BroadcastJob",
         lambda pool, nodes: bcj("dj-never", pool, notes=outcome(), completionPolicy={"type": "Never"}), hold=6.0),
    Case("bcj-kruise-sample-ttl", "BroadcastJob",
         lambda pool, nodes: kruise_sample("broadcastjob-ttl", pool, outcome(),
                                           {"type": "Always", "ttlSecondsAfterFinished": 200}),
         source="kruise config/samples/apps_v1beta1_broadcastjob-ttl.yaml"),
    # ---- eligibility (N1, N3, N5-N7) ----
    Case("bcj-toleration", "BroadcastJob",
         lambda pool, nodes: with_pod_spec(bcj("dj-tolerate", pool, notes=outcome()), tolerations=[
             {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]),
         extra_nodes=((1, {"taints": [TAINT]}),)),
    Case("bcj-prefer-no-schedule", "BroadcastJob", lambda pool, nodes: bcj("dj-prefer", pool, notes=outcome()),
         extra_nodes=((1, {"taints": [{**TAINT, "effect": "PreferNoSchedule"}]}),)),
    Case("bcj-ineligible-no-execute", "BroadcastJob", lambda pool, nodes: bcj("dj-noexec", pool, notes=outcome()),
         extra_nodes=((1, {"taints": [{**TAINT, "effect": "NoExecute"}]}),)),
    Case("bcj-ineligible-no-pod-slots", "BroadcastJob", lambda pool, nodes: bcj("dj-noslots", pool, notes=outcome()),
         extra_nodes=((1, {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "0"}}),)),
    Case("bcj-required-affinity", "BroadcastJob",
         lambda pool, nodes: with_pod_spec(bcj("dj-affinity", pool, notes=outcome()), affinity=ZONE_A),
         node_labels={"zone": "a"}, extra_nodes=((1, {"labels": {"zone": "b"}}),)),
    # ---- parallelism, failure policies, restart limit (R4, A5, F2, F3, F12, C8) ----
    Case("bcj-parallelism-zero", "BroadcastJob",
         lambda pool, nodes: bcj("dj-par0", pool, notes=outcome(), parallelism=0), hold=5.0),
    Case("bcj-default-failfast", "BroadcastJob",
         lambda pool, nodes: bcj("dj-default", pool, notes=outcome(result=None, fail_nodes=nodes[0])),
         explained=F6_EXPLAINED),
    Case("bcj-never-failfast", "BroadcastJob",
         lambda pool, nodes: bcj("dj-neverfail", pool, notes=outcome(result=None, fail_nodes=nodes[0]),
                                 completionPolicy={"type": "Never"}, failurePolicy={"type": "FailFast"}),
         explained=NEVER_EXPLAINED),
    Case("bcj-restarts-within-limit", "BroadcastJob",
         lambda pool, nodes: bcj("dj-within", pool, notes=outcome(restarts="1"), policy="OnFailure",
                                 failurePolicy={"type": "FailFast", "restartLimit": 2}), nodes=2),
    Case("bcj-restart-default-limit", "BroadcastJob",
         lambda pool, nodes: bcj("dj-onerestart", pool, notes=outcome(result=None, restarts="1"), policy="OnFailure"),
         nodes=1),
    Case("bcj-restart-limit-continue", "BroadcastJob",
         lambda pool, nodes: bcj("dj-blocked", pool, notes=outcome(result=None, restarts="2"), policy="OnFailure",
                                 failurePolicy={"type": "Continue", "restartLimit": 1}), nodes=1, hold=7.0),
    # ---- pause (Z1, Z4) and deadlines (D3) ----
    Case("bcj-unpause", "BroadcastJob",
         lambda pool, nodes: bcj("dj-unpause", pool, notes=outcome(), paused=True),
         during=((2.0, set_spec(("paused",), False)),)),
    Case("bcj-pause-while-running", "BroadcastJob",
         lambda pool, nodes: bcj("dj-pausing", pool, notes=LONG), hold=9.0,
         during=((1.5, set_spec(("paused",), True)),)),
    Case("bcj-deadline-continue", "BroadcastJob",
         lambda pool, nodes: bcj("dj-deadline2", pool, notes=outcome(result=None, fail_nodes=nodes[0]),
                                 failurePolicy={"type": "Continue"},
                                 completionPolicy={"type": "Always", "activeDeadlineSeconds": 4})),
    # ---- TTL (T1, T7) ----
    Case("bcj-ttl-completed", "BroadcastJob",
         lambda pool, nodes: bcj("dj-ttl", pool, notes=outcome(),
                                 completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 2}), ttl=True),
    Case("bcj-ttl-failed", "BroadcastJob",
         lambda pool, nodes: bcj("dj-ttlfail", pool, notes=outcome(result="Failed"),
                                 completionPolicy={"type": "Always", "ttlSecondsAfterFinished": 2}),
         nodes=1, ttl=True),
    # ---- node churn while the job runs (L1, L3, L4, L5, L6) ----
    Case("bcj-node-added", "BroadcastJob", lambda pool, nodes: bcj("dj-joined", pool, notes=LONG), nodes=2,
         during=((1.5, add_node),)),
    # A Never job: an Always job's counts freeze when it completes, which may be before or after the pod on the
    # removed node finishes; a Never job's counts follow the pods to the end.
    Case("bcj-node-removed", "BroadcastJob",
         lambda pool, nodes: bcj("dj-removed", pool, notes=outcome(after="3s"), completionPolicy={"type": "Never"}),
         hold=9.0, during=((1.5, delete_node(0)),)),
    Case("bcj-node-cordoned", "BroadcastJob", lambda pool, nodes: bcj("dj-cordoned", pool, notes=LONG),
         during=((1.5, patch_node(0, {"spec": {"unschedulable": True}})),)),
    Case("bcj-node-tainted", "BroadcastJob", lambda pool, nodes: bcj("dj-tainted", pool, notes=LONG),
         during=((1.5, patch_node(0, {"spec": {"taints": [TAINT]}})),)),
    Case("bcj-node-unlabelled", "BroadcastJob", lambda pool, nodes: bcj("dj-unlabelled", pool, notes=LONG),
         during=((1.5, patch_node(0, {"metadata": {"labels": {"pool": None}}})),)),
    Case("bcj-node-uncordoned", "BroadcastJob", lambda pool, nodes: bcj("dj-uncordoned", pool, notes=LONG),
         extra_nodes=((1, {"unschedulable": True}),),
         during=((1.5, patch_node(0, {"spec": {"unschedulable": False}}, extra=True)),)),
    Case("bcj-never-node-joins", "BroadcastJob",
         lambda pool, nodes: bcj("dj-nevernode", pool, notes=outcome(), completionPolicy={"type": "Never"}),
         nodes=2, hold=9.0, during=((4.0, add_node),)),
    Case("bcj-kruise-tutorial-download-image", "BroadcastJob",
         lambda pool, nodes: kruise_sample("download-image", pool, outcome(after="0s"),
                                           {"type": "Always", "ttlSecondsAfterFinished": 60},
                                           {"name": "guestbook", "image": "openkruise/guestbook:v3",
                                            "command": ["echo", "started"]}),
         source="kruise docs/tutorial/broadcastjob.md (pre-download image)"),
]
