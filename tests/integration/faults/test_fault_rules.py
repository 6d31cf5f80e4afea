"""The proxy's rules and request log on their own (no cluster): matching, seeded draws, rates, Retry-After gaps."""

from __future__ import annotations

import random

import pytest

from devcluster.fault_rules import RESET, STATUS, WATCH_CUT, FaultRule, RequestLog, RequestRecord


def test_a_rule_matches_method_path_and_watch() -> None:
    rule = FaultRule(STATUS, "POST", r"/namespaces/a/pods$", watch=False)
    assert rule.matches("POST", "/api/v1/namespaces/a/pods", watch=False)
    assert not rule.matches("GET", "/api/v1/namespaces/a/pods", watch=False)
    assert not rule.matches("POST", "/api/v1/namespaces/b/pods", watch=False)
    assert not rule.matches("POST", "/api/v1/namespaces/a/pods", watch=True)
    assert FaultRule(WATCH_CUT).watch is True, "a watch fault only ever matches watches"


def test_a_rule_skips_then_fires_at_most_times() -> None:
    rule = FaultRule(RESET, skip=1, times=2)
    fired = [rule.draw(random.Random(0)) for _ in range(5)]
    assert fired == [False, True, True, False, False]
    assert (rule.matched, rule.fired) == (5, 2)


def test_probabilistic_rules_fire_the_same_way_for_the_same_seed() -> None:
    def draws(seed: int) -> list[bool]:
        rule, rng = FaultRule(RESET, times=0, probability=0.3), random.Random(seed)
        return [rule.draw(rng) for _ in range(200)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert 30 <= sum(draws(7)) <= 90


def test_an_unknown_fault_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        FaultRule("explode")


def _record(at: float, key: str = "GET /x", *, path: str = "/x", watch: bool = False, status: int = 200,
            retry_after: int | None = None) -> RequestRecord:
    return RequestRecord(at, "GET", path, key, watch, "status" if status == 429 else "", status, retry_after)


def test_rates_give_the_mean_and_the_busiest_second() -> None:
    log = RequestLog()
    for at in (100.1, 100.2, 100.3, 101.5, 103.9, 104.5):
        log.add(_record(at))
    assert log.rate(100.0, 104.0) == (1.25, 3)
    assert len(log.between(101.0, 104.0)) == 2


def test_retry_gaps_pair_each_429_with_the_same_request_again() -> None:
    log = RequestLog()
    log.add(_record(10.0, "POST /pods a", status=429, retry_after=2))
    log.add(_record(10.5, "POST /pods b"))
    log.add(_record(12.25, "POST /pods a"))
    log.add(_record(20.0, "WATCH /pods rv=5", path="/pods", watch=True, status=429, retry_after=3))
    log.add(_record(23.5, "GET /pods list", path="/pods"))
    assert log.retry_gaps() == [(2, 2.25), (3, 3.5)], "a throttled watch is retried by the next relist or watch"
