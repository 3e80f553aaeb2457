"""The workspace's secrets at the model seam (issue 28, item 3): every role's model is built
behind the one redactor (`redact:` of evolve.yaml, the variables it names, the model API
keys); the agent keeps its task turn, every other role is sent and gives back redacted text,
and the request cache stores no configured secret."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from evolve.llm import CachedLLM, Completion, JsonSchema, Message, RequestCache, make_role_llm
from evolve.llm._redacting import RedactingLLM, redact_reply
from evolve.redact import Redactor
from evolve.workspace import Workspace

LISTED = "quokka-Vault-7713"
FROM_ENV = "wombat-Depot-5519"
API_KEY = "numbat-Relay-8823"
SECRETS = (LISTED, FROM_ENV, API_KEY)


class Echo:
    """Records what it is sent; replies with JSON that quotes every secret."""

    name = "echo"

    def __init__(self) -> None:
        self.sent: list[list[Message]] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.sent.append(list(messages))
        return Completion(text=json.dumps({"text": "remember " + " and ".join(SECRETS)}))


@pytest.fixture
def hide(monkeypatch: pytest.MonkeyPatch) -> Redactor:
    monkeypatch.setenv("PLANT_TOKEN", FROM_ENV)
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    return Redactor.from_settings([LISTED], ["PLANT_TOKEN"])


def _chat() -> list[Message]:
    text = f"task: pay with {LISTED}, token {FROM_ENV}, key {API_KEY}"
    return [Message("system", f"memory: {text}"), Message("user", text)]


@pytest.mark.parametrize("role", ["updater", "reflector", "evolver", "selector"])
def test_other_roles_are_sent_and_give_back_no_secret(hide: Redactor, role: str) -> None:
    inner = Echo()
    reply = RedactingLLM(inner, hide, role).complete(_chat())
    sent = json.dumps([[m.role, m.content] for m in inner.sent[0]])
    assert not [s for s in SECRETS if s in sent or s in reply.text]
    assert json.loads(reply.text)["text"].count("<redacted>") == 3


def test_the_agent_keeps_its_task_turn_and_its_replies_but_not_secrets_in_its_system_prompt(
    hide: Redactor,
) -> None:
    inner = Echo()
    reply = RedactingLLM(inner, hide, "agent").complete(_chat())
    system, task = inner.sent[0]
    assert not [s for s in SECRETS if s in system.content]
    assert task == _chat()[1]  # the task's arguments, as the task gave them
    assert all(s in reply.text for s in SECRETS)  # the episode's record redacts them


def test_make_role_llm_puts_every_role_behind_the_workspace_redactor(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANT_TOKEN", FROM_ENV)
    data = workspace.config.model_dump()
    data["redact"] = {"values": [LISTED], "env": ["PLANT_TOKEN"]}
    for role in ("agent", "updater", "reflector", "evolver"):
        data["models"][role] = "mock"
    cfg = type(workspace.config).model_validate(data)
    for role in ("agent", "updater", "reflector", "evolver"):
        llm = make_role_llm(cfg, role)  # type: ignore[arg-type]
        assert isinstance(llm, RedactingLLM) and llm.role == role
        assert {LISTED, FROM_ENV} <= set(llm.redactor.values)


def test_the_request_cache_stores_no_configured_secret_and_replays_what_quotes_one(
    hide: Redactor, tmp_path: Path
) -> None:
    cache = RequestCache(tmp_path / "requests", redactor=hide)
    inner = Echo()
    chat = _chat()
    first = CachedLLM(inner, "write", cache).complete(chat)
    follow = [*chat, Message("assistant", first.text), Message("user", f"again {LISTED}")]
    CachedLLM(inner, "write", cache).complete(follow)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "requests").rglob("*.json"))
    assert len(list((tmp_path / "requests").rglob("*.json"))) == 2
    assert not [s for s in SECRETS if s.encode() in stored]
    replay = CachedLLM(Echo(), "replay", cache)
    again = replay.complete(chat)
    assert "<redacted>" in again.text
    # The next request quotes the redacted reply: it finds the entry recorded with the secret.
    replay.complete([*chat, Message("assistant", again.text), Message("user", f"again {LISTED}")])
    assert replay.hits == 2


def test_a_reply_with_nothing_to_hide_comes_back_byte_for_byte(hide: Redactor) -> None:
    text = '{"a" :  "plain words", "b": [1, 2]}'
    assert redact_reply(text, hide) == text
    assert redact_reply(text, hide, shapes=False) == text
    escaped = json.dumps({"t": LISTED.replace("V", "\\u0056")}).replace("\\\\", "\\")
    assert LISTED not in redact_reply(escaped, hide)
    assert json.loads(redact_reply(escaped, hide)) == {"t": "<redacted>"}
