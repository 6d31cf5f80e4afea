"""Run one job through the real scheduler and triggerer, SIGKILLing the triggerer at seeded points on the way.

A kill point is a state the cluster shows, never a sleep: `pods` (at least N pods created,
which lands inside a slow-start create batch), `unwritten` (pods exist that the record's status
does not count yet: between a create and the status write), `finished` (the status says the job
finished: the trigger fires its event around the kill) and `ttl` (the record of a job with
ttlSecondsAfterFinished 0 is being deleted by the resumed task). After each kill either a new
triggerer starts (`restart`) or the one already standing by takes over (`standby`).
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from crash_jobs import CrashJob, succeed_after
from crash_watch import JobWatch, PodCount, count_pods, counted
from kubernetes import client

from devcluster.airflow_env import AirflowEnv
from devcluster.airflow_stack import AirflowStack, Component, StackSettings

ACTION_GRACE = 0.5  # a dead triggerer's last in-flight request may land this long after the kill
TERMINAL = ("success", "failed")


@dataclass(frozen=True)
class KillPoint:
    what: str  # pods | unwritten | finished | ttl
    at: int = 0
    mode: str = "restart"  # restart | standby


@dataclass
class Kill:
    """One SIGKILL: where it landed (pods created, pods the status counted) and how long the takeover took."""

    point: KillPoint
    at: float
    pods: int
    counted: int
    phase: str
    pending: bool = True  # the job had work left for a trigger: its record stood and did not say finished
    assigned_after: float | None = None
    acted_after: float | None = None


@dataclass
class RunResult:
    state: str
    xcom: Any
    pods: PodCount
    kills: list[Kill] = field(default_factory=list)
    seconds: float = 0.0
    logs: str = ""

    def describe(self) -> str:
        """The figures of the run, for a failing assertion."""
        kills = [(k.point.what, k.point.at, k.point.mode, k.pods, k.counted, k.phase, k.pending, k.assigned_after,
                  k.acted_after) for k in self.kills]
        return f"{self.state} in {self.seconds:.0f} s; {self.pods}; kills {kills}"


def seeded_points(rng: random.Random, size: int, pods_kills: int, extra: tuple[str, ...],
                  mode: str) -> list[KillPoint]:
    """`pods_kills` points at N pods (N from 1..size-1, ascending) and the `extra` kinds of point (`unwritten`
    first); one takeover `mode` for the whole run, as a deployment has a standby triggerer or has none."""
    counts = sorted(rng.sample(range(1, size), pods_kills))
    points = [KillPoint("pods", n, mode) for n in counts]
    later = [KillPoint(what, 0, mode) for what in extra]
    return ([p for p in later if p.what == "unwritten"] + points + [p for p in later if p.what != "unwritten"])


def _reached(point: KillPoint, watched: JobWatch, finished: Any) -> bool:
    status = watched.status()
    if point.what == "pods":
        return watched.pods_alive() >= point.at
    if point.what == "unwritten":
        return watched.pods_alive() > counted(status)
    if point.what == "finished":
        return bool(status) and bool(finished(status))
    last = watched.last_record()
    return last is not None and (last.type == "DELETED" or bool(last.obj["metadata"].get("deletionTimestamp")))


def crash_stack(env: AirflowEnv) -> AirflowStack:
    """Every component; new DAGs start unpaused so that the REST API can run them at once."""
    return AirflowStack(env, settings=StackSettings(extra_env={"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False"}))


class CrashRunner:
    """Drives DAG runs on one stack; keeps one triggerer (plus one on standby when a point asks for it)."""

    def __init__(self, stack: AirflowStack, core: client.CoreV1Api) -> None:
        self.stack, self.core = stack, core

    def triggerers(self) -> list[Component]:
        return [c for c in self.stack.processes if c.name == "triggerer" and c.running()]

    def _owner(self, dag_id: str, run_id: str) -> int | None:
        with sqlite3.connect(self.stack.airflow_env.home / "airflow.db", timeout=30) as db:
            row = db.execute("SELECT t.triggerer_id FROM trigger t JOIN task_instance ti ON ti.trigger_id = t.id "
                             "WHERE ti.dag_id = ? AND ti.run_id = ?", (dag_id, run_id)).fetchone()
        return int(row[0]) if row and row[0] is not None else None

    def run(self, job: CrashJob, namespace: str, points: list[KillPoint], timeout: float = 900.0) -> RunResult:
        """Run `job` once, killing the triggerer at `points` (those before the job finishes come first)."""
        started, deadline, dag_id, finished = time.monotonic(), time.monotonic() + timeout, job.dag_id, job.finished()
        self._triggerers_for(points[0].mode if points else "restart")
        with JobWatch(self.core, namespace) as watched:
            run_id = self.stack.api("POST", f"/api/v2/dags/{dag_id}/dagRuns",
                                    {"logical_date": None, "conf": {"manifest": job.manifest, "namespace": namespace}}
                                    )["dag_run_id"]
            early = [p for p in points if p.what in ("pods", "unwritten")]
            kills = [kill for point in early if (kill := self._kill_at(point, watched, dag_id, run_id, finished,
                                                                         deadline))]
            if job.release:
                self._release(job, watched, namespace, deadline)
            kills += [kill for point in points if point not in early
                      and (kill := self._kill_at(point, watched, dag_id, run_id, finished, deadline))]
            state = self._wait_run(dag_id, run_id, started + timeout)
            xcom = self._xcom(dag_id, run_id) if state == "success" else None
            time.sleep(1)  # let the last watch events arrive
        for kill in kills:  # the new trigger can act only once it holds the trigger
            acted = watched.first_action_after(kill.at + max(ACTION_GRACE, kill.assigned_after or 0))
            kill.acted_after = None if acted is None else acted - kill.at
        return RunResult(state, xcom, count_pods(watched.pods.snapshot(), set(job.slots)), kills,
                         time.monotonic() - started, self.stack.log_tails(40))

    def _release(self, job: CrashJob, watched: JobWatch, namespace: str, deadline: float) -> None:
        """Once every slot has its pod and the status counts them all, end the pod that keeps the job running
        (kwok: it succeeds). Released earlier, a job whose trigger is down at that moment goes from Created straight
        to Succeeded, without the Running condition an uncrashed run records."""
        while (count_pods(watched.pods.snapshot(), set(job.slots)).slots < job.size
               or counted(watched.status()) < job.size) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.core.patch_namespaced_pod(job.release, namespace, {"metadata": {"annotations": succeed_after(0)}})

    def _kill_at(self, point: KillPoint, watched: JobWatch, dag_id: str, run_id: str, finished: Any,
                 deadline: float) -> Kill | None:
        checked = time.monotonic()
        while not _reached(point, watched, finished):
            if time.monotonic() - checked > 1:  # a REST call per second, not per look at the watches
                if time.monotonic() > deadline or self._state(dag_id, run_id) in TERMINAL:
                    return None  # the run ended before the point was reached: no kill there
                checked = time.monotonic()
            time.sleep(0.02)
        owner = self._owner(dag_id, run_id)
        victim = next((c for c in self.triggerers() if c.job_id == owner), None) or self.triggerers()[-1]
        status, last = watched.status(), watched.last_record()
        pending = last is not None and last.type != "DELETED" and not last.obj["metadata"].get("deletionTimestamp") \
            and not finished(status)
        kill = Kill(point, time.time(), watched.pods_alive(), counted(status), str(status.get("phase", "")), pending)
        self.stack.kill(victim)
        if owner is not None and victim.job_id == owner:
            waiter = threading.Thread(target=self._await_owner, args=(kill, dag_id, run_id, owner), daemon=True)
            waiter.start()
        else:
            waiter = None
        if not self.triggerers():
            self.stack.start_triggerer()
        if waiter is not None:
            waiter.join(timeout=120)
        if point.mode == "standby":
            self.stack.start_triggerer()  # the next standby, once the takeover is done
        return kill

    def _triggerers_for(self, mode: str) -> None:
        """Two triggerers for a standby run, one for a restart run (the newest keeps running)."""
        while mode == "standby" and len(self.triggerers()) < 2:
            self.stack.start_triggerer()
        for extra in self.triggerers()[:-1] if mode == "restart" else []:
            self.stack.terminate(extra)

    def _await_owner(self, kill: Kill, dag_id: str, run_id: str, dead: int) -> None:
        """Takeover, as Airflow sees it: the trigger row names a live triggerer again."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            owner = self._owner(dag_id, run_id)
            if owner is not None and owner != dead:
                kill.assigned_after = time.time() - kill.at
                return
            if self._state(dag_id, run_id) in TERMINAL:
                return
            time.sleep(0.1)

    def _state(self, dag_id: str, run_id: str) -> str:
        return str(self.stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"])

    def _wait_run(self, dag_id: str, run_id: str, deadline: float) -> str:
        while (state := self._state(dag_id, run_id)) not in TERMINAL:
            if time.monotonic() > deadline:
                return f"timeout ({state})"
            time.sleep(1)
        return state

    def _xcom(self, dag_id: str, run_id: str) -> Any:
        entry = self.stack.api("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/job/xcomEntries/"
                                      "return_value?deserialize=true")
        value = entry["value"]
        return json.loads(value) if isinstance(value, str) else value


TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def normalized(value: Any, uid: str, namespace: str) -> Any:
    """An XCom without what differs between two runs of the same job: times, the record uid, the namespace,
    and the uid-derived hash in BroadcastJob pod names."""
    if isinstance(value, dict):
        return {normalized(k, uid, namespace): normalized(v, uid, namespace) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v, uid, namespace) for v in value]
    if isinstance(value, str):
        text = TIMESTAMP.sub("<time>", value.replace(uid, "<uid>").replace(namespace, "<ns>"))
        return re.sub(r"-[0-9a-f]{10}\b", "-<hash>", text)
    return value


def xcom_signature(result: RunResult, namespace: str) -> Any:
    """The normalized XCom. A BroadcastJob's `ineligibleNodes` names every other node of the cluster, which other
    tests add and remove meanwhile, so only the job's own nodes (none may be ineligible) are compared."""
    xcom = dict(result.xcom or {})
    if "ineligibleNodes" in xcom:
        xcom["ineligibleNodes"] = {n: why for n, why in xcom["ineligibleNodes"].items() if n in xcom.get("nodes", {})}
    return normalized(xcom, str(xcom.get("uid", "")), namespace)
