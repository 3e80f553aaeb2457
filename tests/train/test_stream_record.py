"""The stream's position comes from its own record (issue 23 item 8): an episode commit
cherry-picked from another branch does not move it."""

from __future__ import annotations

from collections.abc import Callable

from evolve.train import train
from evolve.train._trainref import stream_commits
from evolve.workspace import Workspace

RunGit = Callable[..., str]


def test_a_cherry_picked_episode_commit_does_not_move_the_stream(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = workspace
    first = train(ws, recipe="ace", episodes=20, persona="alex", feedback="instance")
    assert stream_commits(ws.store, first.stream)  # the run recorded its commits
    run_git(ws.root, "checkout", "-q", "-b", "other")
    later = train(ws, recipe="ace", episodes=36, persona="alex", feedback="instance")
    assert later.start == first.end
    run_git(ws.root, "checkout", "-q", "-")
    notes = ws.root / "prompts" / "notes.md"  # main moves on: a cherry-pick here is a copy
    notes.write_text("a note of the main branch\n", encoding="utf-8")
    run_git(ws.root, "add", "prompts/notes.md")
    run_git(ws.root, "commit", "-q", "-m", "a prompt note")
    for o in later.outcomes:  # the first later episode commit that applies cleanly here
        if o.commit is None:
            continue
        try:
            run_git(ws.root, "cherry-pick", o.commit)
        except AssertionError:
            run_git(ws.root, "cherry-pick", "--abort")
            continue
        picked = o.episode
        break
    else:
        raise AssertionError("no later episode commit applies cleanly")
    assert picked >= first.end  # a later episode: by its trailers the stream would move past it
    again = train(ws, recipe="ace", episodes=36, persona="alex", feedback="instance")
    assert again.start == first.end, "the stream resumes after its own last episode"
    assert again.outcomes, "the episodes the cherry-pick skipped are run"
