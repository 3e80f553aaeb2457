"""Adversarial review (issue 13): `evolve revert` of the last skills batch, then `evolve run`.

Reverting the latest batch must leave the selection's inputs (the shelves and the record) as
they were before the batch: the record, and the skill files the batch's merges only added
provenance to (their `evidence` entries and `updated_episode` are taken back).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import GitRunner, run_cli

# A stream whose last batch only merges (its revert then leaves memory exactly as before it).
# The sim's skills roles draw from their prompt's text: with the prompts of issue 22 the batch
# ending at episode 40 also adds and promotes (its revert tombstones those), the one ending at
# 36 merges four candidates and nothing else.
EPISODES = "36"


def _trained(tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner) -> Path:
    root = tmp_path / "ws"
    code, _out, err = run_cli(capsys, "init", str(root), "--skills")
    assert code == 0, err
    code, _out, err = run_cli(capsys, "train", "-C", str(root), "--episodes", EPISODES, "--json")
    assert code == 0, err
    return root


def _merged_last(root: Path, run_git: GitRunner) -> str:
    subject = run_git(root, "log", "-1", "--format=%s")
    assert "merge" in subject, subject
    return run_git(root, "rev-parse", "HEAD").strip()


@pytest.mark.slow
def test_reverting_the_last_batch_restores_the_record_and_the_shelves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    root = _trained(tmp_path, capsys, run_git)
    last = _merged_last(root, run_git)
    code, _out, err = run_cli(capsys, "revert", "-C", str(root), last, "--json")
    assert code == 0, err
    for path in ("memory/skills/_strata.yaml", "memory/skills/_staging.yaml"):
        assert run_git(root, "diff", f"{last}~1", "HEAD", "--", path) == "", path
    assert run_git(root, "diff", "--stat", f"{last}~1", "HEAD", "--", "memory") == ""


@pytest.mark.slow
def test_reverting_an_older_batch_takes_back_only_its_own_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    import json

    from evolve.memory import MemoryUnit, parse_unit

    root = _trained(tmp_path, capsys, run_git)
    # a batch whose merge into a skill a LATER batch merged into again
    shas = run_git(root, "log", "--format=%H", "--grep", "Evolve-Kind: skills batch").split()
    chosen = None
    for sha in reversed(shas):
        stat = run_git(root, "show", "--format=", "--name-only", sha).split()
        for path in (p for p in stat if p.endswith(".md")):
            later = run_git(root, "log", "--format=%H", f"{sha}..HEAD", "--", path).split()
            existed = run_git(root, "ls-tree", f"{sha}~1", "--", path).strip()
            diff = run_git(root, "show", "--format=", sha, "--", path)
            if later and existed and "\n+- episode" in diff:
                chosen = (sha, path)
                break
        if chosen:
            break
    assert chosen, "no batch merged into a skill that a later batch touched again"
    sha, path = chosen

    def unit_at(rev: str) -> MemoryUnit:
        return parse_unit(path, run_git(root, "show", f"{rev}:{path}"))

    before, after, head = unit_at(f"{sha}~1"), unit_at(sha), unit_at("HEAD")
    added = [e for e in after.evidence or [] if e not in (before.evidence or [])]
    assert added
    code, out, err = run_cli(capsys, "revert", "-C", str(root), sha, "--json")
    assert code == 0, err
    assert json.loads(out)["commit"]
    now = parse_unit(path, (root / path).read_text())
    assert not set(added) & set(now.evidence or [])  # the reverted batch's episodes are gone
    kept = [e for e in head.evidence or [] if e not in added]
    assert now.evidence == kept  # every other batch's are kept, in order
    assert now.text == head.text
