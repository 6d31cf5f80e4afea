"""What a BroadcastJob pod asks of a node, and what a node offers: the resource side of node fitness.

Amounts are exact quantities (`specs.quantities`); they are rounded only where the
scheduler rounds them, cpu to milli-units and everything else to whole units.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from airflow_broadcast.reconcilers.observed import NodeInfo
from airflow_broadcast.specs.name_rules import is_qualified_name
from airflow_broadcast.specs.quantities import QuantityError, int_value, milli_value, parse_quantity

_FIXED_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_POD_LEVEL_RESOURCES = ("cpu", "memory")


class RequestQuantityError(ValueError):
    """A request, limit or overhead that is no quantity: the API server refuses such a pod, no node can run it."""


def _quantity(name: str, raw: object) -> Fraction:
    try:
        return parse_quantity(raw)
    except QuantityError as err:
        raise RequestQuantityError(f"invalid resource quantity for {name}: {err}") from err


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    """Requests, with limits filling the missing names as API defaulting does for a created pod."""
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(name): _quantity(str(name), raw) for name, raw in merged.items()}


def _add(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Fraction(0)) + amount


def _max(into: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, amount in more.items():
        if name not in into or amount > into[name]:
            into[name] = amount


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Fraction]:
    """The pod's effective requests, as k8s `PodRequests` computes them for the scheduler.

    A regular init container runs next to the sidecars started before it; sidecars
    (`restartPolicy: Always`) also run next to the containers. Pod-level cpu/memory
    requests override (pod-level limits default them, as the API server does), then
    overhead is added. Raises RequestQuantityError ("invalid resource quantity for <name>: ...").
    """
    requests: dict[str, Fraction] = {}
    for container in spec.get("containers") or []:
        _add(requests, _container_requests(container or {}))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or []:
        own = _container_requests(container or {})
        if (container or {}).get("restartPolicy") == "Always":
            _add(requests, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            _add(own, sidecars)
            _max(init_peak, own)
    _max(requests, init_peak)
    pod_req, pod_lim = ((spec.get("resources") or {}).get(kind) or {} for kind in ("requests", "limits"))
    for name in _POD_LEVEL_RESOURCES:
        if name in pod_req:
            requests[name] = _quantity(name, pod_req[name])
        elif name in pod_lim and name not in requests:
            requests[name] = _quantity(name, pod_lim[name])
    _add(requests, {str(k): _quantity(str(k), v) for k, v in (spec.get("overhead") or {}).items()})
    return requests


@lru_cache(maxsize=1024)
def _is_scalar_resource(name: str) -> bool:
    """Extended, hugepages, attachable-volume and kubernetes.io/ names; the scheduler ignores others."""
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return "/" in name and not name.startswith("requests.") and not is_qualified_name("requests." + name)


def _rounded(name: str, amount: Fraction) -> int:
    return milli_value(amount) if name == "cpu" else int_value(amount)


def allocatable(node: NodeInfo, name: str) -> int:
    """A missing or unparsable allocatable counts as 0: such a node cannot offer the resource."""
    return _allocatable_amount(name, node.allocatable.get(name, "0"))


@lru_cache(maxsize=4096)
def _allocatable_amount(name: str, text: str) -> int:
    """Nodes of a fleet repeat a few machine shapes, so each quantity text is parsed once."""
    try:
        return _rounded(name, parse_quantity(text))
    except QuantityError:
        return 0


def checked_requests(requests: Mapping[str, Fraction]) -> tuple[tuple[str, int], ...]:
    """The (name, amount) pairs noderesources.Fits compares, in the order it reports them."""
    rounded = {name: _rounded(name, amount) for name, amount in requests.items()}
    fixed = [(name, rounded[name]) for name in _FIXED_RESOURCES if rounded.get(name, 0) > 0]
    scalar = sorted((n, a) for n, a in rounded.items() if a != 0 and _is_scalar_resource(n))
    return (*fixed, *scalar)
