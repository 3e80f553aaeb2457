"""`evolve.open`: prompt sections, recording an episode of one's own agent (one commit, under
the writer lock, safe across threads), and scoring a split with any callable agent."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

import evolve
from conftest import GitRunner
from evolve.agent import AgentRequest, Trace
from evolve.envs import World
from evolve.errors import EvolveError, LockHeld, NotAWorkspace, UnknownName
from evolve.llm import JsonSchema, Message
from evolve.llm._mock import MockLLM
from evolve.memory import load_units
from evolve.txn import lock as txn_lock
from evolve.workspace import CONFIG_NAME, Workspace


def _reflect(messages: Sequence[Message], schema: JsonSchema | None) -> str:
    """A reflexion updater: one sentence naming the code word the complaint asks for."""
    found = re.search(r"code word (w\d+)", messages[-1].content)
    return json.dumps(
        {"reflection": f"Sign texts with the code word {found[1] if found else '?'}."}
    )


def _configure(ws: Workspace, run_git: GitRunner, **train: object) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text("utf-8"))
    data["train"].update({"recipe": "reflexion", **train})
    data["caps"]["reflexion"] = {"units": 100, "chars": 300}
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: reflexion, uncapped")


def _trailers(root: Path, run_git: GitRunner) -> list[dict[str, str]]:
    out = run_git(root, "log", "--format=%H%x00%(trailers:unfold=true)%x01", "HEAD")
    commits = []
    for chunk in out.split("\x01"):
        if "\x00" not in chunk:
            continue
        sha, _, text = chunk.strip().partition("\x00")
        pairs = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
        commits.append({"sha": sha, **pairs})
    return commits


def test_import_evolve_stays_cheap() -> None:
    """`import evolve` (every command's first import) loads nothing more; the API on use."""
    code = (
        "import sys, evolve\n"
        "print(sorted(m for m in sys.modules if m.startswith(('evolve', 'pydantic', 'yaml'))))\n"
        "print('typing' in sys.modules)\n"
        "evolve.open\n"
        "print('evolve.api' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:3] == ["['evolve']", "False", "True"]
    assert "open" in dir(evolve) and "Workspace" in evolve.__all__


def test_open_finds_the_workspace_or_says_there_is_none(
    workspace: Workspace, tmp_path: Path
) -> None:
    (workspace.root / "prompts" / "deep").mkdir()
    assert evolve.open(workspace.root / "prompts" / "deep").root == workspace.root
    with pytest.raises(NotAWorkspace):
        evolve.open(tmp_path / "nowhere")


def test_a_record_is_one_commit_and_its_memory_is_in_the_next_sections(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _configure(workspace, run_git)
    ws = evolve.open(workspace.root, models={"updater": MockLLM(_reflect)})
    before = ws.sections("Text Sam that I am late")
    assert "(nothing yet)" in before.blocks() and before.memory == ""
    head = run_git(workspace.root, "rev-parse", "HEAD").strip()

    done = ws.record(
        task_id="late-1",
        instruction="Text Sam that I am late",
        success=False,
        complaint="Sign my texts with the code word w7.",
        transcript="sent 'running late' to Sam",
    )
    assert done.learned and done.commit is not None and dict(done.ops) == {"add": 1}
    assert run_git(workspace.root, "rev-parse", "HEAD~1").strip() == head
    newest = _trailers(workspace.root, run_git)[0]
    assert newest["sha"] == done.commit
    assert (newest["Evolve-Task"], newest["Evolve-Recipe"], newest["Evolve-Episode"]) == (
        "late-1",
        "reflexion",
        "0",
    )
    assert newest["Evolve-Stream"] == done.stream == "alex/reflexion/recorded/user"
    after = ws.sections("Text Sam that I am late")
    assert "Sign texts with the code word w7." in after.memory
    assert after.memory in after.system_prompt and "<memory>" in after.blocks()
    assert run_git(workspace.root, "status", "--porcelain") == ""

    ok = ws.record(task_id="late-2", instruction="Text Sam", success=True)
    assert (ok.learned, ok.commit, ok.episode) == (False, None, 1)
    assert run_git(workspace.root, "rev-parse", "HEAD").strip() == done.commit


def test_concurrent_records_are_each_one_commit_and_none_is_lost(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _configure(workspace, run_git)
    ws = evolve.open(workspace.root, models={"updater": MockLLM(_reflect)})
    count = 12
    start = threading.Barrier(count)
    results: list[evolve.Recorded] = []
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            start.wait()
            results.append(
                ws.record(
                    task_id=f"t{i}",
                    instruction="Text Sam",
                    success=False,
                    complaint=f"Sign my texts with the code word w{i}.",
                )
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r.episode for r in results) == list(range(count))
    assert all(r.commit is not None for r in results)
    recorded = [c for c in _trailers(workspace.root, run_git) if "Evolve-Stream" in c]
    assert sorted(c["Evolve-Task"] for c in recorded) == sorted(f"t{i}" for i in range(count))
    assert {c["sha"] for c in recorded} == {r.commit for r in results}
    assert all(c["Evolve-Ops"].startswith("add=") for c in recorded)
    # reflexion keeps its last three active and evicts older ones: every one was committed
    bodies = run_git(workspace.root, "log", "--format=%b", "HEAD")
    added = re.findall(r"^- add reflexion-\w+: (.*)$", bodies, re.M)
    assert sorted(added) == sorted(f"Sign texts with the code word w{i}." for i in range(count))
    assert len([u for u in load_units(workspace.root) if u.status == "active"]) == 3


def test_a_record_is_refused_while_another_process_writes(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _configure(workspace, run_git)
    ws = evolve.open(workspace.root, models={"updater": MockLLM(_reflect)})
    head = run_git(workspace.root, "rev-parse", "HEAD").strip()
    script = (
        "import sys; from pathlib import Path\n"
        "from evolve.workspace import Workspace; from evolve.txn import lock\n"
        "with lock(Workspace(Path(sys.argv[1])), 'evolve train'):\n"
        "    print('held', flush=True); sys.stdin.readline()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(workspace.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockHeld, match="locked by `evolve train`"):
            ws.record(task_id="t", instruction="x", success=False, complaint="code word w1.")
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait()
    assert run_git(workspace.root, "rev-parse", "HEAD").strip() == head
    with txn_lock(workspace, "test: the lock is free"):
        pass


def test_a_record_refuses_uncommitted_memory_and_the_skills_recipe(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _configure(workspace, run_git)
    ws = evolve.open(workspace.root, models={"updater": MockLLM(_reflect)})
    (workspace.root / "memory" / "alex").mkdir(parents=True, exist_ok=True)
    (workspace.root / "memory" / "alex" / "note.md").write_text("hand", "utf-8")
    with pytest.raises(EvolveError, match="memory/ has uncommitted changes"):
        ws.record(task_id="t", instruction="x", success=False, complaint="code word w1.")
    (workspace.root / "memory" / "alex" / "note.md").unlink()
    with pytest.raises(UnknownName, match="unknown persona 'nobody'"):
        ws.record(task_id="t", instruction="x", success=False, persona="nobody")
    _configure(workspace, run_git, recipe="skills")
    skills = evolve.open(workspace.root)
    with pytest.raises(EvolveError, match="the skills recipe learns in batches"):
        skills.record(task_id="t", instruction="x", success=False, complaint="no")


def test_a_secret_in_a_record_never_reaches_memory_or_history(
    workspace: Workspace, run_git: GitRunner
) -> None:
    _configure(workspace, run_git)
    secret = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
    ws = evolve.open(workspace.root, models={"updater": MockLLM(_reflect)})
    done = ws.record(
        task_id="t",
        instruction="Text Sam",
        success=False,
        complaint=f"Sign my texts with the code word w3; my key is {secret}.",
        transcript=f"used {secret}",
    )
    assert done.commit is not None
    log = run_git(workspace.root, "log", "-p", "HEAD")
    assert secret not in log


def test_score_plays_any_callable_and_the_workspace_agent(workspace: Workspace) -> None:
    ws = evolve.open(workspace.root)
    seen: list[AgentRequest] = []
    lock = threading.Lock()

    def lazy(request: AgentRequest, world: World) -> str:
        with lock:
            seen.append(request)
        world.call("supervisor__complete_task", {})
        return "done"

    report = ws.score("dev", agent=lazy, concurrency=2, log=False)
    dev = ws.tasks("dev")
    assert len(report.episodes) == len(dev) == len(seen)
    assert {e.model for e in report.episodes} == {"lazy"}
    assert all(e.turns[-1].reply == "done" for e in report.episodes)
    assert all(e.turns[0].call is not None for e in report.episodes)
    assert {r.task_id for r in seen} == {t.id for t in dev}
    assert all("<memory>" in r.system_prompt and "memory" in r.sections for r in seen)

    def traced(request: AgentRequest, world: World) -> Trace:
        return Trace()

    assert ws.score("dev", agent=evolve.as_agent(traced, "quiet"), log=False).model == "quiet"
    own = ws.score("dev", log=True)
    assert own.model == "sim" and own.log_dir is not None
    assert (workspace.root / own.log_dir / "episodes.jsonl").is_file()
    with pytest.raises(TypeError, match="an agent must be a function"):
        evolve.as_agent(42)  # type: ignore[arg-type]
