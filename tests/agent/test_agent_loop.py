"""The function-call agent loop with scripted replies, and credential redaction in records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from evolve.agent import (
    ERROR_PREFIX,
    RESULT_PREFIX,
    BadReply,
    build_system_prompt,
    parse_action,
    run_agent,
    section,
    task_message,
    without_sections,
)
from evolve.envs.persona_world import PersonaWorld, PersonaWorldEnv, contact_of
from evolve.episode import REDACTED, EpisodeSetup, redact, run_episode
from evolve.llm import JsonSchema, Message, MockLLM

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
TOOLS = ENV.tools()
PASSWORD = "fern-lamp-42"
EMAIL = "alex.kim@example.com"


def _reply(tool: str, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def _world() -> PersonaWorld:
    task = ENV.tasks("train")[0]
    return ENV.new_world(task, "alex", ENV.initial_history("alex"))


def _run(script: Sequence[str], max_turns: int = 10) -> tuple[Any, MockLLM, PersonaWorld]:
    llm = MockLLM(list(script))
    world = _world()
    trace = run_agent(
        llm,
        world,
        system_prompt="You act for the user.",
        task_message="Task: do it",
        tools=TOOLS,
        max_turns=max_turns,
        seed=3,
    )
    return trace, llm, world


# --- parse_action ---------------------------------------------------------------------------


def test_parse_action_accepts_one_object_and_a_code_fence() -> None:
    action = parse_action(_reply("phone__search_contacts", query="sam"), TOOLS)
    assert (action.tool, action.arguments) == ("phone__search_contacts", {"query": "sam"})
    fenced = "```json\n" + _reply("supervisor__show_profile") + "\n```"
    assert parse_action(fenced, TOOLS).tool == "supervisor__show_profile"
    no_args = parse_action('{"tool": "supervisor__show_profile"}', TOOLS)
    assert no_args.arguments == {}


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("call search_contacts please", "not valid JSON"),
        ("", "not valid JSON"),
        ('["supervisor__show_profile"]', "one JSON object"),
        ('{"arguments": {}}', "no 'tool'"),
        ('{"tool": "", "arguments": {}}', "no 'tool'"),
        ('{"tool": "supervisor__show_profile", "arguments": [1]}', "must be a JSON object"),
        ('{"tool": "venmo__refund", "arguments": {}}', "there is no API named"),
    ],
)
def test_parse_action_refusals(text: str, needle: str) -> None:
    with pytest.raises(BadReply, match=needle):
        parse_action(text, TOOLS)


# --- the loop -----------------------------------------------------------------------------


def test_bad_replies_are_failed_turns_and_the_loop_continues() -> None:
    trace, llm, world = _run(
        [
            "I think I should search contacts.",
            _reply("venmo__refund", amount=3),
            _reply("phone__search_contacts", query="sam"),
            _reply("supervisor__complete_task"),
        ]
    )
    assert [t.bad_reply is not None for t in trace.turns] == [True, True, False, False]
    assert "not valid JSON" in (trace.turns[0].bad_reply or "")
    assert "there is no API named 'venmo__refund'" in (trace.turns[1].bad_reply or "")
    assert trace.turns[0].reply == "I think I should search contacts."
    assert [c.tool for c in trace.calls] == ["phone__search_contacts", "supervisor__complete_task"]
    # The unknown API never reached the world; the world saw only the two good calls.
    assert [c.tool for c in world.calls] == [c.tool for c in trace.calls]
    assert world.completed and not trace.hit_turn_limit
    # The model was told what went wrong, and then saw the result of its call.
    third_request = llm.calls[2].messages
    assert third_request[-1].role == "user"
    assert third_request[-1].content.startswith("Your reply could not be used:")
    last_request = llm.calls[3].messages
    assert last_request[-1].content.startswith(f"{RESULT_PREFIX}phone__search_contacts:\n")
    assert json.loads(last_request[-1].content.split(":\n", 1)[1])[0]["name"] == "Sam Lee"


def test_every_request_asks_for_the_action_schema_with_the_seed() -> None:
    _, llm, _ = _run([_reply("supervisor__complete_task")])
    [call] = llm.calls
    assert isinstance(call.json_schema, JsonSchema) and call.json_schema.name == "agent_action"
    assert call.seed == 3 and call.temperature == 0.0
    assert [m.role for m in call.messages] == ["system", "user"]
    assert call.messages[1].content == "Task: do it"


def test_a_refused_call_is_reported_to_the_model() -> None:
    trace, llm, _ = _run(
        [
            _reply("venmo__login", username=EMAIL, password="nope"),
            _reply("venmo__show_payment_cards"),  # missing access_token
            _reply("supervisor__complete_task"),
        ]
    )
    assert [c.ok for c in trace.calls] == [False, False, True]
    second = llm.calls[1].messages[-1].content
    assert second == f"{ERROR_PREFIX}venmo__login: wrong username or password."
    third = llm.calls[2].messages[-1].content
    assert third.startswith(f"{ERROR_PREFIX}venmo__show_payment_cards: bad arguments")


def test_the_loop_stops_at_complete_task() -> None:
    trace, llm, _ = _run(
        [_reply("supervisor__complete_task"), _reply("supervisor__show_profile")], max_turns=5
    )
    assert len(trace.turns) == 1 and len(llm.calls) == 1
    assert not trace.hit_turn_limit


def test_turn_limit() -> None:
    script = [_reply("phone__search_contacts", query="sam")] * 5
    trace, llm, world = _run(script, max_turns=3)
    assert len(trace.turns) == 3 and len(llm.calls) == 3
    assert trace.hit_turn_limit and not world.completed


def test_turn_limit_counts_bad_replies() -> None:
    trace, _, _ = _run(["nope"] * 4, max_turns=4)
    assert len(trace.turns) == 4 and trace.calls == []
    assert trace.hit_turn_limit


def test_completing_on_the_last_turn_is_not_a_turn_limit_hit() -> None:
    trace, _, _ = _run(
        [_reply("supervisor__show_profile"), _reply("supervisor__complete_task")], max_turns=2
    )
    assert not trace.hit_turn_limit


def test_usage_adds_up_over_turns() -> None:
    trace, _, _ = _run([_reply("supervisor__show_profile"), _reply("supervisor__complete_task")])
    assert trace.usage.input_tokens > 0 and trace.usage.output_tokens > 0


# --- prompt sections ------------------------------------------------------------------------


def test_prompt_sections() -> None:
    prompt = build_system_prompt((), api_docs="DOCS", memory="- a fact", stats=["n = 1"])
    assert section(prompt, "api_docs") == "DOCS"
    assert section(prompt, "memory") == "What you remember about this user:\n- a fact"
    assert "n = 1" in (section(prompt, "stats") or "")
    rest = without_sections(prompt, ("api_docs", "stats"))
    assert "DOCS" not in rest and "n = 1" not in rest and "- a fact" in rest
    empty = build_system_prompt((), api_docs="DOCS", memory="  ")
    assert "(nothing yet)" in empty and "<stats>" not in empty
    assert task_message("Do it.", "2026-03-02") == "Task: Do it.\nToday's date: 2026-03-02"


# --- redaction ------------------------------------------------------------------------------


def test_redact_replaces_secret_named_fields_recursively() -> None:
    value = {
        "password": "p",
        "access_token": "t",
        "nested": [{"api_key": "k", "keep": 1}, ("x", {"Authorization": "Bearer z"})],
        "username": "u",
    }
    out = redact(value)
    assert out == {
        "password": REDACTED,
        "access_token": REDACTED,
        "nested": [{"api_key": REDACTED, "keep": 1}, ["x", {"Authorization": REDACTED}]],
        "username": "u",
    }
    assert value["password"] == "p"  # the input is not changed


def test_credentials_are_redacted_in_the_episode_record() -> None:
    task = next(t for t in ENV.tasks("train") if t.kind == "payment")
    probe = ENV.new_world(task, "alex", ENV.initial_history("alex"))
    token = probe.call("venmo__login", {"username": EMAIL, "password": PASSWORD}).result[
        "access_token"
    ]
    found = contact_of(task)
    assert found is not None
    receiver = found.email
    script = [
        "not json at all",
        _reply("supervisor__show_account_passwords"),
        _reply("venmo__login", username=EMAIL, password=PASSWORD),
        _reply("venmo__show_payment_cards", access_token=token),
        _reply(
            "venmo__send_payment",
            access_token=token,
            receiver_email=receiver,
            amount=float(task.params["amount"]),
            note="Thanks",
        ),
        _reply("supervisor__complete_task"),
    ]
    setup = EpisodeSetup((), "", "alex", False, 10)
    result = run_episode(
        ENV, MockLLM(script), task, setup, history=ENV.initial_history("alex"), seed=1
    )
    record = result.record
    assert record.task_success and record.turns[0].bad_reply is not None
    dumped = record.model_dump_json()
    assert PASSWORD not in dumped
    assert token not in dumped
    calls = [t.call for t in record.turns if t.call is not None]
    assert calls[0].result == [{"account_name": "venmo", "password": REDACTED}]
    assert calls[1].args == {"username": EMAIL, "password": REDACTED}
    assert calls[1].result == {"access_token": REDACTED}
    assert calls[2].args == {"access_token": REDACTED}
    assert calls[3].args["access_token"] == REDACTED
    assert calls[3].args["receiver_email"] == receiver  # other arguments are kept
    # The trace handed on (to the updater's <actions>) is redacted too; the world had the
    # real password, or the login would have failed.
    assert result.trace.calls[1].args["password"] == REDACTED
    assert result.trace.calls[1].ok
    assert PASSWORD not in repr(result.trace) and token not in repr(result.trace)


def test_episode_record_counts_failed_turns_and_turn_limit() -> None:
    task = ENV.tasks("train")[0]
    setup = EpisodeSetup((), "", "alex", False, 3)
    llm = MockLLM(["{", _reply("nope__nope"), _reply("supervisor__show_profile")])
    result = run_episode(ENV, llm, task, setup, history=ENV.initial_history("alex"), seed=0)
    record = result.record
    assert [t.bad_reply is not None for t in record.turns] == [True, True, False]
    assert record.hit_turn_limit and not record.task_success and not record.accepted
    assert record.final_state["completed"] is False
    assert record.model == "mock"
    assert isinstance(result.trace.turns[0].reply, str)
    assert Message("system", result.system_prompt) == llm.calls[0].messages[0]


def test_a_failed_turn_keeps_the_reply_redacted_and_escaped() -> None:
    task = ENV.tasks("train")[0]
    setup = EpisodeSetup((), "", "alex", False, 3)
    key = "sk-proj-Q7x2Lm9Vb4Nc8Rt1Ws6Yz3Kp0Hd5Jf"
    replies = [
        f"I will use {key} now\x1f",
        json.dumps({"tool": "phone__search_contacts", "arguments": {"query": "a\ud800"}}),
        "[" * 5000,
    ]
    result = run_episode(
        ENV, MockLLM(replies), task, setup, history=ENV.initial_history("alex"), seed=0
    )
    first, second, third = result.record.turns
    assert first.reply is not None and key not in first.reply and "\\x1f" in first.reply
    assert second.bad_reply is not None and "U+D800" in second.bad_reply
    assert third.bad_reply is not None and "deeper than" in third.bad_reply
    assert third.reply is not None and len(third.reply) <= 300
    line = json.dumps(result.record.model_dump(mode="json"), ensure_ascii=False)
    line.encode("utf-8")  # a run-log line can always be written
    assert key not in line


def test_the_correction_names_a_real_tool() -> None:
    _, llm, _ = _run(["not json", _reply("supervisor__complete_task")])
    correction = llm.calls[1].messages[-1].content
    assert "app__api" not in correction
    assert any(tool in correction for tool in TOOLS)
