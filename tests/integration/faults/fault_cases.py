"""The catalogue of fault cases: which faults the proxy injects on which requests of one small job.

Rules target the test's namespace only (other tests share the apiserver, not the proxy,
but the node watch is cluster-wide). Probabilistic cases draw from a fixed seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from devcluster.fault_rules import DELAY, GARBLE, RESET, RESET_AFTER, STATUS, WATCH_CUT, WATCH_GONE, FaultRule
from tests.integration.faults.fault_harness import BCJ, TF


@dataclass(frozen=True)
class FaultCase:
    """`rules(namespace)` builds the proxy's rules; `expect` lists faults that must really be injected.

    Every Retry-After the proxy sends must be followed by the same request again, unless `chaos`
    (random faults also hit event posts, which are best effort and never retried).
    """

    name: str
    kind: str
    rules: Callable[[str], list[FaultRule]]
    expect: tuple[str, ...]
    seed: int = 0
    chaos: bool = False


def _api(ns: str, resource: str) -> str:
    """The path regex of a collection (`pods`) or its items (`configmaps/[^/]+`) in the test's namespace."""
    return rf"^/api/v1/namespaces/{ns}/{resource}$"


def _chaos(ns: str) -> list[FaultRule]:
    """Seeded: about one request in five of the namespace's plain requests fails one way or another."""
    scope = rf"^/api/v1/namespaces/{ns}/"
    return [FaultRule(STATUS, path=scope, watch=False, status=429, retry_after=1, times=2, probability=0.06),
            FaultRule(STATUS, path=scope, watch=False, status=500, times=3, probability=0.05),
            FaultRule(STATUS, path=scope, watch=False, status=503, times=3, probability=0.05),
            FaultRule(RESET, path=scope, watch=False, times=3, probability=0.05)]


CASES: tuple[FaultCase, ...] = (
    FaultCase("429-retry-after-on-pod-create", BCJ, lambda ns: [
        FaultRule(STATUS, "POST", _api(ns, "pods"), status=429, retry_after=2, times=2)], (STATUS,)),
    FaultCase("500-on-pod-create", BCJ, lambda ns: [
        FaultRule(STATUS, "POST", _api(ns, "pods"), status=500, times=2)], (STATUS,)),
    FaultCase("503-on-record-write", BCJ, lambda ns: [
        FaultRule(STATUS, "PUT", _api(ns, "configmaps/[^/]+"), status=503, times=2)], (STATUS,)),
    FaultCase("reset-before-pod-create", BCJ, lambda ns: [
        FaultRule(RESET, "POST", _api(ns, "pods"), times=2)], (RESET,)),
    FaultCase("reset-after-pod-create", BCJ, lambda ns: [
        FaultRule(RESET_AFTER, "POST", _api(ns, "pods"), times=2)], (RESET_AFTER,)),
    FaultCase("reset-after-record-write", BCJ, lambda ns: [
        FaultRule(RESET_AFTER, "PUT", _api(ns, "configmaps/[^/]+"), times=1)], (RESET_AFTER,)),
    FaultCase("slow-5s-pod-create-and-list", BCJ, lambda ns: [
        FaultRule(DELAY, "POST", _api(ns, "pods"), delay=5.0, times=1),
        FaultRule(DELAY, "GET", _api(ns, "pods"), watch=False, delay=5.0, times=1)], (DELAY,)),
    FaultCase("watch-http-410", BCJ, lambda ns: [
        FaultRule(STATUS, "GET", _api(ns, "pods"), watch=True, status=410, times=2)], (STATUS,)),
    FaultCase("watch-error-event-410", BCJ, lambda ns: [
        FaultRule(WATCH_GONE, "GET", _api(ns, "pods"), times=2),
        FaultRule(WATCH_GONE, "GET", _api(ns, "configmaps"), times=1)], (WATCH_GONE,)),
    FaultCase("watch-cut-mid-event", BCJ, lambda ns: [
        FaultRule(WATCH_CUT, "GET", _api(ns, "pods"), after_events=1, times=3),
        FaultRule(WATCH_CUT, "GET", _api(ns, "configmaps"), after_events=1, times=2)], (WATCH_CUT,)),
    # The record list is slowed so that the (empty) pod cache has already seen its watch throttled
    # when the loop waits for it: synced once, it must not count as never synced.
    FaultCase("429-retry-after-on-watch", BCJ, lambda ns: [
        FaultRule(STATUS, "GET", _api(ns, "pods"), watch=True, status=429, retry_after=2, times=1),
        FaultRule(DELAY, "GET", _api(ns, "configmaps"), watch=False, delay=1.0, times=1)], (STATUS, DELAY)),
    FaultCase("garbled-list-answers", BCJ, lambda ns: [
        FaultRule(GARBLE, "GET", _api(ns, "pods"), times=1),
        FaultRule(GARBLE, "GET", r"^/api/v1/nodes$", times=1)], (GARBLE,)),
    FaultCase("tfjob-429-services-503-pods", TF, lambda ns: [
        FaultRule(STATUS, "POST", _api(ns, "services"), status=429, retry_after=1, times=1),
        FaultRule(STATUS, "POST", _api(ns, "pods"), status=503, times=2)], (STATUS,)),
    FaultCase("tfjob-watch-cut-and-410", TF, lambda ns: [
        FaultRule(WATCH_CUT, "GET", _api(ns, "pods"), after_events=1, times=2),
        FaultRule(WATCH_GONE, "GET", _api(ns, "services"), times=1)], (WATCH_CUT, WATCH_GONE)),
    FaultCase("tfjob-reset-after-create", TF, lambda ns: [
        FaultRule(RESET_AFTER, "POST", _api(ns, "pods"), times=1),
        FaultRule(RESET_AFTER, "POST", _api(ns, "services"), times=1)], (RESET_AFTER,)),
    FaultCase("bcj-seeded-chaos", BCJ, _chaos, (), seed=7, chaos=True),
    FaultCase("tfjob-seeded-chaos", TF, _chaos, (), seed=11, chaos=True),
)
