"""Training stands on committed memory and prompts: one `git status` over both folders
answers the common case (both clean); a dirty one is named as before."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evolve.errors import EvolveError
from evolve.store import GitStore
from evolve.train import train
from evolve.workspace import Workspace


def _asked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The pathspecs of every `dirty_paths` call the store is asked from now on."""
    asked: list[tuple[str, ...]] = []
    original = GitStore.dirty_paths

    def dirty_paths(self: GitStore, paths: Sequence[str] = ()) -> list[str]:
        asked.append(tuple(paths))
        return original(self, paths)

    monkeypatch.setattr(GitStore, "dirty_paths", dirty_paths)
    return asked


def test_a_clean_workspace_is_checked_with_one_status(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _asked(monkeypatch)
    report = train(workspace, recipe="ace", episodes=1)
    assert len(report.outcomes) == 1
    assert asked == [("memory", "prompts")]


@pytest.mark.parametrize("folder", ["memory", "prompts"])
def test_a_dirty_folder_is_named(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    (workspace.root / folder / "stray.md").write_text("a note\n", encoding="utf-8")
    asked = _asked(monkeypatch)
    with pytest.raises(EvolveError, match=f"^{folder}/ has uncommitted changes \\({folder}/stray"):
        train(workspace, recipe="ace", episodes=1)
    assert asked[0] == ("memory", "prompts")
