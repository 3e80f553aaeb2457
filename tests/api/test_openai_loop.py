"""The example agent `examples/agents/openai_loop.py` (a plain OpenAI-compatible tool-calling
loop) against the stub server, through `agent: {name: ...}` and through the Python API; and,
where the real llama.cpp server is prepared (`real_server`), end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import evolve
from chatstub import Answer, chat_stub, reply, stub_cache  # noqa: F401  (autouse)
from conftest import GitRunner, run_cli
from evolve.errors import ModelError
from evolve.workspace import CONFIG_NAME, Workspace
from factories import llama_server

AGENTS = Path(__file__).resolve().parents[2] / "examples" / "agents"


@pytest.fixture
def loop(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(AGENTS))
    import openai_loop

    yield openai_loop


def _tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    body = reply("")
    body["choices"][0]["message"] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }
    body["choices"][0]["finish_reason"] = "tool_calls"
    return body


def plan(n: int, body: dict[str, Any]) -> Answer:
    """A tool call first; once a tool's result came back, the end as a JSON action in text
    (what small local models do)."""
    if body["messages"][-1]["role"] == "tool":
        return Answer(text=json.dumps({"tool": "supervisor__complete_task", "arguments": {}}))
    return Answer(body=_tool_call("phone__search_contacts", {"query": "Sam"}))


def _check_episodes(episodes: list[Any], model: str) -> None:
    assert episodes
    for e in episodes:
        assert e.model == model
        tools = [t.call.tool for t in e.turns if t.call is not None]
        assert tools == ["phone__search_contacts", "supervisor__complete_task"]
        assert e.final_state["completed"] is True
        assert e.input_tokens > 0


def test_the_loop_from_python_against_the_stub(workspace: Workspace, loop: Any) -> None:
    ws = evolve.open(workspace.root)
    with chat_stub(plan) as stub:
        report = ws.score("dev", agent=loop.OpenAILoop(stub.base_url, "stub"), log=False)
        sent = list(stub.chats)
    _check_episodes(report.episodes, "openai-loop/stub")
    first = sent[0]
    assert [t["function"]["name"] for t in first["tools"]] == ws.environment().tools()
    assert (
        first["messages"][0]["role"] == "system" and "<memory>" in first["messages"][0]["content"]
    )
    assert first["messages"][1]["content"].startswith("Task: ")
    answered = sent[1]["messages"]
    assert answered[-1]["role"] == "tool" and answered[-1]["tool_call_id"] == "call-1"


def test_the_loop_by_name_in_evolve_yaml_against_the_stub(
    ws: Workspace,
    run_git: GitRunner,
    loop: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text("utf-8"))
    data["agent"] = {"name": "openai_loop:make_agent", "max_turns": 6}
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: the example agent plays")
    with chat_stub(plan) as stub:
        monkeypatch.setenv("OPENAI_BASE_URL", stub.base_url)
        monkeypatch.setenv("OPENAI_LOOP_MODEL", "stub")
        code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
        assert code == 0, err
        code, _, err = run_cli(capsys, "train", "--episodes", "2", "--json")
        assert code == 0, err
    report = json.loads(out)
    lines = (ws.root / report["log_dir"] / "episodes.jsonl").read_text("utf-8").splitlines()
    assert {json.loads(line)["model"] for line in lines} == {"openai-loop/stub"}
    assert len(lines) == len(evolve.open(ws.root).tasks("dev"))


def test_a_server_that_fails_is_a_failed_episode_not_a_crash(
    workspace: Workspace, loop: Any
) -> None:
    ws = evolve.open(workspace.root)
    with chat_stub(lambda n, body: Answer(status=200, body={"choices": []})) as stub:
        agent = loop.OpenAILoop(stub.base_url, "stub")
        with pytest.raises(ModelError, match="the chat request failed"):
            ws.score("dev", agent=agent, log=False)


# --- the real llama.cpp server -----------------------------------------------------------


@pytest.mark.real_server
@pytest.mark.slow
def test_the_loop_end_to_end_against_the_real_server(
    ws: Workspace,
    run_git: GitRunner,
    loop: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    llama: str,
) -> None:
    """Every command runs to its end with the example agent on a real server: run, train,
    a dry-run generation (quality is not the point: the model is tiny)."""
    path = ws.root / CONFIG_NAME
    data = yaml.safe_load(path.read_text("utf-8"))
    data["agent"] = {"name": "openai_loop:make_agent", "max_turns": 2}
    data["gate"].update({"train_episodes": 1, "runs": 1})
    path.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    splits = ws.evalset_dir / "splits.yaml"  # one task per scored split: the model is slow
    data = yaml.safe_load(splits.read_text("utf-8"))
    data["dev"], data["holdout"] = data["dev"][:1], data["holdout"][:1]
    splits.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "test: the example agent on the real server")
    monkeypatch.setenv("OPENAI_BASE_URL", llama)
    monkeypatch.setenv("OPENAI_LOOP_MODEL", "smollm2")
    monkeypatch.setenv("OPENAI_LOOP_MAX_TOKENS", "96")
    code, out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
    report = json.loads(out)
    lines = (ws.root / report["log_dir"] / "episodes.jsonl").read_text("utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert {r["model"] for r in records} == {"openai-loop/smollm2"}
    assert sum(r["input_tokens"] for r in records) > 0
    code, _, err = run_cli(capsys, "train", "--episodes", "1", "--json")
    assert code == 0, err
    code, _, err = run_cli(capsys, "evolve", "--generations", "1", "--dry-run", "--json")
    assert code == 0, err
    handle = evolve.open(ws.root)
    scored = handle.score("dev", agent=loop.OpenAILoop(llama, "smollm2", max_tokens=96), log=False)
    assert len(scored.episodes) == len(handle.tasks("dev"))


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real server's API root."""
    with llama_server(tmp_path_factory.mktemp("llama")) as started:
        yield started.base_url
