"""Secrets by value: token-shaped values and user-listed values never reach disk or git.

The end-to-end tests plant secrets under argument names that say nothing of secrets (an SMS
`message`, a payment `note`, a note `title`, a `complete_task` answer, and a phone number the
API echoes back in its error), let an updater and a reflector echo every line they are shown
into memory and prompts, and then search every file of the workspace and `git log -p --all`.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from evolve.envs.persona_world import tool_names
from evolve.errors import ConfigError
from evolve.evaluate import run_split
from evolve.generations import evolve
from evolve.generations._loop import _Models
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.llm._http import hide_key
from evolve.ops import Refusal
from evolve.redact import REDACTED, Redactor, entropy, is_high_entropy, redact, redact_text
from evolve.train import train
from evolve.workspace import Workspace, init_workspace, parse_config

OPENAI = "sk-proj-Q7x2Lm9Vb4Nc8Rt1Ws6Yz3Kp0Hd5Jf"
ANTHROPIC = "sk-ant-api03-Zq8Xw2Ev6Rb1Tn9Ym4Lk7Jh3Gf5Dc0Sa"
GITHUB = "ghp_R8s2Kd9Lm4Nq7Wx1Vb6Zt3Yc5Hj0Pf8Ga2Ue"
AWS = "AKIAZ7Q2M9V4N8R1W6Y3"
BEARER = "eyQ9mZ2xLk7Wv4Rt8Nb1Yc6Hd3Jf5Ps0"
PASSWORD = "hunter2-Velvet"
SLACK = "xoxb-2048163-9977551-Qm3Nv8Lr2Tx"
ENTROPIC = "Zr7Kq2Vm9Lx4Wn8Bt1Hy6Pc3Jd5Fg0Se"  # no known prefix: caught by entropy
LISTED = "blue-otter-7731"
FROM_ENV = "plum-cedar-4419-quartz"
SECRETS = (OPENAI, ANTHROPIC, GITHUB, AWS, BEARER, PASSWORD, SLACK, ENTROPIC, LISTED, FROM_ENV)


# --- the redactor ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"my key is {OPENAI} ok", OPENAI),
        (f"key={ANTHROPIC}", ANTHROPIC),
        (f"token {GITHUB}", GITHUB),
        (f"aws {AWS}.", AWS),
        (f"Authorization: Bearer {BEARER}", BEARER),
        (f"login with password={PASSWORD} now", PASSWORD),
        (f'{{"password": "{PASSWORD}"}}', PASSWORD),
        (f"my pwd: {PASSWORD}", PASSWORD),
        (f"slack {SLACK}", SLACK),
        (f"random {ENTROPIC} here", ENTROPIC),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "MIIE",
        ),
        ("jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f", "eyJhbGci"),
        ("api_key: abc123def", "abc123def"),
    ],
)
def test_secret_shapes_are_redacted_by_value(text: str, secret: str) -> None:
    out = redact_text(text)
    assert secret not in out and REDACTED in out
    assert redact_text(out) == out  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "ace-1a2b3c4d5e",
        "add ace-1a2b3c4d5e: Sign texts with -A.",
        "memory/alex/ace-1a2b3c4d5e.md",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "sha256 9f86d081884c7d659a2f1b0c4b2e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "task note_title-03 and pay_card-12",
        "stream alex/ace/0/instance",
        "at 2026-11-30T14:03:15+00:00 in generations/runs/20261130T140315123456Z-dev-alex",
        "email sam.lee@example.com phone +1-555-0101",
        "max_tokens=100 and input_tokens: 40",
        "x86_64-linux-gnu-gcc-12-build2024",
        "MyVeryLongClassName2024Handler",
        "summarize_actions_for_the_updater_prompt2",
        "ThisIsAReallyLongIdentifierName1",
        "the-quick-brown-fox-jumps-over-the-lazy-dog",
        "Send payments as private; the author: Sam.",
        "task-12345678901234567890abcdef",
        "venmo-0123456789abcdef",
        "Basic information about the user",
        "Token expired, call venmo__login again.",
    ],
)
def test_ordinary_ids_and_text_are_kept(text: str) -> None:
    assert redact_text(text) == text


def test_the_entropy_rule_catches_random_tokens_and_not_words() -> None:
    rng = random.Random(7)
    alphabet = string.ascii_letters + string.digits
    tokens = ["".join(rng.choice(alphabet) for _ in range(40)) for _ in range(200)]
    assert sum(is_high_entropy(t) for t in tokens) >= 190
    assert entropy("aaaa") == 0.0 and round(entropy("ab"), 3) == 1.0
    assert not is_high_entropy("a1" * 20)  # low entropy
    assert not is_high_entropy("3f786850e387550fdab836ed7e6dc881de23001b")  # hex: an id


def test_secret_named_fields_and_listed_values() -> None:
    hide = Redactor.from_settings(values=[LISTED, "ab"], env=["MY_SECRET", "UNSET"],
                                  environ={"MY_SECRET": FROM_ENV, "OPENAI_API_KEY": "x"})  # fmt: skip
    assert hide.values == (FROM_ENV, LISTED)  # too-short values and dummy keys are ignored
    out = hide({"password": "p", "nested": [{"message": f"use {LISTED} and {FROM_ENV}"}]})
    assert out == {"password": REDACTED, "nested": [{"message": f"use {REDACTED} and {REDACTED}"}]}
    assert redact({"note": f"k {OPENAI}"}) == {"note": f"k {REDACTED}"}


def test_redact_config_is_checked() -> None:
    cfg = parse_config(f"redact:\n  values: [{LISTED}]\n  env: [MY_SECRET]\n")
    assert cfg.redact.values == (LISTED,) and cfg.redact.env == ("MY_SECRET",)
    with pytest.raises(ConfigError, match="at least 4 characters"):
        parse_config("redact:\n  values: [ab]\n")
    with pytest.raises(ConfigError, match="unknown key 'redact.value'"):
        parse_config("redact:\n  value: [abcd]\n")


def test_refusal_lines_never_quote_a_secret() -> None:
    refusal = Refusal(op="reply", what=f'{{"text": "{OPENAI}', reason=f"bad {AWS}\x1f")
    assert OPENAI not in refusal.line() and AWS not in refusal.line()
    assert "\x1f" not in refusal.line()


# --- the API key in HTTP errors (issue 11) --------------------------------------------------


def test_a_dummy_key_is_not_hidden_inside_words() -> None:
    message = "OpenAI answered HTTP 400 (expected 'text' or 'json_object'); check x."
    assert hide_key(message, "x") == message


def test_a_real_key_is_hidden_only_where_it_occurs_whole() -> None:
    key = "local-key-12345"
    message = f"bad key {key}; keys like local-key-123456 or xlocal-key-12345 differ"
    out = hide_key(message, key)
    assert out == "bad key ***; keys like local-key-123456 or xlocal-key-12345 differ"
    assert OPENAI not in hide_key(f"echo {OPENAI}", key)  # shapes are redacted too


# --- end to end -----------------------------------------------------------------------------


def _plant(tools: Sequence[str]) -> list[str]:
    """One episode's agent replies: secrets under names that say nothing of secrets."""
    calls = [
        ("phone__send_text_message", {"phone_number": "+1-555-0101", "message": f"key {OPENAI}"}),
        ("phone__send_text_message", {"phone_number": AWS, "message": "hi"}),  # echoed in error
        ("phone__search_contacts", {"query": f"Bearer {BEARER}"}),
        (
            "simple_note__create_note",
            {"title": f"t {ANTHROPIC}", "content": f"password={PASSWORD}"},
        ),
        ("gmail__send_email", {"to": "sam.lee@example.com", "subject": GITHUB, "body": SLACK}),
        ("phone__send_text_message", {"phone_number": "+1-555-0102", "message": ENTROPIC}),
        ("phone__send_text_message", {"phone_number": "+1-555-0103", "message": LISTED}),
        ("phone__send_text_message", {"phone_number": "+1-555-0104", "message": FROM_ENV}),
        ("supervisor__complete_task", {"answer": f"done, token={PASSWORD} {OPENAI}"}),
    ]
    assert all(tool in tools for tool, _ in calls)
    return [json.dumps({"tool": t, "arguments": a}) for t, a in calls]


class Planting:
    """The agent: the planted calls, episode after episode."""

    def __init__(self) -> None:
        self.replies = _plant(tool_names())
        self.i = 0

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        if len(messages) == 2:  # a new episode
            self.i = 0
        reply = self.replies[min(self.i, len(self.replies) - 1)]
        self.i += 1
        return reply


class EchoUpdater:
    """An updater that writes every line it was shown into memory, plus secrets of its own,
    and every other time a reply that is refused, quoting a secret."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        self.calls += 1
        if self.calls % 2 == 0:
            return f"not json {OPENAI} password={PASSWORD} {{"
        return _echo(messages[-1].content)


def _echo(prompt: str) -> str:
    lines = [ln.strip() for ln in prompt.splitlines() if len(ln.strip()) > 3][:40]
    ops = [{"op": "add", "text": f"Seen: {ln[:280]}"} for ln in lines]
    ops.append({"op": "add", "text": f"Remember the key {OPENAI} and password={PASSWORD}."})
    return json.dumps({"operations": ops})


def _echo_reflector(messages: Sequence[Message], schema: JsonSchema | None) -> str:
    prompt = messages[-1].content
    lines = [" ".join(ln.split())[:200] for ln in prompt.splitlines() if ln.strip()][:30]
    return json.dumps(
        {
            "guidance": [*lines, f"Use {ANTHROPIC}."],
            "edits": [{"path": "prompts/extra.md", "content": f"# Extra\n{GITHUB}\n{AWS}\n"}],
            "bad": f"{SLACK}",
        }
    )


@pytest.fixture
def planted_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("MY_SECRET", FROM_ENV)
    ws = init_workspace(tmp_path / "ws")
    cfg = (ws.root / "evolve.yaml").read_text("utf-8")
    cfg += f"redact:\n  values: [{LISTED}]\n  env: [MY_SECRET]\n"
    cfg = cfg.replace("runs: 3", "runs: 1").replace(
        "bootstrap_samples: 2000", "bootstrap_samples: 100"
    )
    (ws.root / "evolve.yaml").write_text(cfg, "utf-8")
    ws.store.commit(["evolve.yaml"], "redact planted values")
    return Workspace(ws.root)


def _everything(root: Path) -> str:
    """Every file of the workspace (git's own objects read through git), as text.

    evolve.yaml is left out: it is where the user listed the value to hide.
    """
    parts = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and rel.parts[0] != ".git" and rel.as_posix() != "evolve.yaml":
            parts.append(f"== {rel}\n" + path.read_bytes().decode("utf-8", "replace"))
    log = ["log", "-p", "--all", "--format=%H%n%B", "--", ".", ":!evolve.yaml"]
    for args in (log, ["show-ref"], ["stash", "list"]):
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, check=True)
        parts.append(done.stdout.decode("utf-8", "replace"))
    return "\n".join(parts)


@pytest.mark.slow
def test_planted_secrets_are_found_nowhere_on_disk_or_in_git(planted_ws: Workspace) -> None:
    ws = planted_ws
    agent = MockLLM(Planting())
    report = train(ws, episodes=4, agent_llm=agent, updater_llm=MockLLM(EchoUpdater()))
    assert report.commits, "the echoing updater must have written memory"
    assert any(o.refused for o in report.outcomes)
    run_split(ws, "dev", llm=MockLLM(Planting()))
    evolve(
        ws,
        generations=1,
        models=_Models(MockLLM(Planting()), MockLLM(EchoUpdater()), MockLLM(_echo_reflector)),
    )
    seen = _everything(ws.root)
    assert "Seen:" in seen and "episodes.jsonl" in seen and "train-" in seen
    leaked = [s for s in SECRETS if s in seen]
    assert not leaked, leaked
    # The parts that carry no secret survive: the record still shows what the agent did.
    assert "phone__send_text_message" in seen and "no contact has the phone number" in seen
