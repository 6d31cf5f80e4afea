"""What one method's round costs the control plane: CPU-seconds per process, and API requests by kind.

A storm's time to all Running is bound by the plane, so the plane's own bill says where a method's time
goes: a method that makes the plane work more (more requests, bigger objects, more for the garbage
collector to track) takes longer on the same cores. CPU is read from /proc for the plane's PIDs (all their
threads) from the first pod ADDED until all pods are Running; requests are the kube-apiserver's own
`apiserver_request_total` counters, before the method's process starts and after all pods are Running.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_REQUEST_LINE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>[0-9.eE+]+)\s*$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
TOP_REQUEST_KINDS = 8


def process_cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """utime + stime of a process and all its threads, or None when it is gone or unreadable."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) / _TICKS  # fields 14 and 15 of proc(5), counted from 1


def plane_cpu(pids: Mapping[str, int], proc: Path = Path("/proc")) -> dict[str, float]:
    """CPU-seconds so far of each plane process that can be read, by its name."""
    out = {}
    for name, pid in pids.items():
        seconds = process_cpu_seconds(pid, proc)
        if seconds is not None:
            out[name] = seconds
    return out


def cpu_spent(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """Per process, and in all, the CPU-seconds between two readings."""
    spent = {name: round(after[name] - before[name], 2) for name in before if name in after}
    return {**spent, "total": round(sum(spent.values()), 2)}


def request_counts(metrics_text: str) -> Counter[str]:
    """`apiserver_request_total` summed by verb and resource ("POST pods", "PATCH pods/status")."""
    counts: Counter[str] = Counter()
    for line in metrics_text.splitlines():
        match = _REQUEST_LINE.match(line)
        if match is None:
            continue
        labels = dict(_LABEL.findall(match["labels"]))
        resource = labels.get("resource", "") or "-"
        if labels.get("subresource"):
            resource += "/" + labels["subresource"]
        counts[f"{labels.get('verb', '?')} {resource}"] += int(float(match["value"]))
    return counts


def requests_made(before: Counter[str], after: Counter[str]) -> dict[str, Any]:
    """How many requests the plane served in between, and the kinds with the most of them."""
    made = Counter({kind: after[kind] - before.get(kind, 0) for kind in after})
    made = +made  # drops kinds with no new requests
    top = dict(sorted(made.items(), key=lambda item: (-item[1], item[0]))[:TOP_REQUEST_KINDS])
    return {"plane_requests": sum(made.values()), "plane_requests_top": top}


async def read_requests(kube: Any) -> Counter[str] | None:
    """The apiserver's request counters now; None when /metrics cannot be read (then nothing is reported)."""
    try:
        return request_counts(await kube.request_text("GET", "/metrics"))
    except Exception as exc:  # a cluster that hides /metrics: the round's other figures still count
        print(f"warning: the apiserver's /metrics was not read ({exc})", flush=True)
        return None
