"""Fault injection at every step of a generation (issue 9, item 1).

`EVOLVE_FAULT=<step>:<kind>` (see `evolve._faults`) fails a generation at one step: after
the training batch, in the reflector (prompt written, not committed), in the workspace tests,
in candidate scoring, at the verdict, before the record. By exception, SIGINT and SIGTERM the
process itself rolls back; by SIGKILL (a real one, of an `evolve evolve` subprocess) the next
command does. Every case must end with HEAD at the base, a clean tree, no temp copies, no
journal or lock, and a record `rejected (error: ...)` naming the step.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _gen_helpers import assert_rolled_back, evolve_cli, head, leftovers, make_workspace

from evolve._faults import ENV, InjectedFault
from evolve.errors import EvolveError
from evolve.generations import evolve, load_records
from evolve.txn import WriteInterrupted
from evolve.workspace import Workspace

# Slow end to end: `-m "not slow"` leaves it out of a quick local run (CI runs it).
pytestmark = pytest.mark.slow

RunGit = Callable[..., str]

# step -> the phase the record names
STEPS = {
    "start": "start",
    "batch": "training",
    "reflector": "the reflector",
    "tests": "workspace tests",
    "scoring": "scoring",
    "verdict": "the verdict",
    "record": "the record",
}


@pytest.fixture
def tmpdir_(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of this test's own, where evolve's temporary copies go."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture
def ws(tmp_path: Path, run_git: RunGit, tmpdir_: Path) -> Workspace:
    return make_workspace(tmp_path, run_git)


# --- in process: exception, SIGINT, SIGTERM ----------------------------------------------


@pytest.mark.parametrize("step", list(STEPS))
def test_an_exception_at_any_step_ends_in_the_base_with_a_record(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    base = head(ws.root, run_git)
    monkeypatch.setenv(ENV, f"{step}:raise")

    with pytest.raises(EvolveError) as info:
        evolve(ws, generations=2)

    message = str(info.value)
    assert message.startswith(f"generation 1 InjectedFault during {STEPS[step]}: ")
    assert message.endswith(
        f"the workspace was reset to its base {base[:10]} and the generation recorded as rejected."
    )
    assert isinstance(info.value.__cause__, InjectedFault)
    record = assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase=STEPS[step])
    assert record.reason == (
        f"error: InjectedFault during {STEPS[step]}: injected fault at step {step}"
    )
    assert [r.number for r in load_records(ws)] == [1]  # the second generation never ran
    if step not in ("start", "batch"):
        assert record.changes and {c.kind for c in record.changes} == {"memory"} | (
            {"prompt"} if step not in ("reflector",) else set()
        )
        # The discarded commits stay reachable for a post-mortem, on no branch.
        tip = run_git(ws.root, "rev-parse", "refs/evolve/aborted/gen-0001").strip()
        assert tip == record.candidate == record.changes[-1].commit
        assert run_git(ws.root, "branch", "--contains", tip).strip() == ""


@pytest.mark.parametrize("step", ["batch", "reflector", "tests", "scoring", "verdict"])
def test_sigint_at_any_step_ends_in_the_base_with_a_record(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    base = head(ws.root, run_git)
    monkeypatch.setenv(ENV, f"{step}:sigint")

    with pytest.raises(KeyboardInterrupt):
        evolve(ws, generations=1)

    record = assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase=STEPS[step])
    assert record.reason == f"error: interrupted by SIGINT (Ctrl-C) during {STEPS[step]}"


@pytest.mark.parametrize("step", ["reflector", "scoring"])
def test_sigterm_ends_in_the_base_with_a_record_and_handlers_are_restored(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    base = head(ws.root, run_git)
    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setenv(ENV, f"{step}:sigterm")

    with pytest.raises(
        WriteInterrupted, match=f"^generation 1 stopped by SIGTERM during {STEPS[step]};"
    ) as stopped:
        evolve(ws, generations=1)

    assert stopped.value.exit_code == 143

    assert signal.getsignal(signal.SIGTERM) is before
    record = assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase=STEPS[step])
    assert record.reason == f"error: stopped by SIGTERM during {STEPS[step]}"


def test_a_generation_past_its_time_limit_is_rolled_back(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evolve.generations._loop as loop

    base = head(ws.root, run_git)
    original = loop.Reflector.propose

    def slow(self: object, *args: object, **kwargs: object) -> object:
        time.sleep(5)  # past the limit however fast the machine (the timer interrupts it)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(loop.Reflector, "propose", slow)
    started = time.monotonic()
    with pytest.raises(EvolveError, match="ran past its time limit of 0.5 seconds during "):
        evolve(ws, generations=1, timeout=0.5)

    assert time.monotonic() - started < 30
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    [record] = load_records(ws)
    assert record.phase is not None
    assert record.reason == f"error: ran past its time limit of 0.5 seconds during {record.phase}"
    assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase=record.phase)


def test_an_error_in_a_later_generation_keeps_the_accepted_ones(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evolve.generations._loop as loop

    first = evolve(ws, generations=1).records[0]
    assert first.verdict == "accepted", first.reason
    base = head(ws.root, run_git)
    assert base == first.final != first.base
    calls = iter(range(100))
    original = loop.Reflector.propose

    def propose(self: object, *args: object, **kwargs: object) -> object:
        next(calls)
        raise UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")

    monkeypatch.setattr(loop.Reflector, "propose", propose)
    with pytest.raises(EvolveError, match="^generation 2 UnicodeEncodeError during the reflector"):
        evolve(ws, generations=1)
    monkeypatch.setattr(loop.Reflector, "propose", original)

    record = assert_rolled_back(ws, run_git, base, tmpdir_, number=2, phase="the reflector")
    assert [c.kind for c in record.changes] == ["memory", "memory"]
    # Numbers are never reused, and the next generation starts after the used batch.
    third = evolve(ws, generations=1).records[0]
    assert third.number == 3 and third.base == base
    assert [r.number for r in load_records(ws)] == [1, 2, 3]
    assert record.stream_end is not None and third.stream_end == record.stream_end + 2


# --- SIGKILL of a real `evolve evolve` process: the next command recovers -----------------


def _killed(ws: Workspace, tmpdir_: Path, step: str) -> subprocess.CompletedProcess[str]:
    done = evolve_cli(
        ws.root, "evolve", "--generations", "2", env={ENV: f"{step}:kill", "TMPDIR": str(tmpdir_)}
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert (ws.store.git_dir / "evolve-generation.json").exists()
    return done


@pytest.mark.parametrize(
    ("step", "recover_with"),
    [
        ("batch", "log"),
        ("reflector", "log"),
        ("tests", "show"),
        ("scoring", "log"),
        ("verdict", "memory"),
        ("record", "log"),
    ],
)
def test_sigkill_at_any_step_is_rolled_back_by_the_next_command(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, step: str, recover_with: str
) -> None:
    base = head(ws.root, run_git)
    _killed(ws, tmpdir_, step)
    if step in ("tests", "scoring"):
        assert leftovers(tmpdir_), "the killed process left its temporary copy"
    if step != "batch":
        assert head(ws.root, run_git) != base  # ungated commits, for now

    args = {"log": ["log"], "show": ["log", "--json"], "memory": ["memory"]}[recover_with]
    done = evolve_cli(ws.root, *args, env={"TMPDIR": str(tmpdir_)})

    assert done.returncode == 0, done.stderr
    assert "recovered: generation 1 was interrupted" in done.stderr
    record = assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase=STEPS[step])
    assert record.reason.startswith("error: the process running it (pid ")
    assert f"stopped during {STEPS[step]}; `evolve " in record.reason
    assert [r.number for r in load_records(ws)] == [1]


def test_sigkill_then_evolve_again_recovers_first_and_uses_the_next_number(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    _killed(ws, tmpdir_, "scoring")

    done = evolve_cli(
        ws.root, "evolve", "--generations", "1", "--json", env={"TMPDIR": str(tmpdir_)}
    )

    assert done.returncode == 0, done.stderr
    first, second = load_records(ws)
    assert (first.number, first.verdict, first.phase) == (1, "rejected", "scoring")
    assert "`evolve evolve` rolled it back" in first.reason
    assert second.number == 2 and second.base == base
    assert leftovers(tmpdir_) == []
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_sigkill_then_train_recovers_first_and_keeps_later_edits_in_a_stash(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    base = head(ws.root, run_git)
    _killed(ws, tmpdir_, "reflector")  # the prompt file is written and not committed
    # Someone edits files before the next command: the rollback must not destroy them.
    (ws.root / "prompts" / "system.md").write_text("my own edit\n", encoding="utf-8")
    (ws.root / "prompts" / "draft.md").write_text("my draft\n", encoding="utf-8")

    done = evolve_cli(ws.root, "train", "--episodes", "1", env={"TMPDIR": str(tmpdir_)})

    assert done.returncode == 0, done.stderr
    [record] = load_records(ws)
    assert record.phase == "the reflector" and "`evolve train` rolled it back" in record.reason
    assert record.reason.endswith("its uncommitted files are in `git stash list`")
    assert "interrupted generation 1" in run_git(ws.root, "stash", "list")
    assert "my own edit" in run_git(ws.root, "stash", "show", "-p", "stash@{0}")
    assert "my draft" in run_git(ws.root, "show", "stash@{0}^3:prompts/draft.md")
    # Training ran after the rollback, on top of the base.
    assert run_git(ws.root, "merge-base", "--is-ancestor", base, "HEAD") == ""
    log = run_git(ws.root, "log", "--format=%s", f"{base}..HEAD")
    assert "reflector" not in log
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""


def test_an_outside_sigkill_while_scoring_is_recovered(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    """The kill comes from outside while the candidate is being scored in its temp copy."""
    import os

    base = head(ws.root, run_git)
    env = {**os.environ, ENV: "scoring:hang", "TMPDIR": str(tmpdir_)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolve", "evolve", "--generations", "1"],
        cwd=ws.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if f"{ENV}: hanging at step scoring" in line:
                break
        proc.kill()
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert leftovers(tmpdir_)

    done = evolve_cli(ws.root, "log", env={"TMPDIR": str(tmpdir_)})

    assert done.returncode == 0, done.stderr
    assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase="scoring")


@pytest.mark.parametrize(("kind", "code"), [("sigint", 130), ("sigterm", 143)])
def test_the_command_line_reports_an_interrupted_generation(
    ws: Workspace, run_git: RunGit, tmpdir_: Path, kind: str, code: int
) -> None:
    base = head(ws.root, run_git)
    done = evolve_cli(
        ws.root,
        "evolve",
        "--generations",
        "1",
        env={ENV: f"scoring:{kind}", "TMPDIR": str(tmpdir_)},
    )

    assert done.returncode == code
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    if kind == "sigint":
        assert lines[-1] == (
            f"interrupted: generation 1 was interrupted during scoring; the workspace was reset "
            f"to its base {base[:10]} and the generation recorded as rejected."
        )
    else:
        assert lines[-1] == (
            f"interrupted: generation 1 stopped by SIGTERM during scoring; the workspace was reset to "
            f"its base {base[:10]} and the generation recorded as rejected."
        )
    assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase="scoring")


def test_a_reflector_reply_with_a_lone_surrogate_never_leaves_ungated_commits(
    ws: Workspace, run_git: RunGit, tmpdir_: Path
) -> None:
    """The case from the issue: such a reply raised after 2 training commits, which stayed.
    Whether the reply is refused or raises, the generation ends recorded, HEAD is the
    recorded final commit and nothing is half-written."""
    from evolve.evaluate import open_env
    from evolve.generations._loop import _Models
    from evolve.llm import MockLLM
    from evolve.sim import SimLLM

    base = head(ws.root, run_git)
    env = open_env(ws)
    reply = '{"guidance": ["Sign off \\ud800 always."], "edits": [{"path": "prompts/x\\ud800.md", "content": "hi"}]}'
    models = _Models(SimLLM(env), SimLLM(env), MockLLM(lambda messages, schema: reply))

    try:
        evolve(ws, generations=1, models=models)
    except EvolveError as exc:
        assert "recorded as rejected" in str(exc)
        assert_rolled_back(ws, run_git, base, tmpdir_, number=1, phase="the reflector")
    [record] = load_records(ws)
    assert head(ws.root, run_git) == record.final
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert leftovers(tmpdir_) == []
    summary = (ws.root / "generations" / "gen-0001.md").read_text(encoding="utf-8")
    assert summary.startswith("# Generation 1: ")
