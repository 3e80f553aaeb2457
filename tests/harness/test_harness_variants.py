"""Each built-in variant does what its mechanism says, through the prompt or the loop only."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evolve.agent import AgentRequest, section
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.harness import (
    BUILTINS,
    CHECKLIST,
    DOC_TOOL,
    FINISH_NOTE,
    READ_BACK,
    REVIEW_NOTE,
    PromptParts,
    TaskView,
)
from evolve.llm import Message, MockLLM

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
TASK = TaskView("pay_gift-1", "Send Sam Lee $50.00 on Venmo as a gift for your birthday.")
MEMORY = "\n".join(
    [
        "[ace-1] Sign off every text message with my first name.",  # oldest
        "[ace-2] Set my Venmo payments to friends-only visibility.",
        "[ace-3] Close every email with 'Best,'.",
        "[ace-4] Make my Venmo payments private.",  # newest
    ]
)


def _make(module: str, name: str, **params: int) -> object:
    return BUILTINS[module][name].make(**params)


def _parts(memory: str = MEMORY) -> PromptParts:
    return PromptParts(("You work for the user.",), ENV.api_docs(), memory, "", ())


def _memory_of(prompt: str) -> list[str]:
    body = section(prompt, "memory") or ""
    return body.splitlines()[1:]  # below the header


# --- tools ----------------------------------------------------------------------------------


def test_compact_docs_keep_every_api_by_name_without_its_arguments() -> None:
    docs = _make("tools", "compact_docs").describe(ENV.api_docs(), ENV.tools())  # type: ignore[attr-defined]
    for tool in ENV.tools():
        assert f"- {tool}: " in docs and f"- {tool}(" not in docs
    assert "cc is an optional list" not in docs  # the second sentence is cut
    assert len(docs) < len(ENV.api_docs())


def test_docs_on_demand_offer_a_lookup_the_harness_answers() -> None:
    tools = _make("tools", "docs_on_demand")
    docs = tools.describe(ENV.api_docs(), ENV.tools())  # type: ignore[attr-defined]
    assert f"- {DOC_TOOL}(api: str)" in docs and "- venmo__send_payment(" not in docs
    request = AgentRequest(
        "t", "i", "Task: i", "", tuple(ENV.tools()), 5, 0, {"api_docs": ENV.api_docs()}
    )
    lookup = tools.hooks(request).local[DOC_TOOL]  # type: ignore[attr-defined]
    assert lookup({"api": "venmo__send_payment"}).startswith("- venmo__send_payment(")
    assert lookup({"api": "nope"}) == "There is no API named 'nope'."
    assert lookup({"api": 3}) == "There is no API named '3'."


def test_docs_of_another_shape_are_left_whole() -> None:
    tools = _make("tools", "docs_on_demand")
    assert tools.describe("free text docs", ["a__b"]) == "free text docs"  # type: ignore[attr-defined]


# --- context and memory -----------------------------------------------------------------------


def test_a_fifo_window_keeps_the_newest_lines_that_fit() -> None:
    context = _make("context", "budget_fifo", budget_tokens=30)
    kept = _memory_of(context.assemble(_parts(), TASK))  # type: ignore[attr-defined]
    assert kept == MEMORY.splitlines()[2:]  # the two newest fit, in their order


def test_relevance_under_a_budget_keeps_the_lines_about_the_task_in_order() -> None:
    context = _make("context", "budget_relevance", budget_tokens=30)
    kept = _memory_of(context.assemble(_parts(), TASK))  # type: ignore[attr-defined]
    assert kept == [MEMORY.splitlines()[1], MEMORY.splitlines()[3]]  # both Venmo lines


def test_an_unbudgeted_context_is_the_whole_memory() -> None:
    full = _make("context", "full").assemble(_parts(), TASK)  # type: ignore[attr-defined]
    assert _memory_of(full) == MEMORY.splitlines()


def test_top_k_retrieval_renders_the_most_similar_first() -> None:
    memory = _make("memory", "topk_similar", k=2)
    got = memory.retrieve(MEMORY, TASK).splitlines()  # type: ignore[attr-defined]
    assert got == [MEMORY.splitlines()[3], MEMORY.splitlines()[1]]  # newer first on a tie


def test_newest_first_reverses_the_learned_order() -> None:
    got = _make("memory", "newest_first").retrieve(MEMORY, TASK)  # type: ignore[attr-defined]
    assert got.splitlines() == MEMORY.splitlines()[::-1]


# --- skills ---------------------------------------------------------------------------------


def test_the_skill_variants_add_their_procedure_after_the_picked_skills() -> None:
    for name, line in (("checklist", CHECKLIST), ("read_back", READ_BACK)):
        skills = _make("skills", name)
        assert skills.inject("", TASK) == line  # type: ignore[attr-defined]
        assert skills.inject("[sk-1] a: b\n", TASK) == f"[sk-1] a: b\n{line}"  # type: ignore[attr-defined]
    assert _make("skills", "picked").inject("[sk-1] a: b", TASK) == "[sk-1] a: b"  # type: ignore[attr-defined]


# --- workflows, through a scripted model --------------------------------------------------


class _World:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, object]]] = []
        self.completed = False

    def call(self, tool: str, args: dict[str, object]) -> object:
        from evolve.envs import ApiCall

        self.calls.append((tool, dict(args)))
        if tool.endswith("__complete_task"):
            self.completed = True
        app, _, api = tool.partition("__")
        return ApiCall(app, api, args, True, {"ok": 1})


def _act(tool: str, **args: object) -> str:
    return json.dumps({"tool": tool, "arguments": args})


def _play(workflow: str, replies: Sequence[str], tools: str = "plain") -> tuple[_World, MockLLM]:
    llm = MockLLM(list(replies))
    world = _World()
    request = AgentRequest(
        "t", "i", "Task: i", "system", ("a__write", "supervisor__complete_task"), 6, 0,
        {"api_docs": ENV.api_docs()},
    )  # fmt: skip
    harness_tools = _make("tools", tools)
    hooks = harness_tools.hooks(request)  # type: ignore[attr-defined]
    _make("workflow", workflow).run(llm, world, request, hooks)  # type: ignore[attr-defined]
    return world, llm


def _last_user(messages: Sequence[Message]) -> str:
    return messages[-1].content


def test_verify_first_runs_the_refined_call_instead_of_the_draft() -> None:
    world, llm = _play(
        "verify_first",
        [_act("a__write", x=1), _act("a__write", x=2), _act("supervisor__complete_task")],
    )
    assert world.calls == [("a__write", {"x": 2}), ("supervisor__complete_task", {})]
    review = llm.calls[1].messages
    assert _last_user(review) == REVIEW_NOTE and review[-2].content == _act("a__write", x=1)
    # The draft is gone from the conversation: the next request shows the refined call only.
    assert [m.content for m in llm.calls[2].messages if m.role == "assistant"] == [
        _act("a__write", x=2)
    ]


def test_a_review_answered_with_no_usable_action_keeps_the_draft() -> None:
    world, _ = _play(
        "verify_first", [_act("a__write", x=1), "not json", _act("supervisor__complete_task")]
    )
    assert world.calls[0] == ("a__write", {"x": 1})


def test_verify_finish_checks_once_and_a_redo_is_a_second_write() -> None:
    world, llm = _play(
        "verify_finish",
        [
            _act("a__write", x=1),
            _act("supervisor__complete_task"),  # the draft: checked, not run
            _act("a__write", x=2),  # the redo
            _act("supervisor__complete_task"),  # no second check
        ],
    )
    assert world.calls == [
        ("a__write", {"x": 1}),
        ("a__write", {"x": 2}),
        ("supervisor__complete_task", {}),
    ]
    assert sum(_last_user(c.messages) == FINISH_NOTE for c in llm.calls) == 1


def test_the_act_workflow_never_reviews() -> None:
    world, llm = _play("act", [_act("a__write", x=1), _act("supervisor__complete_task")])
    assert len(llm.calls) == 2 and len(world.calls) == 2


def test_a_docs_lookup_is_answered_by_the_harness_not_the_world() -> None:
    world, llm = _play(
        "act",
        [_act(DOC_TOOL, api="gmail__send_email"), _act("supervisor__complete_task")],
        tools="docs_on_demand",
    )
    assert world.calls == [("supervisor__complete_task", {})]
    answer = _last_user(llm.calls[1].messages)
    assert answer.startswith(f"Result of {DOC_TOOL}:\n") and "gmail__send_email(to: str" in answer


def test_without_docs_on_demand_the_lookup_tool_does_not_exist() -> None:
    world, llm = _play(
        "act", [_act(DOC_TOOL, api="x"), _act("supervisor__complete_task")], tools="plain"
    )
    assert world.calls == [("supervisor__complete_task", {})]
    assert "there is no API named" in _last_user(llm.calls[1].messages)
