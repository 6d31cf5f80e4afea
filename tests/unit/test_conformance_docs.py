"""docs/conformance/*.md lists exactly the tests that carry each checklist ID (no stale or missing rows)."""

from __future__ import annotations

import pytest

from devcluster.conformance import DOCS, ROW, collect_tests, render


@pytest.mark.parametrize(("kind", "title"), [("broadcastjob", "BroadcastJob"), ("tfjob", "TFJob")])
def test_conformance_table_matches_the_test_suite(kind: str, title: str) -> None:
    path = DOCS / f"{kind}.md"
    text = path.read_text()
    items, notes = [], {}
    for line in text.splitlines():
        row = ROW.match(line)
        if row:
            items.append((row["id"], row["tag"].strip(), row["item"].replace("\\|", "|")))
            if row["status"].startswith("not implemented:"):
                notes[row["id"]] = row["status"].split(":", 1)[1].strip()
    assert items, f"{path} has no checklist rows"
    expected = render(kind, title, items, collect_tests(), notes)
    assert text == expected, (
        f"{path} is out of date with the tests; run `python -m devcluster.conformance --spec-dir <specs>`")


def test_every_untested_item_says_why() -> None:
    for kind in ("broadcastjob", "tfjob"):
        for line in (DOCS / f"{kind}.md").read_text().splitlines():
            row = ROW.match(line)
            if row and row["status"].strip() == "not implemented":
                pytest.fail(f"{kind} {row['id']} is not implemented and gives no reason")
