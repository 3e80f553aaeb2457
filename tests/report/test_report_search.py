"""The report's harness-search panel reads recorded cycles as hostile input: a malformed
record or field is left out, never an error, and the HTML escapes what it shows."""

from __future__ import annotations

import json

from evolve.report import build_report, search_panel
from evolve.search import SEARCH_REF
from evolve.workspace import Workspace


def _record(ws: Workspace, name: str, data: object) -> None:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    ws.store.write_side_ref(SEARCH_REF, {f"{name}.json": raw}, f"search {name}")


def test_a_recorded_cycle_is_shown_and_a_malformed_one_left_out(workspace: Workspace) -> None:
    _record(workspace, "bad", b"{not json")
    _record(workspace, "list", [1, 2])
    _record(
        workspace,
        "c1",
        {
            "cycle": "c1<script>",
            "started": "2026-01-01T00:00:00Z",
            "tried": [
                {"kind": "single", "modules": ["workflow"], "name": "workflow-verify_first",
                 "cards": ["self_refine"], "gain": [0.1, 0.05, 0.2], "verdict": "helps"},
                {"kind": "combination", "name": "a--b", "predicted": 0.3,
                 "gain": "not a list", "verdict": "helps"},
                "not a candidate",
            ],
            "path": [{"generation": 1, "candidate": "a--b", "gain": [0.1, 0.05, 0.2]}, 7],
            "champion_before": "not a mapping",
            "stopped": "the budget is spent",
        },
    )  # fmt: skip
    panel = search_panel(workspace)
    assert [c["cycle"] for c in panel] == ["c1<script>"]
    assert panel[0]["singles"]["workflow"][0]["gain"] == [0.1, 0.05, 0.2]
    assert len(panel[0]["path"]) == 1
    html = build_report(workspace)
    assert '<h2 id="search">Harness search</h2>' in html
    assert "c1&lt;script&gt;" in html and "<script>" not in html
    assert "+0.100 [+0.050, +0.200]" in html and "+0.300" in html
