"""Every undo can be undone with evolve (issue 23 item 5): the loop of undo after a plain
`git revert`, a revert of a merge refused with what to do, and a sidecar hand edit reverted."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conftest import one_sentence as _one_sentence
from conftest import run_cli as _cli
from evolve.history import revert, tombstone_git_reverts
from evolve.history._changes import content_changes, taught_by
from evolve.memory import load_units
from evolve.memory._similarity import normalize
from evolve.train import train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
RECIPES = ("ace", "tepa", "trace", "reflexion", "rewrite", "topl")


def _memory(ws: Workspace) -> str:
    """The memory folder as committed at HEAD (its tree: every file, byte for byte)."""
    return ws.store.git("rev-parse", "HEAD:memory").strip()


def _active(ws: Workspace) -> set[tuple[str, str]]:
    return {(u.id, u.text) for u in load_units(ws.root) if u.status in ("active", "pending")}


def _train_until_head_teaches(ws: Workspace, recipe: str, episodes: int) -> None:
    """Train at least `episodes` episodes, then on until the newest commit taught something
    (so a plain `git revert` of it applies cleanly and leaves tombstones to write)."""
    for total in range(episodes, episodes + 40):
        train(ws, recipe=recipe, episodes=total, persona="alex", feedback="instance")
        info = ws.store.commit_info("HEAD")
        taught = [t for c in content_changes(ws.store, info) if (t := taught_by(c))]
        texts = [normalize(u.text) for u in load_units(ws.root) if u.status == "active"]
        # ... and not word for word as another unit (which a git revert leaves in place).
        if info.trailers.get("Evolve-Kind") == "train" and any(
            texts.count(normalize(t.text)) <= 1 for t in taught
        ):
            return
    raise AssertionError(f"{recipe} taught nothing in 40 episodes")


def _git_revert_head(ws: Workspace, run_git: RunGit) -> str:
    run_git(ws.root, "revert", "--no-edit", "HEAD")
    head = ws.store.head()
    assert head is not None
    return head


@pytest.mark.parametrize("recipe", RECIPES)
def test_the_loop_of_undo_after_a_plain_git_revert(
    workspace: Workspace, run_git: RunGit, recipe: str
) -> None:
    ws = workspace
    _train_until_head_teaches(ws, recipe, 10)
    before_git = _memory(ws)
    active_before = _active(ws)
    git_commit = _git_revert_head(ws, run_git)
    after_git = _memory(ws)

    # Step 2: evolve's tombstones for the plain git revert.
    (stones,) = tombstone_git_reverts(ws)
    after_stones = _memory(ws)
    assert after_stones != after_git

    # Step 3: `evolve revert` of the tombstone commit lifts them: memory as before step 2.
    lifted = revert(ws, stones)
    assert lifted.lifted, "the tombstones are lifted"
    assert _memory(ws) == after_git

    # Step 4: `evolve revert` of that puts them back: memory as before step 3.
    again = revert(ws, lifted.commit)
    assert _memory(ws) == after_stones

    # And `evolve revert` of the git revert itself takes evolve's tombstones with it:
    # memory as before the git revert, and that revert can be undone in turn.
    undone = revert(ws, git_commit)
    assert stones in undone.commits and git_commit in undone.commits
    assert _memory(ws) == before_git
    assert _active(ws) == active_before
    revert(ws, undone.commit)
    assert _memory(ws) == after_stones
    assert again.commit != undone.commit


def test_reverting_the_git_revert_from_the_cli_says_what_it_took_with_it(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    _train_until_head_teaches(ws, "ace", 5)
    git_commit = _git_revert_head(ws, run_git)
    code, out, err = _cli(capsys, "revert", git_commit[:10])
    assert code == 0, err
    stones = ws.store.commit_info("HEAD~1")
    assert stones.trailers.get("Evolve-Git-Revert") == git_commit
    assert f"also reverted {stones.sha[:10]} (evolve's answer to that git revert)" in out
    assert "lifted tombstone" in out


def test_a_merge_commit_is_refused_with_what_to_do(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=3, persona="alex", feedback="instance")
    run_git(ws.root, "checkout", "-q", "-b", "side", "HEAD~1")
    (ws.root / "prompts" / "note.md").write_text("a side note\n", encoding="utf-8")
    run_git(ws.root, "add", "prompts/note.md")
    run_git(ws.root, "commit", "-q", "-m", "side note")
    run_git(ws.root, "checkout", "-q", "-")
    run_git(ws.root, "merge", "-q", "--no-edit", "side")
    head = run_git(ws.root, "rev-parse", "HEAD").strip()
    code, out, err = _cli(capsys, "revert", "HEAD")
    assert code != 0 and out == ""
    sentence = _one_sentence(err)
    assert "is a merge commit" in sentence
    assert f"git revert -m 1 {head[:10]}" in sentence
    assert run_git(ws.root, "rev-parse", "HEAD").strip() == head


def test_a_sidecar_hand_edit_with_a_typo_is_revertable(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(ws, recipe="ace", episodes=8, persona="alex", feedback="instance")
    sidecar = ws.root / "memory" / "alex" / "_counters.yaml"
    good = sidecar.read_text(encoding="utf-8")
    assert "harmful:" in good
    sidecar.write_text(good.replace("harmful:", "harmfull:", 1), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "hand edit of the counters")
    code, out, err = _cli(capsys, "revert", "HEAD", "--dry-run")
    assert code == 0, err
    assert "would restore memory/alex/_counters.yaml" in out
    assert "harmfull" in sidecar.read_text(encoding="utf-8")  # the dry run wrote nothing
    code, out, err = _cli(capsys, "revert", "HEAD")
    assert code == 0, err
    assert sidecar.read_text(encoding="utf-8") == good
    # ... and the revert of that revert brings the hand edit back, byte for byte.
    code, out, err = _cli(capsys, "revert", "HEAD")
    assert code == 0, err
    assert "harmfull" in sidecar.read_text(encoding="utf-8")
