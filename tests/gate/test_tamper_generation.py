"""Judge exactly what is committed, end to end (issue 28, item 1): a generation in a
workspace whose `.git/` can make git show other files is refused in one sentence before it
starts; trusted (`--trust-git-config`), it judges the committed bytes; a set-up planted while
it runs is caught."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import one_sentence, run_cli, workspace_state
from evolve.generations import evolve, load_records
from evolve.workspace import CONFIG_NAME, Workspace

# Slow end to end: `-m "not slow"` leaves it out of a quick local run (CI runs it).
pytestmark = pytest.mark.slow

RunGit = Callable[..., str]
SPLITS = "evalset/splits.yaml"
PROBE = "tests/health/test_probe.py"


def _configure(ws: Workspace, run_git: RunGit) -> Workspace:
    """Generations that train 2 episodes with corrective feedback and score 1 run per task
    (as the generation tests' workspace)."""
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update({"train_episodes": 2, "runs": 1})
    data["train"]["feedback"] = "corrective"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: configure the gate")
    return Workspace(ws.root)


def _fake_splits(root: Path, run_git: RunGit) -> str:
    """A blob of splits.yaml whose dev split holds 3 tasks (not in any tree)."""
    splits = yaml.safe_load((root / SPLITS).read_text(encoding="utf-8"))
    splits["dev"] = splits["dev"][:3]
    fake = root.parent / "splits.fake"
    fake.write_text(yaml.safe_dump(splits, sort_keys=False), encoding="utf-8")
    return run_git(root, "hash-object", "-w", str(fake)).strip()


def _dev_tasks(root: Path) -> int:
    return len(yaml.safe_load((root / SPLITS).read_text(encoding="utf-8"))["dev"])


def test_a_generation_in_a_workspace_with_a_replace_ref_is_refused_in_one_sentence(
    ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    root = ws.root
    _configure(ws, run_git)
    blob = run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip()
    run_git(root, "replace", blob, _fake_splits(root, run_git))
    before = workspace_state(root, run_git)

    code, out, err = run_cli(capsys, "evolve", "--generations", "1")

    assert code != 0
    line = one_sentence(err)
    assert "refusing to start a generation" in line
    assert f"replace refs (refs/replace/{blob})" in line
    assert "--trust-git-config" in line
    assert workspace_state(root, run_git) == before
    assert load_records(Workspace(root)) == []


def test_a_trusted_generation_scores_the_committed_splits_not_the_replaced_ones(
    workspace: Workspace, run_git: RunGit
) -> None:
    """The issue's case: a replace ref gives splits.yaml a dev split of 3 tasks; trusted, the
    generation is still scored on every committed dev task."""
    ws = _configure(workspace, run_git)
    root = ws.root
    run_git(root, "replace", run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip(),
            _fake_splits(root, run_git))  # fmt: skip

    [record] = evolve(ws, generations=1, trust_git_config=True).records

    assert record.dev_gain is not None
    assert record.dev_gain.tasks == _dev_tasks(root) == 20


def test_a_trusted_generation_runs_the_committed_tests_despite_export_ignore(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = _configure(workspace, run_git)
    root = ws.root
    (root / PROBE).write_text(
        "def test_probe() -> None:\n    raise AssertionError('the probe always fails')\n",
        encoding="utf-8",
    )
    run_git(root, "add", PROBE)
    run_git(root, "commit", "-q", "-m", "a probe that always fails")
    (root / ".git" / "info" / "attributes").write_text("tests/** export-ignore\n", "utf-8")

    [record] = evolve(Workspace(root), generations=1, trust_git_config=True).records

    assert record.verdict == "rejected"
    assert record.reason.startswith("workspace tests failed"), record.reason
    assert "no workspace tests" not in record.tests_output


def test_a_replace_ref_planted_by_a_hook_during_the_generation_is_caught(
    workspace: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit hook that names nothing judged passes the check before the generation, then
    plants a replace ref of splits.yaml at the generation's first commit: the generation is
    rejected, the set-up named, and nothing of the candidate kept."""
    ws = _configure(workspace, run_git)
    root = ws.root
    base = run_git(root, "rev-parse", "HEAD").strip()
    blob = run_git(root, "rev-parse", f"HEAD:{SPLITS}").strip()
    fake = _fake_splits(root, run_git)
    payload = root.parent / "payload.sh"
    payload.write_text(f"#!/bin/sh\ngit replace -f {blob} {fake}\n", encoding="utf-8")
    payload.chmod(0o755)
    hook = root / ".git" / "hooks" / "post-commit"
    hook.write_text('#!/bin/sh\nexec "$EVOLVE_TEST_PAYLOAD"\n', encoding="utf-8")
    hook.chmod(0o755)
    monkeypatch.setenv("EVOLVE_TEST_PAYLOAD", str(payload))

    [record] = evolve(ws, generations=1).records

    assert record.verdict == "rejected"
    assert "can make git show files other than those committed" in record.reason
    assert f"refs/replace/{blob}" in record.reason
    assert run_git(root, "rev-parse", "HEAD").strip() == base
