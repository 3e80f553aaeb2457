"""TRACE: compiled checks, refused when unsound, FIFO-capped, and enforced by retrying."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from evolve.agent import read_prompt_files
from evolve.applier import MemoryApplier, Op
from evolve.envs import ApiCall
from evolve.envs.persona_world import CONTACTS
from evolve.episode import EpisodeSetup, run_episode
from evolve.evaluate import make_verifier, open_env
from evolve.llm import Message
from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit, in_scope, load_units
from evolve.updaters import (
    MAX_ATTEMPTS,
    RECIPES,
    EpisodeView,
    RecipeContext,
    Update,
    get_recipe,
    render_for,
)
from evolve.workspace import Workspace

ALEX = "user:alex"


def render_memory(units: Sequence[MemoryUnit], scope: str) -> str:
    """Rendered memory of a workspace configured to render every recipe."""
    return render_for(units, scope, RECIPES)


NOW = "2026-03-03T00:00:00+00:00"
TOOLS = (
    "phone__send_text_message",
    "venmo__send_payment",
    "gmail__send_email",
    "simple_note__create_note",
    "supervisor__complete_task",
)
SMS = "phone__send_text_message"


def _check(
    uid: str, api: str, argument: str, predicate: str, value: str, episode: int = 0, **fields: Any
) -> MemoryUnit:
    base: dict[str, Any] = {
        "id": uid,
        "recipe": "trace",
        "kind": "check",
        "scope": ALEX,
        "created_episode": episode,
        "updated_episode": episode,
        "api": api,
        "argument": argument,
        "predicate": predicate,
        "value": value,
        "text": f"When calling {api}, the {argument} must {predicate} '{value}'.",
    }
    base.update(fields)
    return MemoryUnit.model_validate(base)


def _call(tool: str, ok: bool = True, **args: Any) -> ApiCall:
    app, api = tool.split("__")
    return ApiCall(app=app, api=api, args=args, ok=ok, result={} if ok else None)


def _observe(
    units: Sequence[MemoryUnit], checks: list[Any], tools: tuple[str, ...] = TOOLS, episode: int = 4
) -> Update:
    ctx = RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=episode,
            task_id="text_update-1",
            instruction="Text Morgan Diaz to let them know: I'm running late.",
            actions="",
            complaint="My text to Morgan Diaz didn't end the way I sign my texts.",
            accepted=False,
        ),
        llm=MockLLM([json.dumps({"checks": checks})]),
        seed=0,
        now=NOW,
        tools=tools,
    )
    return get_recipe("trace").observe(ctx)


def _entry(
    api: str = SMS, argument: str = "message", predicate: str = "endswith", value: str = "-Alex"
) -> dict[str, str]:
    return {"api": api, "argument": argument, "predicate": predicate, "value": value}


# --- compiling checks -------------------------------------------------------------------------


def test_a_check_becomes_a_unit_with_a_readable_sentence() -> None:
    update = _observe([], [_entry()])
    assert update.refused == []
    (op,) = update.ops
    unit = op.unit
    assert op.op == "add"
    assert (unit.api, unit.argument, unit.predicate, unit.value) == (
        SMS,
        "message",
        "endswith",
        "-Alex",
    )
    assert unit.text == "When sending a text message, the message must end with '-Alex'."
    assert unit.recipe == "trace" and unit.kind == "check" and unit.status == "active"


@pytest.mark.parametrize(
    ("predicate", "value", "accepted"),
    [
        ("contains", "x" * 24, True),
        ("contains", "x" * 25, False),
        ("endswith", "Thanks so much, Alex Morgan", False),
        ("not_contains", "y" * 30, False),
        ("equals", "Thanks so much, Alex Morgan, see you soon", True),
    ],
)
def test_values_over_24_characters_are_refused_except_with_equals(
    predicate: str, value: str, accepted: bool
) -> None:
    update = _observe([], [_entry(predicate=predicate, value=value)])
    if accepted:
        assert update.refused == [] and [op.op for op in update.ops] == ["add"]
        assert update.ops[0].unit.value == value
    else:
        assert update.ops == []
        (refusal,) = update.refused
        assert "24 characters" in refusal.reason and "equals" in refusal.reason


def test_an_unknown_predicate_is_refused() -> None:
    update = _observe([], [_entry(predicate="matches"), _entry(predicate="startswith", value="Hi")])
    assert [r.reason for r in update.refused] == ["unknown predicate 'matches'"]
    assert [op.unit.predicate for op in update.ops] == ["startswith"]


def test_an_unknown_api_is_refused_when_tools_are_known() -> None:
    update = _observe([], [_entry(api="phone__send_sms")])
    assert update.ops == []
    (refusal,) = update.refused
    assert "phone__send_sms" in refusal.reason


def test_without_a_tool_list_any_api_is_accepted() -> None:
    update = _observe([], [_entry(api="phone__send_sms")], tools=())
    assert [op.unit.api for op in update.ops] == ["phone__send_sms"]


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({**_entry(), "severity": "high"}, "unknown field"),
        ({"api": SMS, "argument": "message", "predicate": "endswith"}, "missing"),
        ({**_entry(), "value": ""}, "empty or non-text"),
        ({**_entry(), "argument": 3}, "empty or non-text"),
    ],
)
def test_malformed_check_entries_are_refused(entry: dict[str, Any], reason: str) -> None:
    update = _observe([], [entry])
    assert update.ops == []
    assert reason in update.refused[0].reason


def test_an_existing_check_is_a_logged_duplicate() -> None:
    existing = _check("trace-1", SMS, "message", "endswith", "-Alex")
    update = _observe([existing], [_entry()])
    assert update.ops == [] and update.refused == []
    assert any("duplicate check" in n for n in update.notes)


def test_fifo_cap_of_12_evicts_the_oldest() -> None:
    units = [
        _check(f"trace-{i:02d}", SMS, "message", "contains", f"v{i}", episode=i) for i in range(12)
    ]
    # The oldest by episode is not first in the list: FIFO is by age, not by position.
    units = units[5:] + units[:5]
    update = _observe(units, [_entry(), _entry(predicate="startswith", value="Hi")], episode=30)
    labels = [(op.op, op.id) for op in update.ops]
    assert [op for op, _ in labels] == ["add", "add", "evict", "evict"]
    assert {uid for op, uid in labels if op == "evict"} == {"trace-00", "trace-01"}
    assert sum("cap: evicted oldest check" in n for n in update.notes) == 2


def test_a_revoked_check_does_not_count_towards_the_cap() -> None:
    units = [
        _check(f"trace-{i:02d}", SMS, "message", "contains", f"v{i}", episode=i) for i in range(11)
    ]
    units.append(_check("trace-old", SMS, "message", "contains", "zz", status="revoked"))
    update = _observe(units, [_entry()])
    assert [op.op for op in update.ops] == ["add"]


# --- verify ----------------------------------------------------------------------------------


def test_verify_returns_failures_only_for_applicable_failing_checks() -> None:
    checks = [
        _check("c-sms", SMS, "message", "endswith", "-Alex"),
        _check("c-pay", "venmo__send_payment", "note", "contains", "total"),  # API absent
        _check("c-cc", "gmail__send_email", "cc", "contains", "alex@"),  # argument absent
        _check("c-off", SMS, "message", "startswith", "Hi", status="revoked"),  # not active
    ]
    trace = get_recipe("trace")
    calls = [
        _call("gmail__send_email", to="x@y.z", subject="s", body="b"),
        _call(SMS, phone_number="1", message="Running late."),
    ]
    failures = trace.verify(checks, calls)
    assert failures == [f"Check failed: {checks[0].text}"]
    assert trace.verify(checks, [_call(SMS, phone_number="1", message="Running late. -Alex")]) == []
    assert trace.verify(checks, []) == []
    # A failed call is not evidence either way.
    assert trace.verify(checks, [_call(SMS, ok=False, phone_number="1", message="nope")]) == []


@pytest.mark.parametrize(
    ("predicate", "value", "actual", "holds"),
    [
        ("equals", "alex@example.com", "alex@example.com", True),
        ("equals", "alex@example.com", ["bob@x.y", "alex@example.com"], True),
        ("equals", "alex@example.com", ["bob@x.y"], False),
        ("contains", "total", "dinner (total: $40)", True),
        ("startswith", "Hi", "Hello", False),
        ("endswith", "-Alex", "See you -Alex\n", True),
        ("not_contains", "!", "Calm text.", True),
        ("not_contains", "!", "Loud text!", False),
    ],
)
def test_predicates(predicate: str, value: str, actual: Any, holds: bool) -> None:
    check = _check("c", "gmail__send_email", "cc", predicate, value)
    failures = get_recipe("trace").verify([check], [_call("gmail__send_email", cc=actual)])
    assert (failures == []) is holds


def test_other_recipes_enforce_nothing() -> None:
    calls = [_call(SMS, phone_number="1", message="x")]
    for name in ("ace", "tepa", "reflexion", "rewrite", "topl"):
        assert (
            get_recipe(name).verify([_check("c", SMS, "message", "endswith", "-Alex")], calls) == []
        )


# --- enforcement: the episode is retried -----------------------------------------------------


def _agent(obey_from_attempt: int | None) -> MockLLM:
    """Texts Morgan; signs with '-Alex' from attempt `obey_from_attempt` on (None: never)."""
    morgan = next(c for c in CONTACTS if c.name == "Morgan Diaz")
    attempts = 0

    def respond(messages: Sequence[Message], schema: Any) -> str:
        nonlocal attempts
        turn = sum(m.role == "assistant" for m in messages)
        if turn == 0:
            attempts += 1  # every attempt starts a new conversation
            retried = "failed these checks" in messages[0].content
            assert retried is (attempts > 1)
            sign = obey_from_attempt is not None and attempts >= obey_from_attempt
            text = "I'm running ten minutes late." + (" -Alex" if sign else "")
            return json.dumps(
                {"tool": SMS, "arguments": {"phone_number": morgan.phone_number, "message": text}}
            )
        return json.dumps({"tool": "supervisor__complete_task", "arguments": {}})

    return MockLLM(respond)


def _setup(ws: Workspace, units: Sequence[MemoryUnit]) -> EpisodeSetup:
    visible = in_scope(units, ALEX)
    return EpisodeSetup(
        prompt_files=tuple(read_prompt_files(ws.prompts_dir)),
        memory=render_memory(visible, ALEX),
        persona="alex",
        stats=False,
        max_turns=6,
        verifier=make_verifier(visible),
        max_attempts=MAX_ATTEMPTS,
    )


def _with_check(ws: Workspace, **fields: Any) -> list[MemoryUnit]:
    check = _check("trace-sign", SMS, "message", "endswith", "-Alex", **fields)
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply([Op(op="add", unit=check)], [])
    assert result.refused == []
    ws.store.commit(result.paths, "a TRACE check")
    applier.done()
    return load_units(ws.root)


@pytest.mark.parametrize(
    ("obey_from", "attempt", "signed"),
    [(1, 1, True), (2, 2, True), (3, 3, True), (None, MAX_ATTEMPTS, False)],
)
def test_a_failing_trace_check_retries_the_episode_up_to_three_attempts(
    workspace: Workspace, obey_from: int | None, attempt: int, signed: bool
) -> None:
    units = _with_check(workspace)
    env = open_env(workspace)
    task = next(t for t in env.tasks("train") if t.id == "text_update-1")
    llm = _agent(obey_from)
    result = run_episode(
        env,
        llm,
        task,
        _setup(workspace, units),
        history=env.initial_history("alex"),
        seed=1,
        episode=0,
    )
    assert result.record.attempt == attempt
    sent = [c for c in result.trace.calls if c.tool == SMS]
    assert len(sent) == 1  # a fresh world each attempt: only the last attempt's calls
    assert sent[0].args["message"].endswith("-Alex") is signed
    assert len(llm.calls) == 2 * attempt  # two turns per attempt, never a fourth attempt
    if attempt > 1:
        assert "failed these checks" in result.system_prompt
        assert "When calling phone__send_text_message" in result.system_prompt


def test_a_revoked_check_enforces_nothing(workspace: Workspace) -> None:
    units = _with_check(workspace, status="revoked")
    env = open_env(workspace)
    task = next(t for t in env.tasks("train") if t.id == "text_update-1")
    setup = _setup(workspace, units)
    assert setup.verifier is None
    result = run_episode(
        env, _agent(None), task, setup, history=env.initial_history("alex"), seed=1, episode=0
    )
    assert result.record.attempt == 1
