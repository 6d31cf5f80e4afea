"""Where the memory of the jobs added between two triggerer steps went: `python -m benchmarks.memory_diff A B [N]`.

A and B are snapshots the lag probe dumped (BENCH_TRACEMALLOC_DIR); the jobs are counted from their
names (`jobs-00010.dump`). Prints the N largest growths by allocation site, in bytes per added job.
"""

from __future__ import annotations

import re
import sys
import tracemalloc


def main(argv: list[str]) -> None:
    before, after = argv[0], argv[1]
    top = int(argv[2]) if len(argv) > 2 else 25
    jobs = int(re.findall(r"\d+", after)[-1]) - int(re.findall(r"\d+", before)[-1])
    old, new = tracemalloc.Snapshot.load(before), tracemalloc.Snapshot.load(after)
    stats = new.compare_to(old, "traceback")
    total = sum(s.size_diff for s in stats)
    print(f"{jobs} jobs added: {total / 1024:.0f} KiB traced, {total / jobs / 1024:.1f} KiB per job")
    for stat in stats[:top]:
        print(f"\n{stat.size_diff / jobs:8.0f} B/job  {stat.count_diff / jobs:6.1f} blocks/job")
        for line in stat.traceback.format(limit=6, most_recent_first=True):
            print("   ", line.strip())


if __name__ == "__main__":
    main(sys.argv[1:])
