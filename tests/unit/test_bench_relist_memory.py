"""The relist benchmark's sentence in docs/performance.md gives the medians of the run it recorded."""

from __future__ import annotations

from benchmarks.relist_memory import summary


def test_the_summary_gives_each_ways_median_peak_and_what_stayed_in_mib() -> None:
    result = {"machine": {"commit": "abc1234"}, "pods": 1000, "relists": 5, "runs": [{}, {}, {}, {}],
              "median_kib": {"raw": {"peak_kib": 5636, "rss_after_kib": 1756},
                             "parsed": {"peak_kib": 21448, "rss_after_kib": 16876}}}

    text = summary(result)

    assert "run at abc1234, 1,000 pods, 5 relists, 2 processes each way" in text
    assert "dicts first, the peak over the relists was 20.9 MiB above" in text and "and 16.5 MiB stayed" in text
    assert text.endswith("with the items raw, 5.5 and 1.7 MiB")
    assert summary(None) == "no run recorded yet"
