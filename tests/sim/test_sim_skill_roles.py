"""The sim plays the skill reflector, evolver and consolidator from what their prompts show."""

from __future__ import annotations

import json

from evolve.evaluate import open_env
from evolve.llm import Message
from evolve.sim import SimLLM
from evolve.sim._skills import NAME_LEAK_RATE, WRONG_LESSON_RATE
from evolve.skills import (
    CONSOLIDATE_SCHEMA,
    EVOLVE_SCHEMA,
    plan_batch,
    plan_consolidation,
    reflect,
    render_candidates,
    render_shelves,
)
from evolve.skills._reflect import load_prompt
from evolve.workspace import ShelfCaps, Workspace
from factories import candidate, maker, skill

INSTRUCTION = "Pay Jamie Lee back $12.50 on Venmo for lunch."
ACTIONS = (
    'venmo__send_payment({"amount": 12.5, "receiver_email": "jamie@example.com"}) -> {"ok": true}'
)
TOOLS = ["venmo__send_payment", "phone__send_text_message", "gmail__send_email"]


def test_the_sim_reflector_leaks_the_contact_and_errs_at_its_documented_rates(
    workspace: Workspace,
) -> None:
    sim = SimLLM(open_env(workspace))
    n, leaked, wrong = 400, 0, 0
    for seed in range(n):
        found = reflect(
            sim, ref="c1", episode=seed, task_id=f"pay_back-{seed}", instruction=INSTRUCTION,
            actions=ACTIONS, verifier="The payment was never read back: its final state is unverified.",
            tools=TOOLS, seed=seed,
        )  # fmt: skip
        if found.candidate is None:
            [refusal] = found.refused
            assert refusal.op == "filter" and "Jamie" in refusal.reason  # the filter caught it
            leaked += 1
            continue
        assert "Jamie" not in found.candidate.lesson
        wrong += found.candidate.lesson.startswith("Skip the final check")
    assert abs(leaked / n - NAME_LEAK_RATE) < 0.06
    assert abs(wrong / (n - leaked) - WRONG_LESSON_RATE) < 0.06
    again = reflect(sim, ref="c1", episode=3, task_id="pay_back-3", instruction=INSTRUCTION,
                    actions=ACTIONS, verifier="final state unverified", tools=TOOLS, seed=3)  # fmt: skip
    same = reflect(sim, ref="c1", episode=3, task_id="pay_back-3", instruction=INSTRUCTION,
                   actions=ACTIONS, verifier="final state unverified", tools=TOOLS, seed=3)  # fmt: skip
    assert again == same  # deterministic for the request


def _evolve(sim: SimLLM, units: list, cands: list) -> dict:  # type: ignore[type-arg]
    prompt = load_prompt("evolve").safe_substitute(
        cap_general=5, cap_topic=5, staging="(none)",
        shelves=render_shelves(units, ShelfCaps(), sorted({c.topic for c in cands})),
        candidates=render_candidates(cands),
    )  # fmt: skip
    reply = sim.complete([Message("user", prompt)], json_schema=EVOLVE_SCHEMA, seed=1)
    return json.loads(reply.text)  # type: ignore[no-any-return]


def test_the_sim_evolver_adds_merges_and_promotes_from_the_prompt(workspace: Workspace) -> None:
    sim = SimLLM(open_env(workspace))
    verify = "After the last {app} write, read the changed item back and confirm it matches the request before completing the task."
    units = [skill("v1", verify.format(app="venmo"), topic="venmo")]
    cands = [
        candidate("c1", "venmo", verify.format(app="venmo")),
        candidate("c2", "gmail", verify.format(app="gmail"), task_id="email_thanks-1"),
    ]
    reply = _evolve(sim, units, cands)
    by_ref = {v["candidate"]: v for v in reply["verdicts"]}
    assert by_ref["c1"]["verdict"] == "MERGE" and by_ref["c1"]["target"] == "v1"
    assert by_ref["c2"]["verdict"] == "ADD"
    [general] = reply["general"]
    assert general["shape"] == "verify-final-state" and "venmo" not in general["lesson"]
    plan = plan_batch(units, cands, reply, caps=ShelfCaps(), maker=maker(), staging={},
                      topics=frozenset({"venmo", "gmail", "phone"}))  # fmt: skip
    assert plan.promoted and not plan.refused


def test_the_sim_evolver_sometimes_answers_add_on_a_full_shelf_and_the_code_refuses(
    workspace: Workspace,
) -> None:
    sim = SimLLM(open_env(workspace))
    full = [
        skill(f"v{i}", f"Rule number {'abcde'[i]} for payments only.", topic="venmo")
        for i in range(5)
    ]
    refused = 0
    for i in range(40):
        cands = [
            candidate("c1", "venmo", f"Confirm the audience setting, case {'xyzwq'[i % 5]}{i}x.")
        ]
        cands[
            0
        ].lesson = f"Confirm the audience setting before paying (variant {chr(97 + i % 26)})."
        reply = _evolve(sim, full, cands)
        plan = plan_batch(full, cands, reply, caps=ShelfCaps(), maker=maker(), staging={})
        assert not [op for op in plan.ops if op.op == "add"]
        refused += any("full" in r.reason for r in plan.refused)
    assert refused > 0


def test_consolidation_merges_near_duplicates_and_never_touches_hand_written_skills(
    workspace: Workspace,
) -> None:
    sim = SimLLM(open_env(workspace))
    text = (
        "Before the final venmo call, set the visibility explicitly to what the user's memory says."
    )
    units = [
        skill("a", text, topic="venmo"),
        skill("b", text.replace("explicitly", "explicitly,"), topic="venmo"),
        skill("h", text, topic="venmo", recipe="hand"),
        skill("g", "End every task by calling complete_task."),
    ]
    prompt = load_prompt("consolidate").safe_substitute(
        cap_general=5, cap_topic=5, shelves=render_shelves(units, ShelfCaps())
    )
    reply = json.loads(sim.complete([Message("user", prompt)], json_schema=CONSOLIDATE_SCHEMA).text)
    plan = plan_consolidation(units, reply, maker=maker(), topics=frozenset({"venmo"}))
    assert [(op.op, op.id) for op in plan.ops] == [("modify", "a"), ("revoke", "b")]
    assert plan.ops[1].unit.revoked_by == "a" and plan.ops[1].unit.status == "revoked"
    hostile = {"actions": [{"action": "cut", "id": "h"}, {"action": "merge", "ids": ["a", "g"]},
                           {"action": "revise", "id": "g", "lesson": "In venmo, do it."},
                           {"action": "cut", "id": "g", "why": "vague"}]}  # fmt: skip
    plan = plan_consolidation(units, hostile, maker=maker(), topics=frozenset({"venmo"}))
    assert [(op.op, op.id) for op in plan.ops] == [("revoke", "g")]
    reasons = " ".join(r.reason for r in plan.refused)
    assert "hand-written" in reasons and "share a shelf" in reasons and "venmo" in reasons
