"""The support desk's offline players: a scripted agent and a scripted updater model.

:class:`ScriptedDeskAgent` implements evolve's agent seam (`evolve.agent.Agent`). It is a
competent clerk who knows nothing of the desk's house rules: it looks the order up, answers
the question, and follows a house rule only when the memory evolve gives it
(``request.sections["memory"]``) states that rule, as it states it. A wrong statement is
followed wrongly; nothing else teaches it. So what training writes into memory, and what a
revert takes out, is what changes its scores.

:class:`ScriptedUpdater` plays the updater model for the ``ace`` recipe offline: each line of
the complaint it is shown becomes a bullet, unless memory already holds it. As the reflector
of ``evolve evolve`` it proposes no prompt edit.

A workspace names both by import path (the folder holding this file is on ``agent.path``)::

    agent: {name: "desk_agent:make_agent", path: [agent]}
    models: {agent: mock, updater: "desk_agent:scripted_updater",
             reflector: "desk_agent:scripted_updater"}

Neither is a claim about real models; they make the mechanics visible without a network.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evolve.agent import Agent, AgentContext, AgentRequest, Trace, Turn
from evolve.envs import ApiCall, Environment, World
from evolve.llm import LLM, Completion, JsonSchema, Message, Usage

_GREETING = re.compile(r"Start every reply with '([^'<]*)<first name>([^']*)'")
_SIGN_OFF = re.compile(r"End every reply with '([^']+)'")
_HASH = re.compile(r"order number with a hash sign", re.IGNORECASE)
_LATE_REFUND = re.compile(
    r"Never promise a refund for an order delivered more than (\d+) days ago; offer store credit",
    re.IGNORECASE,
)


def _inputs(instruction: str) -> dict[str, Any]:
    """The task's inputs, as the files environment shows them after ``Inputs:``."""
    _, _, shown = instruction.partition("\nInputs:\n")
    try:
        found = json.loads(shown) if shown else {}
    except json.JSONDecodeError:
        return {}
    return found if isinstance(found, dict) else {}


class ScriptedDeskAgent:
    """A support clerk that follows what its memory says (see the module's text)."""

    @property
    def name(self) -> str:
        return "scripted-desk"

    def run(self, request: AgentRequest, world: World) -> Trace:
        trace = Trace()
        inputs = _inputs(request.instruction)
        order_id = str(inputs.get("order_id", ""))
        message = str(inputs.get("message", "")).lower()
        customer = str(inputs.get("customer", "there"))
        memory = request.sections.get("memory", "")

        def call(tool: str, args: Mapping[str, Any]) -> ApiCall:
            done = world.call(tool, args)
            trace.turns.append(Turn(call=done))
            return done

        order = call("tools__lookup_order", {"order_id": order_id})
        info: dict[str, Any] = order.result if order.ok and isinstance(order.result, dict) else {}
        item = str(info.get("item", "order"))
        ref = f"#{order_id}" if _HASH.search(memory) else order_id
        if "cancel" in message:
            done = call("tools__cancel_order", {"order_id": order_id})
            cancelled = done.ok and isinstance(done.result, dict) and done.result.get("cancelled")
            body = (
                f"Your {item} order {ref} is cancelled."
                if cancelled
                else f"Your {item} order {ref} has shipped and cannot be cancelled."
            )
        elif "refund" in message or "money back" in message:
            late = _LATE_REFUND.search(memory)
            days = info.get("delivered_days_ago")
            if late and isinstance(days, int) and days > int(late.group(1)):
                body = f"Your {item} ({ref}) was delivered {days} days ago; we offer store credit."
            else:
                body = f"Sorry about the {item} ({ref}); we will refund it in full."
        else:
            body = (
                f"Your {item} ({ref}) is {info.get('status', 'on its way')}; "
                f"tracking number {info.get('tracking', 'unknown')}."
            )
        greeting = _GREETING.search(memory)
        if greeting:
            first = customer.split()[0]
            body = f"{greeting.group(1)}{first}{greeting.group(2)} {body}"
        sign_off = _SIGN_OFF.search(memory)
        if sign_off:
            body = f"{body}\n{sign_off.group(1)}"
        call("tools__submit", {"answer": body})
        return trace


class ScriptedUpdater:
    """The ``ace`` recipe's updater model, offline: complaint lines become bullets (and a
    reflector that proposes no prompt edit)."""

    name = "scripted-updater"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        prompt = messages[-1].content if messages else ""
        operations: list[dict[str, str]] = []
        if json_schema is not None and json_schema.name == "ace_deltas":
            before, _, rest = prompt.partition("<complaint>")
            complaint, _, after = rest.partition("</complaint>")
            known = before + after
            for line in complaint.splitlines():
                line = line.strip("-* ").strip()
                if line and line not in known:
                    operations.append({"op": "add", "text": line})
        if json_schema is not None and json_schema.name == "reflector_edits":
            text = json.dumps({"edits": []})  # as the reflector: no prompt edit to propose
        else:
            text = json.dumps({"operations": operations, "bullet_tags": []})
        return Completion(text=text, usage=Usage(len(prompt) // 4, len(text) // 4), model=self.name)


def make_agent(context: AgentContext) -> Agent:
    """The agent factory ``agent: {name: "desk_agent:make_agent"}`` names: the scripted clerk
    (it asks no model, so it ignores ``context.llm``)."""
    return ScriptedDeskAgent()


def scripted_updater(model: str, /, *, env: Environment | None = None, **options: Any) -> LLM:
    """The model factory ``models: {updater: "desk_agent:scripted_updater"}`` names."""
    return ScriptedUpdater()
