"""The scoreboard compares the arms within each task (issue 13): the per-task record and the
stratified estimator that decides retirement (`evolve.skills._strata`, `_scoreboard`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import GitRunner
from evolve.errors import EvolveError
from evolve.history import revert
from evolve.skills._scoreboard import Score
from evolve.skills._strata import (
    STRATA_PATH,
    Cell,
    Outcome,
    added,
    dump_strata,
    load_strata,
    parse_strata,
    take_back,
    tally_tasks,
)
from evolve.stats import newcombe, stratified
from evolve.train import train
from evolve.workspace import Workspace


def test_tasks_whose_arms_agree_add_no_noise() -> None:
    # One task where the skill hurts, then tasks where both arms always pass or always fail:
    # the test of no effect is the same, the pooled comparison is swamped.
    harm = (3, 0, 3, 3)  # injected 3 (0 passed), held out 3 (3 passed)
    alone = stratified([harm], 0.9)
    agree = [(6, 6, 1, 1), (5, 0, 1, 0), (7, 7, 2, 2), (4, 0, 1, 0)]
    mixed = stratified([harm, *agree], 0.9)
    assert alone.z() == pytest.approx(mixed.z())
    assert mixed.below_zero and mixed.interval is not None and mixed.interval[1] < 0
    inj = sum(c[0] for c in [harm, *agree])
    inj_pass = sum(c[1] for c in [harm, *agree])
    held = sum(c[2] for c in [harm, *agree])
    held_pass = sum(c[3] for c in [harm, *agree])
    pooled = newcombe(inj_pass, inj, held_pass, held, 0.9)
    assert pooled is not None and pooled[1] > 0  # the pooled interval does not see it
    assert Score(inj, inj_pass, held, held_pass, strata=(harm, *agree)).harmful


def test_a_task_with_one_arm_only_does_not_count() -> None:
    st = stratified([(4, 0, 0, 0), (0, 0, 3, 3)], 0.9)
    assert st.tasks == 0 and st.lift is None and st.interval is None and not st.below_zero
    assert not Score(4, 0, 3, 3, strata=((4, 0, 0, 0), (0, 0, 3, 3))).harmful


def test_the_record_round_trips_and_refuses_a_bad_file() -> None:
    strata = {"sk-b": {"t2": (2, 1, 1, 0)}, "sk-a": {"t1": (1, 1, 0, 0), "t0": (0, 0, 0, 0)}}
    text = dump_strata(strata)
    assert parse_strata(text) == {"sk-a": {"t1": (1, 1, 0, 0)}, "sk-b": {"t2": (2, 1, 1, 0)}}
    assert dump_strata({}) == "" and parse_strata("") == {}
    for bad in ("[1, 2]", "a: [1]", "a: {t: [1, 2, 3]}", "a: {t: [1, 2, 0, 0]}", "a: {t: x}"):
        with pytest.raises(EvolveError, match=STRATA_PATH):
            parse_strata(bad)


def test_tally_counts_each_episode_once_in_its_task() -> None:
    inc = tally_tasks(
        [
            (["a", "b"], [], True, "t1", True),
            (["b"], ["a"], False, "t1", True),
            (["a"], [], False, "t2", False),  # counted in the record too (its task's arms)
        ]
    )
    assert inc["a"] == {"t1": (1, 1, 1, 0), "t2": (1, 0, 0, 0)}
    assert inc["b"] == {"t1": (1, 1, 0, 0)}
    assert added({"a": {"t1": (1, 1, 0, 0)}}, inc, restart=["b"]) == {
        "a": {"t1": (2, 2, 1, 0), "t2": (1, 0, 0, 0)}
    }


def test_a_revert_takes_back_what_one_commit_added() -> None:
    def raw(s: dict[str, dict[str, tuple[int, int, int, int]]]) -> bytes:
        return dump_strata(s).encode()

    before = raw({"a": {"t1": (1, 1, 0, 0)}})
    after = raw({"a": {"t1": (2, 1, 1, 1)}, "b": {"t2": (1, 0, 0, 0)}})
    now = raw({"a": {"t1": (4, 2, 2, 1)}, "b": {"t2": (1, 0, 0, 0)}})
    assert parse_strata((take_back(before, after, now) or b"").decode()) == {
        "a": {"t1": (3, 2, 1, 0)}
    }
    # A restart (the commit emptied the entry) is taken back too: the old counts return.
    restarted = take_back(before, None, raw({"a": {"t1": (1, 0, 0, 0)}}))
    assert parse_strata((restarted or b"").decode()) == {"a": {"t1": (2, 1, 0, 0)}}


def _episodes(ws: Any) -> list[dict[str, Any]]:
    (log,) = sorted(ws.runs_dir.glob("train-*.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines()]


def _expected_strata(records: list[dict[str, Any]], ident: str) -> dict[str, Cell]:
    outcomes: list[Outcome] = [
        (r["skills_injected"], r["skills_held_out"], r["task_success"], r["task_id"], False)
        for r in records
        if r["skills_injected"] or r["skills_held_out"]
    ]
    return tally_tasks(outcomes).get(ident, {})


def test_the_record_is_committed_survives_a_resume_and_a_revert(
    workspace: Workspace, run_git: GitRunner
) -> None:
    from test_scoreboard_retire import _plant

    _plant(workspace, run_git)
    config = yaml.safe_load((workspace.root / "evolve.yaml").read_text())
    config["skills"]["retire_confidence"] = 0.99999  # keep the skill counted: no retirement
    (workspace.root / "evolve.yaml").write_text(yaml.safe_dump(config))
    run_git(workspace.root, "commit", "-qam", "no retirement")
    train(Workspace(workspace.root), recipe="ace", episodes=6)
    train(Workspace(workspace.root), recipe="ace", episodes=12)  # a new process resumes
    records = _episodes(workspace)
    assert [r["episode"] for r in records] == list(range(12))
    want = _expected_strata(records, "skip-lookup")
    assert want and load_strata(workspace.root)["skip-lookup"] == want
    committed = run_git(workspace.root, "show", f"HEAD:{STRATA_PATH}")
    assert parse_strata(committed)["skip-lookup"] == want
    assert run_git(workspace.root, "status", "--porcelain", "--", "memory").strip() == ""

    # Reverting an early count commit takes back its episode's counts only (no conflict,
    # although every later count commit changed the file too).
    shas = run_git(
        workspace.root, "log", "--reverse", "--format=%H", "--grep=Evolve-Kind: skill count"
    ).split()
    target = next(s for s in shas if STRATA_PATH in run_git(
        workspace.root, "show", "--name-only", "--format=", s).split())  # fmt: skip
    episode = int(
        run_git(workspace.root, "log", "-1", "--format=%(trailers:key=Evolve-Episode,valueonly)",
                target).strip()
    )  # fmt: skip
    revert(Workspace(workspace.root), target)
    left = [r for r in records if r["episode"] != episode]
    assert load_strata(workspace.root).get("skip-lookup", {}) == _expected_strata(
        left, "skip-lookup"
    )


def test_a_rewritten_lesson_starts_an_empty_record(tmp_path: Path) -> None:
    from evolve.skills._scoreboard import strata_after

    class _S:
        kind = "skill"

        def __init__(self, ident: str, text: str) -> None:
            self.id, self.text = ident, text

    root = tmp_path
    (root / "memory" / "skills").mkdir(parents=True)
    (root / STRATA_PATH).write_text(
        dump_strata({"sk-good": {"t1": (5, 5, 2, 1)}, "sk-other": {"t1": (1, 1, 1, 1)}})
    )
    units = [_S("sk-good", "Verify the final state."), _S("sk-other", "Look it up first.")]

    class _Op:
        op = "modify"
        id = "sk-good"
        unit = _S("sk-good", "Skip the final check.")

    outcomes: list[Outcome] = [(["sk-good", "sk-other"], [], False, "t1", True)]
    files = strata_after(root, [_Op()], units, outcomes)
    got = parse_strata((files[STRATA_PATH] or b"").decode())
    assert "sk-good" not in got  # restarted: its old record is gone, the batch not counted
    assert got["sk-other"] == {"t1": (2, 1, 1, 1)}
