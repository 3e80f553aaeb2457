"""The gated evolve loop: refusals, the gate's verdicts, rollback, records, holdout, the CLI.

Most generations run with 0 training episodes and 1 run per task (about half a second each
with the sim). Where a test is not about the workspace tests, the gate's test run is replaced
by a stub that passes (`stub_tests`), since it is a Python subprocess of a few seconds; the
tests about it run the real thing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

import evolve.generations._loop as loop
from _alex import alex_statements
from evolve.cli import main
from evolve.errors import EvolveError, LockHeld
from evolve.evaluate import SplitReport, open_env, run_split
from evolve.gate import Gate, GateEvidence, Verdict
from evolve.generations import RECORDS_REF, GenerationRecord, evolve, load_records
from evolve.generations._loop import _Models
from evolve.llm import Message, MockLLM
from evolve.sim import SimLLM
from evolve.txn import WriterLock
from evolve.workspace import CONFIG_NAME, PARAMETERS_FILE, Workspace, init_workspace

RunGit = Callable[..., str]

GENERIC = "Be thorough and complete in every task."


# --- helpers ---------------------------------------------------------------------------------


def _configure(ws: Workspace, run_git: RunGit, **gate: Any) -> Workspace:
    """Set `gate.*` keys in evolve.yaml and commit, so the tree stays clean."""
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["gate"].update(gate)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: configure the gate")
    return Workspace(ws.root)


def _models(ws: Workspace, reflector: MockLLM) -> _Models:
    env = open_env(ws)
    return _Models(agent=SimLLM(env), updater=SimLLM(env), reflector=reflector)


def _correct(extra: Sequence[str] = (), **reply: Any) -> MockLLM:
    """A reflector that moves the right preference statements into guidance."""

    def respond(messages: Sequence[Message], schema: object) -> str:
        return json.dumps({"guidance": [*alex_statements(messages[-1].content), *extra], **reply})

    return MockLLM(respond)


def _generic() -> MockLLM:
    """A reflector that only ever offers generic advice (no rule recognizes it)."""
    return MockLLM(lambda messages, schema: json.dumps({"guidance": [GENERIC]}))


def _tree_hash(root: Path, run_git: RunGit) -> str:
    """A hash of every tracked file's bytes, the index, and the list of untracked files."""
    digest = hashlib.sha256()
    for rel in sorted(p for p in run_git(root, "ls-files", "-z").split("\0") if p):
        digest.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    digest.update(run_git(root, "ls-files", "-s").encode())
    digest.update(run_git(root, "status", "--porcelain", "--untracked-files=all").encode())
    return digest.hexdigest()


def _head(root: Path, run_git: RunGit) -> str:
    return run_git(root, "rev-parse", "HEAD").strip()


def _trailers(root: Path, run_git: RunGit, rev: str) -> dict[str, str]:
    block = run_git(root, "log", "-1", "--format=%(trailers:only=true,unfold=true)", rev)
    return dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)


@pytest.fixture
def ws(workspace: Workspace, run_git: RunGit) -> Workspace:
    """A workspace with no training in a generation and one run per task (fast)."""
    return _configure(workspace, run_git, train_episodes=0, runs=1)


@pytest.fixture
def stub_tests(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Replace the gate's workspace-test subprocess by a pass; records (base, candidate)."""
    calls: list[tuple[str, str]] = []

    def fake(
        store: object, base: str, candidate: str, protected: tuple[str, ...]
    ) -> tuple[bool, str]:
        calls.append((base, candidate))
        return True, "....\n4 passed (stubbed)\n"

    monkeypatch.setattr(loop, "run_workspace_tests", fake)
    return calls


class RecordingGate(Gate):
    """The real gate, keeping every piece of evidence it saw and its verdict."""

    def __init__(self) -> None:
        self.seen: list[GateEvidence] = []
        self.verdicts: list[Verdict] = []

    def decide(self, e: GateEvidence) -> Verdict:
        verdict = super().decide(e)
        self.seen.append(e)
        self.verdicts.append(verdict)
        return verdict


class AlwaysRejects(Gate):
    def decide(self, e: GateEvidence) -> Verdict:
        return Verdict(False, "rejected by the test's gate")


class AlwaysAccepts(Gate):
    def decide(self, e: GateEvidence) -> Verdict:
        return Verdict(True, "accepted by the test's gate")


# --- the workspace tests -------------------------------------------------------------------


@pytest.mark.slow
def test_failing_workspace_tests_reject_the_generation(ws: Workspace, run_git: RunGit) -> None:
    (ws.root / "tests" / "health" / "test_fails.py").write_text(
        "def test_fails() -> None:\n    raise AssertionError('the base says no')\n",
        encoding="utf-8",
    )
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-q", "-m", "base: a failing workspace test")
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)

    # The reflector is the one that improves dev (see the accepted test): only the tests fail.
    [record] = evolve(ws, generations=1, models=_models(ws, _correct())).records

    assert record.verdict == "rejected"
    assert record.reason.startswith("workspace tests failed")
    assert "1 failed" in record.reason
    assert not record.tests_passed and "the base says no" in record.tests_output
    assert record.dev is not None and record.dev_base is not None
    assert record.dev.score > record.dev_base.score
    assert record.candidate != base
    assert (_head(ws.root, run_git), _tree_hash(ws.root, run_git)) == (base, before)


# --- the score ------------------------------------------------------------------------------


def test_a_flat_score_rejects_the_generation(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)

    [record] = evolve(ws, generations=1, models=_models(ws, _generic())).records

    assert stub_tests, "the generation changed something and reached the gate's test run"
    assert record.verdict == "rejected"
    assert "did not improve" in record.reason
    assert record.dev_gain is not None
    assert (record.dev_gain.mean, record.dev_gain.low, record.dev_gain.high) == (0.0, 0.0, 0.0)
    assert [c.kind for c in record.changes] == ["prompt"]
    assert (_head(ws.root, run_git), _tree_hash(ws.root, run_git)) == (base, before)


@pytest.mark.slow
def test_an_accepted_generation_keeps_its_commits(workspace: Workspace, run_git: RunGit) -> None:
    ws = _configure(workspace, run_git, train_episodes=2, runs=1)
    base = _head(ws.root, run_git)

    [record] = evolve(ws, generations=1, models=_models(ws, _correct())).records

    assert record.verdict == "accepted", record.reason
    assert record.reason.startswith("accepted: dev gain +")
    assert record.tests_passed  # the real workspace tests ran against the candidate
    assert record.dev_gain is not None and record.dev_gain.low > 0.0
    assert record.dev is not None and record.dev_base is not None
    assert record.dev.score > record.dev_base.score
    head = _head(ws.root, run_git)
    assert head == record.candidate == record.final != base
    assert run_git(ws.root, "status", "--porcelain") == ""
    # The generation's commits, oldest first, are exactly the recorded changes.
    commits = run_git(ws.root, "rev-list", "--reverse", f"{base}..HEAD").split()
    assert commits == [c.commit for c in record.changes]
    kinds = [c.kind for c in record.changes]
    assert kinds[-1] == "prompt" and "memory" in kinds
    for sha in commits:
        assert _trailers(ws.root, run_git, sha)["Evolve-Generation"] == "1"
    assert _trailers(ws.root, run_git, head)["Evolve-Kind"] == "reflector"
    system = (ws.root / "prompts" / "system.md").read_text(encoding="utf-8")
    assert "Sign off every text message" in system


# --- rollback ----------------------------------------------------------------------------------


def test_a_rejected_generation_is_rolled_back(
    workspace: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    ws = _configure(workspace, run_git, train_episodes=2, runs=1)
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)
    memory_before = sorted(p.name for p in (ws.root / "memory").rglob("*"))

    [record] = evolve(
        ws, generations=1, gate=AlwaysRejects(), models=_models(ws, _correct())
    ).records

    assert record.verdict == "rejected" and record.reason == "rejected by the test's gate"
    # The generation did commit (training and the reflector), and all of it was undone.
    assert {c.kind for c in record.changes} == {"memory", "prompt"}
    assert record.candidate != base and record.final == base
    assert (_head(ws.root, run_git), _tree_hash(ws.root, run_git)) == (base, before)
    assert sorted(p.name for p in (ws.root / "memory").rglob("*")) == memory_before
    assert run_git(ws.root, "branch", "--contains", record.candidate).strip() == ""


# --- bounds --------------------------------------------------------------------------------


def test_generations_are_bounded(ws: Workspace, run_git: RunGit) -> None:
    base = _head(ws.root, run_git)
    for count in (6, 50):
        with pytest.raises(EvolveError) as info:
            evolve(ws, generations=count, models=_models(ws, _generic()))
        message = str(info.value)
        assert message == (
            f"{count} generations exceed gate.max_generations (5) in evolve.yaml; ask for fewer."
        )
        assert message.count(". ") == 0 and "\n" not in message  # one sentence
    with pytest.raises(EvolveError, match="at least 1"):
        evolve(ws, generations=0, models=_models(ws, _generic()))
    assert _head(ws.root, run_git) == base
    assert load_records(ws) == []


def test_exactly_the_requested_generations_run(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    counter = iter(range(100))
    reflector = MockLLM(lambda m, s: json.dumps({"guidance": [f"Advice number {next(counter)}."]}))

    result = evolve(ws, generations=3, gate=AlwaysAccepts(), models=_models(ws, reflector))

    assert [r.number for r in result.records] == [1, 2, 3]
    assert len(reflector.calls) == 3
    assert [r.number for r in load_records(ws)] == [1, 2, 3]
    # Each accepted generation is the base of the next.
    assert [r.base for r in result.records[1:]] == [r.final for r in result.records[:-1]]
    log = run_git(ws.root, "log", "--format=%s", "-3").splitlines()
    assert log == [f"reflector: generation {n}: prompts/system.md" for n in (3, 2, 1)]


@pytest.mark.slow
def test_the_default_count_is_gate_generations(
    workspace: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    ws = _configure(workspace, run_git, train_episodes=0, runs=1, generations=2)
    assert len(evolve(ws, models=_models(ws, _generic())).records) == 2


# --- the holdout -----------------------------------------------------------------------------


def _flip_holdout(monkeypatch: pytest.MonkeyPatch, accepted: bool) -> None:
    """Make every holdout score say the opposite of what the gate should decide."""
    original = loop._Scorer.__call__

    def fake(self: loop._Scorer, split: str, commit: str) -> SplitReport:
        report = original(self, split, commit)  # type: ignore[arg-type]
        if split != "holdout":
            return report
        episodes = [
            e.model_copy(
                update={
                    "accepted": accepted,
                    "violations": {} if accepted else {"sms_signoff": "flipped"},
                    "input_tokens": 1 if accepted else e.input_tokens * 50,
                }
            )
            for e in report.episodes
        ]
        return dataclasses.replace(report, episodes=episodes)

    monkeypatch.setattr(loop._Scorer, "__call__", fake)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("scenario", "expected"), [("flat", "rejected"), ("improving", "accepted")]
)
def test_the_holdout_is_never_used_to_accept(
    tmp_path: Path,
    run_git: RunGit,
    monkeypatch: pytest.MonkeyPatch,
    stub_tests: list[tuple[str, str]],
    scenario: str,
    expected: str,
) -> None:
    names = [f.name for f in dataclasses.fields(GateEvidence)]
    assert not [n for n in names if "hold" in n.lower()]

    def run(folder: str) -> tuple[RecordingGate, GenerationRecord]:
        ws = _configure(init_workspace(tmp_path / folder), run_git, train_episodes=0, runs=1)
        gate = RecordingGate()
        reflector = _generic() if scenario == "flat" else _correct()
        [record] = evolve(ws, generations=1, gate=gate, models=_models(ws, reflector)).records
        return gate, record

    plain_gate, plain = run("plain")
    # The holdout now says the opposite: perfect when dev is flat, ruined when dev improves.
    _flip_holdout(monkeypatch, accepted=scenario == "flat")
    flipped_gate, flipped = run("flipped")

    assert plain.verdict == flipped.verdict == expected
    assert plain_gate.verdicts == flipped_gate.verdicts
    assert plain_gate.seen == flipped_gate.seen  # the very same evidence, field by field
    # The patch did reach the holdout that the records report.
    assert plain.holdout is not None and flipped.holdout is not None
    assert flipped.holdout.score == (1.0 if scenario == "flat" else 0.0)
    assert flipped.holdout.score != plain.holdout.score
    assert plain.dev == flipped.dev
    # No value of the evidence is a holdout number either (the flipped tokens are distinctive).
    [evidence] = flipped_gate.seen
    numbers = {v for v in dataclasses.astuple(evidence) if isinstance(v, float)}
    assert flipped.holdout.tokens_per_episode not in numbers
    assert plain.dev is not None
    assert evidence.candidate_tokens == pytest.approx(plain.dev.tokens_per_episode, abs=0.05)


@pytest.mark.slow
def test_the_reflector_never_sees_a_holdout_failure(
    ws: Workspace, stub_tests: list[tuple[str, str]]
) -> None:
    env = open_env(ws)

    def complaints(split: str) -> set[str]:
        """What the users of `split` complained about at the base."""
        report = run_split(ws, split, llm=SimLLM(env), runs=1, log=False)  # type: ignore[arg-type]
        lines = {e.failure for e in report.episodes if e.failure}
        return lines | {v for e in report.episodes for v in e.violations.values()}

    dev, holdout = complaints("dev"), complaints("holdout")
    reflector = _correct()
    evolve(ws, generations=1, models=_models(ws, reflector))

    assert holdout - dev, "the holdout has complaints of its own"
    prompt = reflector.calls[0].messages[-1].content
    assert not [line for line in holdout - dev if line in prompt]
    assert [line for line in dev if line in prompt]


# --- refusals before anything runs ----------------------------------------------------------


def test_a_dirty_tree_is_refused_naming_the_files(ws: Workspace, run_git: RunGit) -> None:
    base = _head(ws.root, run_git)
    (ws.root / "prompts" / "system.md").write_text("my unsaved work\n", encoding="utf-8")
    (ws.root / "prompts" / "draft.md").write_text("untracked\n", encoding="utf-8")
    (ws.root / "generations" / "gen-0042.json").write_text("{}\n", encoding="utf-8")  # ignored
    reflector = _generic()

    with pytest.raises(EvolveError) as info:
        evolve(ws, generations=1, models=_models(ws, reflector))

    message = str(info.value)
    assert "uncommitted changes" in message
    assert "prompts/system.md" in message and "prompts/draft.md" in message
    assert "gen-0042" not in message
    assert reflector.calls == []
    assert _head(ws.root, run_git) == base
    assert (ws.root / "prompts" / "system.md").read_text(encoding="utf-8") == "my unsaved work\n"
    assert (ws.root / "prompts" / "draft.md").exists()


def test_outside_a_git_repository_is_refused_suggesting_init(
    tmp_path: Path, workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(workspace.root / CONFIG_NAME, plain / CONFIG_NAME)

    with pytest.raises(EvolveError) as info:
        evolve(Workspace(plain), generations=1)
    assert "not a git repository" in str(info.value)
    assert "evolve init" in str(info.value)

    assert main(["evolve", "-C", str(plain), "--generations", "1"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "evolve init" in err and "not a git repository" in err
    assert sorted(p.name for p in plain.iterdir()) == [CONFIG_NAME]


def test_another_writer_holding_the_lock_is_refused_naming_it(
    ws: Workspace, run_git: RunGit
) -> None:
    lock = ws.store.git_dir / "evolve-writer.lock"
    held = WriterLock(lock, "evolve train --episodes 50").acquire()  # a second holder's flock
    holder = json.loads(lock.read_text(encoding="utf-8"))
    base = _head(ws.root, run_git)
    reflector = _generic()

    with pytest.raises(LockHeld) as info:
        evolve(ws, generations=1, models=_models(ws, reflector))

    assert "`evolve train --episodes 50`" in str(info.value)
    assert f"pid {os.getpid()}" in str(info.value)
    assert json.loads(lock.read_text(encoding="utf-8")) == holder  # not taken over
    held.release()
    assert reflector.calls == [] and _head(ws.root, run_git) == base


# --- protected files changed behind the loop's back ------------------------------------------


def test_a_protected_file_committed_behind_the_loops_back_is_detected(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)
    splits = ws.root / "evalset" / "splits.yaml"
    original = splits.read_bytes()
    inner = _correct()

    def tamper(messages: Sequence[Message], schema: object) -> str:
        with splits.open("a", encoding="utf-8") as handle:
            handle.write("# moved a holdout task into dev\n")
        run_git(ws.root, "commit", "-q", "-am", "an innocent commit")
        return inner.complete(messages).text

    [record] = evolve(ws, generations=1, models=_models(ws, MockLLM(tamper))).records

    assert record.verdict == "rejected"
    assert record.reason.startswith("protected files changed")
    assert record.protected_hash != record.protected_hash_candidate
    assert (_head(ws.root, run_git), _tree_hash(ws.root, run_git)) == (base, before)
    assert splits.read_bytes() == original


def test_a_protected_file_left_dirty_behind_the_loops_back_is_detected(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)
    splits = ws.root / "evalset" / "splits.yaml"
    original = splits.read_bytes()
    inner = _correct()

    def tamper(messages: Sequence[Message], schema: object) -> str:
        splits.write_bytes(original + b"# edited, not committed\n")
        return inner.complete(messages).text

    [record] = evolve(ws, generations=1, models=_models(ws, MockLLM(tamper))).records

    assert record.verdict == "rejected"
    assert record.reason == "protected files changed during the generation (evalset/splits.yaml)"
    assert (_head(ws.root, run_git), _tree_hash(ws.root, run_git)) == (base, before)
    assert splits.read_bytes() == original


def test_an_untracked_protected_file_does_not_survive_the_rollback(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base, before = _head(ws.root, run_git), _tree_hash(ws.root, run_git)
    sneak = ws.root / "tests" / "health" / "test_sneak.py"
    inner = _correct()

    def tamper(messages: Sequence[Message], schema: object) -> str:
        sneak.write_text("def test_always() -> None:\n    pass\n", encoding="utf-8")
        return inner.complete(messages).text

    [record] = evolve(ws, generations=1, models=_models(ws, MockLLM(tamper))).records

    assert record.verdict == "rejected"
    assert record.reason == (
        "protected files changed during the generation (tests/health/test_sneak.py)"
    )
    assert _head(ws.root, run_git) == base
    assert not sneak.exists()
    assert _tree_hash(ws.root, run_git) == before


def test_a_protected_file_dirtied_by_a_no_op_generation_is_detected_and_restored(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    splits = ws.root / "evalset" / "splits.yaml"
    original = splits.read_bytes()

    def tamper(messages: Sequence[Message], schema: object) -> str:
        splits.write_bytes(original + b"# edited, not committed\n")
        return "{}"

    [record] = evolve(ws, generations=1, models=_models(ws, MockLLM(tamper))).records

    assert record.verdict == "rejected"
    assert "protected files changed" in record.reason
    assert splits.read_bytes() == original


# --- records -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_records_are_written_survive_the_reset_and_continue_numbering(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base = _head(ws.root, run_git)
    [record] = evolve(ws, generations=1, models=_models(ws, _generic())).records

    folder = ws.root / "generations"
    raw = (folder / "gen-0001.json").read_text(encoding="utf-8")
    stored = GenerationRecord.model_validate_json(raw)
    assert stored == record
    assert (stored.number, stored.verdict) == (1, "rejected")
    assert "did not improve" in stored.reason
    assert stored.base == base == stored.final and stored.candidate != base
    assert [(c.kind, c.commit) for c in stored.changes] == [("prompt", stored.candidate)]
    for score in (stored.dev_base, stored.dev, stored.holdout_base, stored.holdout):
        assert score is not None and score.episodes == 20
        assert score.rules and set(score.rules) >= {"sms_signoff", "sms_greeting"}
        assert all(0.0 <= rate <= 1.0 for rate in score.rules.values())
    gain = stored.dev_gain
    assert gain is not None and (gain.tasks, gain.pairs) == (20, 20)
    assert gain.low <= gain.mean <= gain.high
    assert set(stored.prompt_sizes) == {"prompts/system.md"}
    assert stored.prompt_sizes["prompts/system.md"] > 0
    assert re.fullmatch(r"[0-9a-f]{64}", stored.protected_hash)
    assert stored.protected_hash == stored.protected_hash_candidate
    assert stored.tests_passed
    summary = (folder / "gen-0001.md").read_text(encoding="utf-8")
    assert summary.startswith("# Generation 1: rejected")
    assert "- dev: " in summary and "- holdout (reported, never used to accept): " in summary
    assert stored.reason in summary

    # Writing records never dirties the tree; the record survives the generation's reset.
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert _head(ws.root, run_git) == base
    assert load_records(ws) == [record]
    assert run_git(ws.root, "show", f"{RECORDS_REF}:gen-0001.json") == raw
    assert run_git(ws.root, "branch", "--contains", RECORDS_REF).strip() == ""

    # The files are a convenience copy: numbering continues from the side ref.
    for path in folder.glob("gen-*"):
        path.unlink()
    [second] = evolve(ws, generations=1, models=_models(ws, _generic())).records
    assert second.number == 2
    assert (folder / "gen-0002.json").is_file() and not (folder / "gen-0001.json").exists()
    assert [r.number for r in load_records(ws)] == [1, 2]
    assert run_git(ws.root, "rev-list", "--count", RECORDS_REF).strip() == "2"
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""


# --- constraints -------------------------------------------------------------------------------


def test_guidance_over_the_prompt_cap_is_refused_and_its_size_logged(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    system = (ws.root / "prompts" / "system.md").read_bytes()
    [record] = evolve(
        ws, generations=1, models=_models(ws, _correct(extra=["Also: " + "x" * 6000]))
    ).records

    [line] = record.refused
    match = re.fullmatch(
        r"refused guidance 'prompts/system.md': prompts/system.md would be (\d+) characters, "
        r"over the cap of 6000",
        line,
    )
    assert match and int(match.group(1)) > 6000
    assert record.verdict == "rejected" and "changed nothing" in record.reason
    assert record.changes == [] and not stub_tests
    assert (ws.root / "prompts" / "system.md").read_bytes() == system
    assert line in (ws.root / "generations" / "gen-0001.md").read_text(encoding="utf-8")


def test_all_prompts_together_over_the_cap_are_rejected_by_the_gate(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base = _head(ws.root, run_git)
    # 5400 characters ("Example." alone is a placeholder line, refused since issue 22)
    edit = {"path": "prompts/examples.md", "content": "For Alex\n" * 600}
    [record] = evolve(ws, generations=1, models=_models(ws, _correct(edits=[edit]))).records

    total = sum(record.prompt_sizes.values())
    assert record.prompt_sizes["prompts/examples.md"] == 5400
    assert total > 6000
    assert record.dev_gain is not None and record.dev_gain.low > 0.0  # it did improve dev
    assert record.verdict == "rejected"
    assert record.reason == f"prompt size {total} exceeds the cap 6000"
    assert _head(ws.root, run_git) == base
    assert not (ws.root / "prompts" / "examples.md").exists()


@pytest.mark.slow
def test_tokens_per_episode_above_the_factor_are_rejected(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    base = _head(ws.root, run_git)
    padding = "Remember: " + "very " * 900
    [record] = evolve(ws, generations=1, models=_models(ws, _correct(extra=[padding]))).records

    assert record.dev is not None and record.dev_base is not None
    assert record.dev.tokens_per_episode > 1.5 * record.dev_base.tokens_per_episode
    assert record.dev_gain is not None and record.dev_gain.low > 0.0
    assert sum(record.prompt_sizes.values()) <= 6000
    assert record.verdict == "rejected"
    assert record.reason.startswith("tokens per episode ")
    assert "exceed 1.5x the base" in record.reason
    assert _head(ws.root, run_git) == base


@pytest.mark.slow
def test_parameters_in_range_are_written_and_the_rest_refused(
    ws: Workspace, run_git: RunGit, stub_tests: list[tuple[str, str]]
) -> None:
    replies = [
        json.dumps({"parameters": {"agent.max_turns": 8, "agent.temperature": 0.5}}),
        json.dumps({"parameters": {"agent.max_turns": 99}}),
    ]
    first, second = evolve(ws, generations=2, models=_models(ws, MockLLM(replies))).records

    assert [c.kind for c in first.changes] == ["prompt"]
    written = run_git(ws.root, "show", f"{first.candidate}:{PARAMETERS_FILE}")
    assert yaml.safe_load(written) == {"agent.max_turns": 8}
    assert run_git(ws.root, "show", "--name-only", "--format=", first.candidate).split() == [
        PARAMETERS_FILE
    ]
    assert first.refused == [
        "refused parameter 'agent.temperature': parameter 'agent.temperature' is not declared "
        "under parameters: in evolve.yaml."
    ]
    assert second.changes == [] and "changed nothing" in second.reason
    [line] = second.refused
    assert "'agent.max_turns'" in line and "outside its range [4, 30]" in line


# --- the command line ------------------------------------------------------------------------


@pytest.fixture
def cli_ws(
    workspace: Workspace, run_git: RunGit, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Workspace]:
    ws = _configure(workspace, run_git, train_episodes=2, runs=1)
    monkeypatch.chdir(ws.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    yield ws


@pytest.mark.slow
def test_cli_json_gives_one_document_with_both_generations(
    cli_ws: Workspace, capsys: pytest.CaptureFixture[str], stub_tests: list[tuple[str, str]]
) -> None:
    assert main(["evolve", "--generations", "2", "--json"]) == 0
    out, _ = capsys.readouterr()
    data = json.loads(out)  # exactly one JSON document
    assert data["dry_run"] is False and data["diffs"] == {}
    generations = data["generations"]
    assert [g["number"] for g in generations] == [1, 2]
    for g in generations:
        GenerationRecord.model_validate(g)
        assert g["verdict"] in ("accepted", "rejected") and g["reason"]
        assert g["dev"]["score"] >= 0.0 and g["holdout"]["score"] >= 0.0
    assert [r.model_dump(mode="json") for r in load_records(cli_ws)] == generations


@pytest.mark.slow
def test_cli_text_shows_dev_and_holdout_side_by_side_with_the_verdict(
    cli_ws: Workspace, capsys: pytest.CaptureFixture[str], stub_tests: list[tuple[str, str]]
) -> None:
    assert main(["evolve", "--generations", "1"]) == 0
    out, err = capsys.readouterr()
    [record] = load_records(cli_ws)
    assert record.dev is not None and record.dev_base is not None
    assert record.holdout is not None and record.holdout_base is not None
    dev = f"{record.dev_base.score:.3f} -> {record.dev.score:.3f}"
    holdout = f"{record.holdout_base.score:.3f} -> {record.holdout.score:.3f}"
    assert re.search(r"dev\s.*holdout \(reported\)\s.*verdict", out)
    row = re.compile(
        rf"\b1\s*\W\s*{re.escape(dev)}\s*\W\s*{re.escape(holdout)}\s*\W\s*{record.verdict}"
    )
    assert row.search(out), out
    assert f"generation 1: {record.reason}" in out
    assert "generation 1: scoring the base" in err  # progress goes to stderr


def test_cli_refuses_more_generations_than_the_maximum_in_one_sentence(
    cli_ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _head(cli_ws.root, run_git)
    assert main(["evolve", "--generations", "6"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        "error: 6 generations exceed gate.max_generations (5) in evolve.yaml; ask for fewer."
    ]
    assert _head(cli_ws.root, run_git) == base
    assert load_records(cli_ws) == []
