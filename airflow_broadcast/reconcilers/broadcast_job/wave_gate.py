"""R16: how many pods a pass may start under `spec.waves`, from the status alone (level-triggered).

The status carries `waveEndedAt` while a finished wave soaks: the first pass that sees no pod of the
job running (and some already finished) stamps it, and the pass at `waveEndedAt + soakSeconds` starts
the next wave and clears it. A triggerer that restarts meanwhile reads the same stamp.
"""

from __future__ import annotations

from typing import Any

from airflow_broadcast.specs.broadcast_job.waves import Waves
from airflow_broadcast.specs.timestamps import from_rfc3339, to_rfc3339

WAVE_ENDED_AT = "waveEndedAt"


def wave_room(waves: Waves | None, status: dict[str, Any], room: int, busy: int, finished: int,
              now: float) -> tuple[int, float | None]:
    """(pods this pass may start, seconds until a pass must look again); `status` gets the soak stamp.

    `busy` counts the nodes of the cluster whose pod has not finished (or waits for a retry); a pod on
    a node that left is not waited for, so a wave never hangs on a node that is gone.
    """
    if waves is None or room <= 0:
        return room, None
    if busy > 0:
        return 0, None  # the wave still runs: its pods' changes wake the next pass
    ended = from_rfc3339(status.get(WAVE_ENDED_AT))
    if ended is None and finished and waves.soak_seconds:
        status[WAVE_ENDED_AT] = to_rfc3339(now)
        return 0, float(waves.soak_seconds)
    if ended is not None and now < ended + waves.soak_seconds:
        return 0, ended + waves.soak_seconds - now
    status.pop(WAVE_ENDED_AT, None)
    return min(room, waves.pods_per_wave(int(status.get("desired", 0)))), None
