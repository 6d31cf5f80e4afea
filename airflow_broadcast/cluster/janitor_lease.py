"""The TTL janitor's heartbeat: one `coordination.k8s.io/v1` Lease per namespace it watches.

The janitor renews the Lease `airflow-broadcast-ttl-janitor` every few seconds (RBAC: `get`, `create`,
`update`), naming itself as the holder. A task on a worker, which cannot see Airflow's database, reads it
at submission to tell whether expired records of that namespace will be cleaned up; people see it with
`kubectl get lease`. It is a heartbeat, not a lock: deleting an expired record is idempotent, so two
janitors may both renew it.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from airflow_broadcast.cluster.api_errors import AlreadyExists, ClusterApiError, Conflict, NotFound
from airflow_broadcast.cluster.job_records import MANAGED_BY, MANAGED_BY_LABEL
from airflow_broadcast.cluster.kube_client import JsonDict, KubeClient
from airflow_broadcast.specs.timestamps import from_rfc3339

log = logging.getLogger(__name__)
LEASE_NAME = "airflow-broadcast-ttl-janitor"
LEASE_SECONDS = 15
RENEW_SECONDS = 5.0


def leases_path(namespace: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


def lease_path(namespace: str) -> str:
    return f"{leases_path(namespace)}/{LEASE_NAME}"


def micro_time(epoch: float) -> str:
    """metav1.MicroTime, the format of a Lease's renewTime and acquireTime."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseState:
    """Who renewed a namespace's janitor lease last, when (epoch), and for how long it holds."""

    holder: str
    renewed: float | None
    duration: float

    def age(self, now: float) -> float | None:
        return None if self.renewed is None else now - self.renewed

    def expired(self, now: float) -> bool:
        """Not renewed within its duration: the janitor that held it stopped (or never renewed it)."""
        return self.renewed is None or now > self.renewed + self.duration


async def read_lease(client: KubeClient, namespace: str) -> LeaseState | None:
    """The namespace's janitor lease, or None when there is none; a refused read raises ClusterApiError."""
    try:
        lease = await client.get(lease_path(namespace))
    except NotFound:
        return None
    spec = lease.get("spec") or {}
    return LeaseState(holder=str(spec.get("holderIdentity") or ""), renewed=from_rfc3339(spec.get("renewTime")),
                      duration=float(spec.get("leaseDurationSeconds") or LEASE_SECONDS))


async def renew_lease(client: KubeClient, namespace: str, holder: str, now: float,
                      current: JsonDict | None = None) -> JsonDict:
    """Renew (or create) the lease as `holder` and return it as stored; `current`, the lease as this holder last
    stored it, saves a read. A new holder stamps acquireTime and counts a transition, as leader election does.
    Written with `update` (a PUT carrying the resourceVersion): a concurrent writer gets a Conflict."""
    if current is None:
        try:
            current = await client.get(lease_path(namespace))
        except NotFound:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": LEASE_NAME, "namespace": namespace,
                                 "labels": {MANAGED_BY_LABEL: MANAGED_BY}},
                    "spec": {"holderIdentity": holder, "leaseDurationSeconds": LEASE_SECONDS,
                             "acquireTime": micro_time(now), "renewTime": micro_time(now), "leaseTransitions": 0}}
            return await client.create(leases_path(namespace), body)
    lease = copy.deepcopy(current)
    spec = lease.setdefault("spec", {})
    if spec.get("holderIdentity") != holder:
        spec["acquireTime"] = micro_time(now)
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
    spec.update(holderIdentity=holder, leaseDurationSeconds=LEASE_SECONDS, renewTime=micro_time(now))
    return await client.replace(lease_path(namespace), lease)


async def keep_leases(client: KubeClient, namespaces: Sequence[str], holder: str,
                      every: float = RENEW_SECONDS) -> None:
    """Renew every namespace's lease until cancelled. A failure is logged when it starts and when it ends; a
    conflict (another janitor renewed it meanwhile) just reads the lease again next time."""
    stored: dict[str, JsonDict] = {}
    failing: dict[str, str] = {}

    async def renew(namespace: str, now: float) -> None:
        try:
            stored[namespace] = await renew_lease(client, namespace, holder, now, stored.get(namespace))
        except (Conflict, AlreadyExists):
            stored.pop(namespace, None)
            return
        except ClusterApiError as exc:
            stored.pop(namespace, None)
            if failing.get(namespace) != exc.describe():
                log.warning("TTL janitor cannot renew its lease in %s: %s", namespace, exc.describe())
            failing[namespace] = exc.describe()
            return
        if failing.pop(namespace, None) is not None:
            log.info("TTL janitor renews its lease in %s again", namespace)

    while True:
        await asyncio.gather(*(renew(namespace, time.time()) for namespace in namespaces))
        await asyncio.sleep(every)
