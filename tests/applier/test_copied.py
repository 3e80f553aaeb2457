"""Issue 22: nothing a model copied becomes knowledge.

Through a stub OpenAI-compatible server (the real HTTP client, `train` and the reflector as a
user runs them): an updater that echoes the prompt evolve sent it, one that answers with
placeholders and `<bullet id>`, and a reflector whose guidance reads `- ...`, `- <rule>`,
`- TODO`. On main these committed units such as "a preference the playbook lacks" and wrote
the guidance into `prompts/system.md`; now each is refused at the applier with its reason in
the commit (or the proposal's refusals), and the good statements next to them are kept.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

import pytest

from evolve.applier import plan_prompt_changes
from evolve.llm._http import RetryPolicy
from evolve.llm._openai import OpenAIChat
from evolve.memory import load_units
from evolve.reflector import Reflector
from evolve.train import train
from evolve.workspace import Workspace

Answer = Callable[[list[dict[str, str]], str], Any]  # (messages, schema name) -> reply JSON
GOOD = "Sign every text message with a dash and my first name."


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model cache and endpoint memory in a folder of this test's own."""
    monkeypatch.setenv("EVOLVE_CACHE_DIR", str(tmp_path_factory.mktemp("evolve-cache")))


@dataclass
class Server:
    """An OpenAI-compatible chat server whose reply is `answer(messages, schema name)`."""

    answer: Answer
    url: str = ""
    prompts: list[list[dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(lambda messages, name: {})

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802  (http.server's name)
            request = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            messages = request.get("messages", [])
            state.prompts.append(messages)
            fmt = request.get("response_format") or {}
            name = (fmt.get("json_schema") or {}).get("name", "")
            content = json.dumps(state.answer(messages, name))
            body = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": "stub",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{http.server_address[1]}/v1"
    try:
        yield state
    finally:
        http.shutdown()
        http.server_close()


def _model(server: Server) -> OpenAIChat:
    return OpenAIChat(
        "stub", base_url=server.url, retry=RetryPolicy(max_attempts=1), structured="json_schema"
    )


def _instructions(messages: list[dict[str, str]]) -> list[str]:
    """The lines evolve wrote into the prompt itself: the system message and every line of
    the user message outside its `<section>`s (what an echoing model copies)."""
    user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    outside = re.sub(r"<(\w+)>.*?</\1>", "", user, flags=re.S)
    lines = [line.strip() for line in outside.splitlines() if line.strip()]
    system = [m["content"].replace("\n", " ") for m in messages if m["role"] == "system"]
    return [line for line in system + lines if len(line) <= 300]


def _logged(ws: Workspace, report: Any) -> str:
    """Every refusal logged: the commits' bodies and the episodes' refusal lines (an episode
    that wrote nothing keeps them on the side ref)."""
    lines = [r for o in report.outcomes for r in o.refused]
    return ws.store.git("log", "--format=%B") + "\n".join(lines)


def test_an_updater_that_echoes_its_prompt_commits_none_of_it(
    workspace: Workspace, server: Server
) -> None:
    echoed: set[str] = set()

    def echo(messages: list[dict[str, str]], name: str) -> Any:
        # what the measured run committed, then the prompt's own lines
        lines = ["a preference the playbook lacks", *_instructions(messages)][:12]
        echoed.update(lines)
        return {"operations": [{"op": "add", "text": line} for line in lines]}

    server.answer = echo
    report = train(workspace, recipe="ace", episodes=3, updater_llm=_model(server))
    assert server.prompts, "the updater was never asked"
    texts = {u.text for u in load_units(workspace.root) if u.recipe == "ace"}
    assert not texts & echoed, texts & echoed
    logged = _logged(workspace, report)
    assert "repeats evolve's own prompt" in logged
    assert "a preference the playbook lacks" in logged


def test_placeholders_and_bullet_ids_are_refused_and_the_good_statement_kept(
    workspace: Workspace, server: Server
) -> None:
    junk = ["...", "- ...", "TODO", "- <rule>", "<bullet id>", "STATEMENT", "Use ... for ...",
            "Keep $complaint in mind.", "Always check the <bullet id> first."]  # fmt: skip

    def placeholders(messages: list[dict[str, str]], name: str) -> Any:
        ops: list[dict[str, Any]] = [{"op": "add", "text": text} for text in junk]
        ops.append({"op": "modify", "id": "<bullet id>", "text": GOOD})
        ops.append({"op": "add", "text": GOOD})
        return {"operations": ops, "bullet_tags": [{"id": "<bullet id>", "tag": "helpful"}]}

    server.answer = placeholders
    report = train(workspace, recipe="ace", episodes=2, updater_llm=_model(server))
    texts = [u.text for u in load_units(workspace.root) if u.recipe == "ace"]
    assert texts == [GOOD]
    body = _logged(workspace, report)
    for reason in ("placeholder", "template token", "ellipsis", "template variable", "names"):
        assert reason in body, reason


def test_the_prompts_evolve_sends_show_no_copyable_placeholder_value(
    workspace: Workspace, server: Server
) -> None:
    # Every recipe's prompt as sent, and every proposer template on disk.
    prompts: list[str] = []
    server.answer = lambda messages, name: {}
    for recipe in ("ace", "topl", "tepa", "trace", "reflexion", "rewrite"):
        server.prompts.clear()
        train(workspace, recipe=recipe, episodes=1, updater_llm=_model(server))
        prompts += [line for p in server.prompts for line in _instructions(p)]
    root = resources.files("evolve")
    for folder in ("updaters", "reflector", "skills"):
        for entry in root.joinpath(folder, "prompts").iterdir():
            if entry.name.endswith(".md"):
                prompts.append(entry.read_text("utf-8"))
    assert len(prompts) > 6
    copyable = re.compile(r'"(?:\.\.\.|…|<[^">]*>)"|<bullet id>|<id>|<text>|<attribute key>')
    for text in prompts:
        assert not copyable.findall(text), copyable.findall(text)


def test_reflector_guidance_copied_from_its_prompt_never_reaches_system_md(
    workspace: Workspace, server: Server
) -> None:
    kept = "Before a Venmo payment, set its visibility to what the memory says."
    server.answer = lambda messages, name: {
        "guidance": ["...", "- ...", "- <rule>", "- TODO", "LINE", kept]
    }
    proposal = Reflector(_model(server)).propose(
        ["My payment was public."], [], parameters={}, max_chars=4000, seed=0
    )
    planned = plan_prompt_changes(
        workspace, guidance=proposal.guidance, edits=[], parameters={}, max_chars=4000
    )
    system = planned.files["prompts/system.md"].decode()
    assert f"- {kept}" in system
    assert "<rule>" not in system and "TODO" not in system and "- ...\n" not in system
    assert [r.op for r in planned.refused] == ["guidance"] * 5
    assert all(r.reason for r in planned.refused)


def test_an_edit_that_adds_copied_lines_is_refused_and_a_clean_one_written(
    workspace: Workspace,
) -> None:
    now = (workspace.root / "prompts" / "system.md").read_text()
    bad = now + "\n- <rule>\n"
    echo = now + "\nPropose changes to the playbook as one JSON object of this shape.\n"
    good = now + "\n- Check the visibility of every payment before sending it.\n"
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[{"path": "prompts/system.md", "content": c} for c in (bad, echo)],
        parameters={},
        max_chars=8000,
    )
    assert not planned.files and len(planned.refused) == 2
    assert "template token" in planned.refused[0].reason
    assert "repeats evolve's own prompt" in planned.refused[1].reason
    planned = plan_prompt_changes(
        workspace,
        guidance=None,
        edits=[{"path": "prompts/system.md", "content": good}],
        parameters={},
        max_chars=8000,
    )
    assert planned.files["prompts/system.md"].decode() == good
