"""The TFJob cases of the differential corpus (checklist groups of the TFJob spec, §5)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from corpus_common import Case, fail_until, outcome, set_spec

TF = "kubeflow.org/v1"
Q1_DEADLINE = ("Δ Q1 (training-operator #3358, intended fix): upstream checks activeDeadlineSeconds only when some "
               "other event makes it reconcile, so a job whose pods just run is never failed; ours wakes up at the "
               "deadline, fails the job (TFJobFailed) and cleans up per cleanPodPolicy")
Q5_BACKOFF_CLEANUP = ("Q5 (training-operator #3419, follows v1.9.4 by design): v1.9.0 deletes every pod and service of "
                      "a job failed by backoffLimit, ignoring cleanPodPolicy (None here); ours applies cleanPodPolicy "
                      "as v1.9.4 does, so the failed job's pod and service stay")
Q5_EXPLAINED = {r"^(pods|services)\.": Q5_BACKOFF_CLEANUP,
                r"^events\.<job>: only upstream: SuccessfulDelete(Pod|Service): ": Q5_BACKOFF_CLEANUP}

def replica(count: int, notes: Mapping[str, str], policy: str = "Never", port: bool = True,
            container: str = "tensorflow") -> dict[str, Any]:
    spec: dict[str, Any] = {"name": container, "image": "tensorflow/tensorflow:2.9.1"}
    if port:
        spec["ports"] = [{"name": "tfjob-port", "containerPort": 2222}]
    return {"replicas": count, "restartPolicy": policy,
            "template": {"metadata": {"annotations": dict(notes)}, "spec": {"containers": [spec]}}}


def tfjob(name: str, replicas: Mapping[str, Any], success_policy: str | None = None,
          **run_policy: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"tfReplicaSpecs": copy.deepcopy(dict(replicas))}
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    if run_policy:
        spec["runPolicy"] = run_policy
    return {"apiVersion": TF, "kind": "TFJob", "metadata": {"name": name}, "spec": spec}


def chief_ps_workers(chief: Mapping[str, str], worker: Mapping[str, str],
                     ps: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"Chief": replica(1, chief), "PS": replica(1, outcome(result=None) if ps is None else ps),
            "Worker": replica(2, worker)}


def unschedulable(spec: dict[str, Any]) -> dict[str, Any]:
    """A replica whose pods select no node, so they stay Pending."""
    spec["template"]["spec"]["nodeSelector"] = {"sim.airflow-broadcast.io/no-such-pool": "true"}
    return spec


def retried(name: str, policy: str, **notes: str) -> dict[str, Any]:
    """One worker whose first pod fails (within 2 s of the start) and whose re-created pod succeeds."""
    return tfjob(name, {"Worker": replica(1, outcome(fail_until=fail_until(2), **notes), policy=policy)})


def tf_case(case_id: str, build: Any, **options: Any) -> Case:
    """A TFJob case: its replicas land on the cluster's general nodes, so it makes no pool."""
    return Case(case_id, "TFJob", lambda pool, nodes: build(), nodes=0, **options)


# Workers scripted to end at the same moment race: worker 0's end succeeds a job without a chief, and an engine
# that saw another worker end first (in that pass or an earlier one) records its exit, one that did not, none.
SAME_TIME_EXITS = ("timing of the scenario, not an engine difference: the workers end at the same scripted time and "
                   "worker 0's success ends the job, so whether an engine saw another worker's exit before that "
                   "(and recorded `ExitedWithCode` for it) depends on which pod's update reached it first")
SAME_TIME_EXPLAINED = {r"^events\.<job>: only (upstream|ours): ExitedWithCode: Pod: <ns>\.<job>-worker-[1-9]\d* "
                       r"exited with code 0$": SAME_TIME_EXITS}

# With cleanPodPolicy Running, the same race decides whether a worker ending with worker 0 is deleted: ours applies
# the policy in the pass that finishes the job, upstream in its next reconcile (a documented difference).
RUNNING_CLEANUP_RACE = ("timing of the scenario, not an engine difference: worker 1 ends at the same scripted time as "
                        "worker 0, whose success ends the job; cleanPodPolicy Running deletes it only if it was still "
                        "Running when the policy was applied, which ours does in the finishing pass and upstream in "
                        "its next reconcile (docs/tfjob.md, deliberate differences)")
RUNNING_CLEANUP_EXPLAINED = {
    **SAME_TIME_EXPLAINED,
    r"^pods\.worker-[1-9]\d*: ": RUNNING_CLEANUP_RACE,
    r"^services\.<job>-worker-[1-9]\d*: ": RUNNING_CLEANUP_RACE,
    r"^events\.<job>: only (upstream|ours): SuccessfulDelete(Pod|Service): Deleted (pod|service): "
    r"<job>-worker-[1-9]\d*$": RUNNING_CLEANUP_RACE}

# Workers scripted to fail together: when the second failure reaches upstream after the pass that failed the job,
# upstream reconciles the failed job once more (recording TFJobFailed on every pass, E8); the task ended.
LATE_SECOND_FAILURE = ("timing of the scenario: both workers fail at the same scripted time; when the second failure "
                       "reached upstream after the pass that failed the job, upstream reconciled the failed job once "
                       "more and recorded that worker's exit and a second `TFJobFailed` counting both (it records "
                       "that event on every pass, E8); our task ends with the failing pass, so only its first")
LATE_FAILURE_EXPLAINED = {
    r"^events\.<job>: only upstream: ExitedWithCode: Pod: <ns>\.<job>-worker-[1-9]\d* exited with code 1$":
        LATE_SECOND_FAILURE,
    r"^events\.<job>: only upstream: TFJobFailed: TFJob <ns>/<job> has failed because 2 Worker replica\(s\) "
    r"failed\.$": LATE_SECOND_FAILURE}

RUNS = outcome(result=None)
FAILS = outcome(result="Failed", exit_code="1")

TF_CASES = [
    tf_case("tf-chief-ps-workers-clean-running",
            lambda: tfjob("dj-cpw", chief_ps_workers(outcome(after="4s"), outcome()), cleanPodPolicy="Running")),
    tf_case("tf-workers-succeed", lambda: tfjob("dj-workers", {"Worker": replica(2, outcome())})),
    tf_case("tf-worker-fails-never", lambda: tfjob("dj-wfail", {"Worker": replica(2, FAILS)}),
            explained=LATE_FAILURE_EXPLAINED),
    tf_case("tf-clean-all",
            lambda: tfjob("dj-cleanall", chief_ps_workers(outcome(after="3s"), outcome()), cleanPodPolicy="All")),
    tf_case("tf-clean-none",
            lambda: tfjob("dj-cleannone", chief_ps_workers(outcome(after="3s"), outcome()), cleanPodPolicy="None")),
    tf_case("tf-deadline", lambda: tfjob("dj-tf-deadline", {"Worker": replica(1, RUNS)}, activeDeadlineSeconds=3),
            explained={".": Q1_DEADLINE}, upstream_timeout=15.0),
    tf_case("tf-exitcode-permanent",
            lambda: tfjob("dj-exitcode", {"Worker": replica(1, FAILS, policy="ExitCode")})),
    tf_case("tf-onfailure-restarts",
            lambda: tfjob("dj-onfailure", {"Worker": replica(1, outcome(restarts="1"), policy="OnFailure")})),
    tf_case("tf-success-all-workers",
            lambda: tfjob("dj-allworkers", {"Worker": replica(2, outcome())}, success_policy="AllWorkers")),
    tf_case("tf-chief-evaluator-worker",
            lambda: tfjob("dj-evaluator", {"Chief": replica(1, outcome(after="3s")), "Evaluator": replica(1, RUNS),
                                           "Worker": replica(1, outcome())}, cleanPodPolicy="Running")),
    tf_case("tf-master-worker",
            lambda: tfjob("dj-master", {"Master": replica(1, outcome(after="2s")), "Worker": replica(2, outcome())})),
    tf_case("tf-ps-workers",
            lambda: tfjob("dj-psworkers", {"PS": replica(2, RUNS), "Worker": replica(2, outcome())},
                          cleanPodPolicy="Running"), explained=RUNNING_CLEANUP_EXPLAINED),
    tf_case("tf-always", lambda: tfjob("dj-always", {"Worker": replica(1, outcome(), policy="Always")})),
    tf_case("tf-exitcode-retryable", lambda: retried("dj-retry", "ExitCode", exit_code="137")),
    tf_case("tf-backoff-onfailure",
            lambda: tfjob("dj-backoff", {"Worker": replica(1, outcome(result=None, restarts="3"), policy="OnFailure")},
                          backoffLimit=1), explained=Q5_EXPLAINED),
    tf_case("tf-suspended-at-creation",
            lambda: tfjob("dj-suspend", {"Worker": replica(2, outcome())}, suspend=True), hold=5.0),
    tf_case("tf-sample-simple",
            lambda: tfjob("tfjob-simple", {"Worker": replica(2, outcome(), policy="OnFailure", port=False)}),
            source="training-operator examples/tensorflow/simple.yaml (command dropped, outcome scripted)"),
    # ---- success and failure rules (F7, F10-F12, F19, F21) ----
    # The workers finish after the chief failed: a failed job's counts are not updated again.
    tf_case("tf-chief-fails", lambda: tfjob("dj-chieffail", chief_ps_workers(FAILS, outcome(after="4s")))),
    tf_case("tf-ps-fails-while-chief-runs",
            lambda: tfjob("dj-psfail", chief_ps_workers(RUNS, RUNS, ps=outcome(result="Failed", exit_code="2")),
                          cleanPodPolicy="Running")),
    tf_case("tf-master-fails",
            lambda: tfjob("dj-masterfail", {"Master": replica(1, FAILS), "Worker": replica(1, RUNS)},
                          cleanPodPolicy="All")),
    tf_case("tf-chief-done-workers-run-clean-none",
            lambda: tfjob("dj-keeprun", {"Chief": replica(1, outcome(after="2s")), "Worker": replica(2, RUNS)},
                          cleanPodPolicy="None")),
    tf_case("tf-all-workers-one-fails",
            lambda: tfjob("dj-allfail", {"Worker": replica(2, outcome(result="Failed", after="2s"))},
                          success_policy="AllWorkers", cleanPodPolicy="All"), explained=LATE_FAILURE_EXPLAINED),
    tf_case("tf-ps-only", lambda: tfjob("dj-psonly", {"PS": replica(1, outcome())}), hold=6.0),
    tf_case("tf-evaluator-only", lambda: tfjob("dj-evalonly", {"Evaluator": replica(1, outcome())}), hold=6.0),
    # ---- restart policies (E6, E7) ----
    tf_case("tf-onfailure-pod-failed", lambda: retried("dj-onfail-pod", "OnFailure")),
    tf_case("tf-always-pod-failed", lambda: retried("dj-always-pod", "Always")),
    tf_case("tf-exitcode-sigterm", lambda: retried("dj-sigterm", "ExitCode", exit_code="143")),
    # ---- backoffLimit (J2, J5, J7) ----
    tf_case("tf-backoff-zero",
            lambda: tfjob("dj-backoff0", {"Worker": replica(1, outcome(result=None, restarts="1"), policy="OnFailure")},
                          backoffLimit=0), explained=Q5_EXPLAINED),
    tf_case("tf-backoff-clean-all",
            lambda: tfjob("dj-backoffall", {"Worker": replica(2, outcome(result=None, restarts="2"),
                                                              policy="OnFailure"),
                                            "PS": replica(1, RUNS)}, backoffLimit=2, cleanPodPolicy="All")),
    tf_case("tf-backoff-not-reached",
            lambda: tfjob("dj-backoffok", {"Worker": replica(1, outcome(restarts="2"), policy="OnFailure")},
                          backoffLimit=5)),
    # ---- cleanPodPolicy on pending pods (G2), suspend and resume (K2-K4), TTL (H2) ----
    tf_case("tf-clean-running-pending",
            lambda: tfjob("dj-pending", {"Chief": replica(1, outcome(after="3s")),
                                         "PS": unschedulable(replica(1, RUNS))},
                          cleanPodPolicy="Running")),
    tf_case("tf-resume", lambda: tfjob("dj-resume", {"Worker": replica(2, outcome(after="2s"))}, suspend=True),
            during=((2.0, set_spec(("runPolicy", "suspend"), False)),), explained=SAME_TIME_EXPLAINED),
    tf_case("tf-suspend-while-running", lambda: tfjob("dj-suspending", {"Worker": replica(2, RUNS)}),
            hold=7.0, during=((2.5, set_spec(("runPolicy", "suspend"), True)),)),
    tf_case("tf-ttl-succeeded",
            lambda: tfjob("dj-tf-ttl", {"Worker": replica(1, outcome())}, ttlSecondsAfterFinished=2), ttl=True),
    tf_case("tf-ttl-failed",
            lambda: tfjob("dj-tf-ttlfail", {"Worker": replica(1, FAILS)}, ttlSecondsAfterFinished=2), ttl=True),
    tf_case("tf-e2e-dist-mnist",
            lambda: tfjob("dist-mnist-for-e2e-test", {
                "PS": replica(2, RUNS, policy="OnFailure", port=False),
                "Worker": replica(4, outcome(after="2s"), policy="OnFailure", port=False)}),
            source="training-operator test/e2e/dist-mnist/README.md (v1alpha2 there: containers renamed `tensorflow` "
                   "as v1 requires, image dropped, outcome scripted)", explained=SAME_TIME_EXPLAINED),
    tf_case("tf-abnormal-pod-image-pull",
            lambda: tfjob("dj-pullfail", {"Worker": replica(1, outcome(result=None, image_pull="fail"))}), hold=6.0),
]
