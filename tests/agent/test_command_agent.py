"""Command-mode agents (issue 24 item 3): a program plays the episode through one JSON request
and one JSON result; a hung, crashing or lying program is a failed episode, logged, and
nothing is written outside its sandbox's folder."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from evolve import sandbox
from evolve.agent._command import CommandAgent, command_agent, parse_result, request_json
from evolve.agent._command import CommandFailed as Failed
from evolve.envs import Environment, Task
from evolve.episode import EpisodeResult, run_episode
from evolve.evaluate import episode_setup, open_env
from evolve.llm import make_llm
from evolve.sandbox import Limits
from evolve.workspace import AgentConfig, Workspace, parse_config

needs_bwrap = pytest.mark.skipif(
    not sandbox.bwrap_works(),
    reason="bubblewrap is not installed or may not create namespaces here (CI installs it)",
)
SECRET = "sk-proj-attack-test-0123456789abcdefghij"


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every sandbox folder under `tmp_path/sandboxes`: checked empty afterwards."""
    base = tmp_path / "sandboxes"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    assert list(base.iterdir()) == [], "a sandbox folder was left behind"


class Played:
    def __init__(self, result: EpisodeResult, log: list[str]) -> None:
        self.result, self.log = result, log
        self.record = result.record


def _play(
    workspace: Workspace,
    tmp_path: Path,
    program: str,
    *,
    limits: Limits | None = None,
    env_allow: tuple[str, ...] = (),
    split_task: str = "note",
) -> Played:
    script = tmp_path / "agent_program.py"
    script.write_text(program, encoding="utf-8")
    env: Environment = open_env(workspace)
    task: Task = next(t for t in env.tasks("dev") if t.kind == split_task)
    log: list[str] = []
    agent = CommandAgent(
        argv=(sys.executable, str(script)), root=workspace.root, env_allow=env_allow,
        limits=limits or Limits(wall_s=30), log=log.append,
    )  # fmt: skip
    setup = replace(episode_setup(workspace, env, "alex"), agent=agent)
    result = run_episode(
        env, make_llm("sim", env=env), task, setup,
        history=env.initial_history("alex"), seed=1,
    )  # fmt: skip
    return Played(result, log)


def _failed(played: Played, *words: str) -> str:
    error = played.record.model_error
    assert error is not None and error.startswith("the agent command failed: "), error
    assert not played.record.accepted and played.record.turns == []
    assert len(played.log) == 1 and played.log[0].startswith("evolve: the agent command failed")
    for word in words:
        assert word in error, error
    return error


GOOD = """
import json, sys
req = json.load(sys.stdin)
title = req["task"]["instruction"].split("'")[1]
json.dump({"version": 1, "answer": "saved",
           "tool_calls": [{"tool": "simple_note__create_note",
                           "arguments": {"title": title, "content": "a\\nb"}},
                          {"tool": "supervisor__complete_task", "arguments": {}}],
           "transcript": [{"role": "assistant", "content": "done"}],
           "usage": {"input_tokens": 11, "output_tokens": 7}}, sys.stdout)
"""


def test_a_good_program_plays_the_episode_its_calls_replayed_in_order(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    played = _play(workspace, tmp_path, GOOD)
    record = played.record
    assert record.model_error is None and played.log == []
    assert [t.call.tool for t in record.turns if t.call] == [
        "simple_note__create_note", "supervisor__complete_task",
    ]  # fmt: skip
    assert record.final_state["completed"] and record.final_state["notes"] == 1
    assert (record.input_tokens, record.output_tokens) == (11, 7)
    assert record.model == f"command:{os.path.basename(sys.executable)}"
    assert record.turns[-1].reply == "answer: saved"


def test_the_request_carries_task_prompt_tools_and_limits(workspace: Workspace) -> None:
    env = open_env(workspace)
    agent = CommandAgent(argv=("x",), root=workspace.root)
    from evolve.agent import AgentRequest

    request = AgentRequest(
        task_id="t", instruction="do it", task_message="Task: do it", system_prompt="SYS",
        tools=tuple(env.tools()), max_turns=5, seed=3,
        sections={"api_docs": env.api_docs(), "memory": "- a rule"},
    )  # fmt: skip
    body = request_json(request, agent.limits)
    assert body["task"] == {"id": "t", "instruction": "do it", "message": "Task: do it"}
    assert body["system_prompt"] == "SYS" and body["sections"]["memory"] == "- a rule"
    docs = {t["name"]: t["doc"] for t in body["tools"]}
    assert set(docs) == set(env.tools())
    assert docs["supervisor__complete_task"].startswith("supervisor__complete_task(")
    assert body["limits"]["max_turns"] == 5 and body["seed"] == 3
    schema = json.loads(
        (Path(__file__).parents[2] / "docs" / "command-agents.schema.json").read_text("utf-8")
    )
    assert set(schema["$defs"]["request"]["required"]) <= set(body)


def test_a_program_that_hangs_past_its_timeout_fails_the_episode(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    played = _play(workspace, tmp_path, "import time\ntime.sleep(10**6)", limits=Limits(wall_s=2))
    _failed(played, "wall-clock limit")
    assert played.record.duration_s < 60


def test_output_that_is_not_json_fails_the_episode(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    played = _play(workspace, tmp_path, "print('I sent the text, trust me')")
    _failed(played, "not one usable JSON object")


def test_100_mb_of_output_fails_the_episode(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    program = "import sys\nfor _ in range(1600): sys.stdout.buffer.write(b'{' * 65536)"
    played = _play(workspace, tmp_path, program)  # 100 MiB against the 8 MiB default cap
    _failed(played, "stdout passed its size limit")


def test_exit_1_fails_the_episode_and_says_its_error(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    program = "import sys\nprint('{}')\nraise SystemExit('boom: the agent gave up')"
    played = _play(workspace, tmp_path, program)
    error = _failed(played, "exited with status 1")
    assert "boom: the agent gave up" in error


@needs_bwrap
def test_writes_to_the_parent_and_to_the_workspace_are_refused(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    target = workspace.root / "memory" / "planted.md"
    before = sorted(p.relative_to(workspace.root) for p in workspace.root.rglob("*"))
    program = f"""
open('../escaped.txt', 'w').write('in the episode folder only')
open({str(target)!r}, 'w').write('pwned')
"""
    played = _play(workspace, tmp_path, program)
    _failed(played, "exited with status 1", "FileNotFoundError")
    assert not target.exists()
    assert sorted(p.relative_to(workspace.root) for p in workspace.root.rglob("*")) == before
    assert not list(tmp_path.rglob("escaped.txt"))  # the episode's folder is gone with it


def test_an_api_key_not_on_the_allow_list_is_not_there(
    workspace: Workspace, tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    played = _play(workspace, tmp_path, "import os\nprint(os.environ['OPENAI_API_KEY'])")
    error = _failed(played, "exited with status 1", "KeyError")
    assert SECRET not in error
    # Allowed by name, it does reach the program.
    monkeypatch.setenv("AGENT_TOKEN", "tok-visible")
    program = GOOD.replace('"answer": "saved"', '"answer": __import__("os").environ["AGENT_TOKEN"]')
    played = _play(workspace, tmp_path, program, env_allow=("AGENT_TOKEN",))
    assert played.record.model_error is None
    assert played.record.turns[-1].reply == "answer: tok-visible"


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ('{"input_tokens": -1}', "usage.input_tokens"),
        ('{"output_tokens": 1.5}', "usage.output_tokens"),
        ('{"input_tokens": "12"}', "usage.input_tokens"),
        ('{"input_tokens": true}', "usage.input_tokens"),
        ('{"input_tokens": 1e400}', "not one usable JSON object"),
        ('{"output_tokens": 10000000000000}', "usage.output_tokens"),
        ('{"cost": -0.5}', "usage.cost"),
        ('{"tokens": 3}', "unknown field"),
        ("[1, 2]", "usage must be a JSON object"),
    ],
)
def test_usage_that_is_not_a_finite_non_negative_count_fails_the_episode(
    workspace: Workspace, tmp_path: Path, own_tmp: Path, usage: str, said: str
) -> None:
    program = f'print(\'{{"tool_calls": [], "usage": {usage}}}\')'
    played = _play(workspace, tmp_path, program)
    _failed(played, said)


def test_an_unknown_tool_fails_the_episode_and_nothing_is_called(
    workspace: Workspace, tmp_path: Path, own_tmp: Path
) -> None:
    calls = [
        {"tool": "simple_note__create_note", "arguments": {"title": "t", "content": "c"}},
        {"tool": "shell__run", "arguments": {"cmd": "rm -rf /"}},
    ]
    played = _play(workspace, tmp_path, f"print({json.dumps(json.dumps({'tool_calls': calls}))})")
    _failed(played, "names no tool of this environment")
    assert played.record.final_state.get("notes") == 0


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        (b"", "printed nothing"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"tool_calls": [], "extra": 1}', "unknown field"),
        (b'{"tool_calls": {"tool": "x"}}', "tool_calls must be a JSON array"),
        (b'{"tool_calls": [{"tool": "supervisor__complete_task", "arguments": []}]}', "arguments"),
        (b'{"answer": 3}', "answer must be a string"),
        (b'{"transcript": "all fine"}', "transcript must be"),
        (b'{"version": 2}', "version"),
        (b'{"a": ' * 40 + b"1" + b"}" * 40, "deeper"),
    ],
)
def test_results_of_the_wrong_shape_are_refused(stdout: bytes, said: str) -> None:
    with pytest.raises(Failed, match=said):
        parse_result(stdout, ["supervisor__complete_task"])


def test_the_configuration_builds_the_agent_with_its_limits(tmp_path: Path) -> None:
    cfg = parse_config(
        "agent:\n  command: [node, agent.mjs]\n  env: [MY_TOKEN]\n  timeout_s: 5\n"
        "  memory_mb: 512\n  max_output_bytes: 4096\n"
    )
    agent = command_agent(cfg.agent, tmp_path)
    assert agent is not None and agent.argv == ("node", "agent.mjs")
    assert agent.env_allow == ("MY_TOKEN",) and agent.limits.wall_s == 5
    assert agent.limits.memory_bytes == 512 * 1024**2 and agent.limits.stdout_bytes == 4096
    assert command_agent(AgentConfig(), tmp_path) is None


@pytest.mark.parametrize(
    "body",
    [
        "agent:\n  command: []\n",
        "agent:\n  command: ['']\n",
        'agent:\n  command: ["a\\x00b"]\n',
        "agent:\n  command: [x]\n  env: ['NOT A NAME']\n",
        "agent:\n  command: [x]\n  timeout_s: 0\n",
        "agent:\n  command: [x]\n  timeout_s: .inf\n",
        "agent:\n  command: [x]\n  memory_mb: 1\n",
    ],
)
def test_a_bad_agent_command_configuration_is_one_clear_error(body: str) -> None:
    from evolve.errors import ConfigError

    with pytest.raises(ConfigError, match=r"key 'agent\."):
        parse_config(body)
