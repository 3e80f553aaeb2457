"""The function-call agent: one API call per turn, with literal arguments, and a turn limit.

The model replies with one JSON object ``{"tool": "app__api", "arguments": {...}}``; the
agent makes that call in the world and answers with its result. A reply that is not valid
JSON, or names an API that does not exist, is recorded as a failed turn and the model is told
what went wrong.

An answer the model backend could not use as a reply at all (:class:`evolve.llm.ReplyMalformed`:
a body that is not JSON or nests too deep, a usage count that is not one, text holding a lone
surrogate) is a failed turn too, with the backend's sentence as its reason; nothing of it
enters the conversation, so the next request is the same as this one was.

A request that failed on every try it was allowed (:class:`evolve.llm.RequestFailed`: it
timed out, the server was unreachable or busy) ends the episode: the trace keeps the turns
so far and says why (`model_error`), and the episode is recorded as a failed one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve._text import ReplyError, encodable, loads_reply, printable
from evolve.envs import ApiCall, World
from evolve.llm import LLM, JsonSchema, Message, ReplyMalformed, RequestFailed, Usage

ACTION_SCHEMA = JsonSchema(
    name="agent_action",
    schema={
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "tool": {
                "type": "string",
                "description": "the name of the API to call, as the API documentation writes it",
            },
            "arguments": {"type": "object"},
        },
        "required": ["tool", "arguments"],
    },
)

RESULT_PREFIX = "Result of "
ERROR_PREFIX = "Error from "


class BadReply(ValueError):
    """The model's reply is not one well-formed action."""


@dataclass(frozen=True)
class Action:
    tool: str
    arguments: dict[str, Any]


def parse_action(text: str, tools: Sequence[str]) -> Action:
    """Parse a reply into an action; tolerates a code fence around the JSON.

    The reply is checked as :func:`evolve._text.loads_reply` says (depth, finite numbers, no
    control characters or lone surrogates in any string), so what reaches the world is safe
    to record and to write.
    """
    raw = text.strip()
    if raw.startswith("```"):
        raw = raw.strip("`")
        raw = raw[raw.find("{") :] if "{" in raw else raw
    try:
        data = loads_reply(raw)
    except ReplyError as exc:
        raise BadReply(str(exc)) from None
    if not isinstance(data, dict):
        raise BadReply("the reply must be one JSON object")
    tool = data.get("tool")
    args = data.get("arguments", {})
    if not isinstance(tool, str) or not tool:
        raise BadReply("the reply has no 'tool' string")
    if not isinstance(args, dict):
        raise BadReply("'arguments' must be a JSON object")
    if tool not in tools:
        raise BadReply(f"there is no API named {printable(tool, 80)!r}; see <api_docs>")
    return Action(tool, args)


@dataclass
class Turn:
    """One turn: either a call the world answered, or a reply that could not be used."""

    call: ApiCall | None = None
    bad_reply: str | None = None
    reply: str = ""


@dataclass
class Trace:
    turns: list[Turn] = field(default_factory=list)
    usage: Usage = Usage()
    hit_turn_limit: bool = False
    # Why the episode stopped before its end: a model request that failed on every try.
    model_error: str | None = None

    @property
    def calls(self) -> list[ApiCall]:
        return [t.call for t in self.turns if t.call is not None]


def correction(exc: BadReply, tools: Sequence[str]) -> str:
    """What the model is told after a reply that could not be used; it names a real tool."""
    # A real call as the example (never a placeholder such as `app__api`: issue 22).
    example = f', such as {{"tool": "{tools[0]}", "arguments": {{}}}}' if tools else ""
    return (
        f"Your reply could not be used: {exc}. Reply with one JSON object that names one API "
        'of the API documentation under "tool" and gives its arguments as an object under '
        f'"arguments"{example}.'
    )


def _result_text(call: ApiCall) -> str:
    if call.ok:
        return f"{RESULT_PREFIX}{call.tool}:\n{json.dumps(call.result, sort_keys=True)}"
    return f"{ERROR_PREFIX}{call.tool}: {call.error}"


def run_agent(
    llm: LLM,
    world: World,
    *,
    system_prompt: str,
    task_message: str,
    tools: Sequence[str],
    max_turns: int,
    seed: int | None = None,
) -> Trace:
    """Run one episode until the task is marked complete or the turn limit is reached."""
    messages = [Message("system", system_prompt), Message("user", task_message)]
    trace = Trace()
    for _ in range(max_turns):
        try:
            completion = llm.complete(
                messages, json_schema=ACTION_SCHEMA, temperature=0.0, seed=seed
            )
        except ReplyMalformed as exc:
            trace.turns.append(Turn(bad_reply=printable(str(exc), 300)))
            continue
        except RequestFailed as exc:
            trace.model_error = printable(str(exc), 300)
            return trace
        trace.usage = trace.usage + completion.usage
        if not encodable(completion.text):
            # From a backend that does not check (HTTP ones refuse it): it could not be sent
            # back in the next request, so it never enters the conversation.
            reason = "the reply holds a lone surrogate, which cannot be encoded"
            trace.turns.append(Turn(bad_reply=reason, reply=printable(completion.text)))
            continue
        messages.append(Message("assistant", completion.text))
        try:
            action = parse_action(completion.text, tools)
        except BadReply as exc:
            trace.turns.append(Turn(bad_reply=str(exc), reply=completion.text))
            messages.append(Message("user", correction(exc, tools)))
            continue
        call = world.call(action.tool, action.arguments)
        trace.turns.append(Turn(call=call, reply=completion.text))
        messages.append(Message("user", _result_text(call)))
        if world.completed:
            break
    else:
        trace.hit_turn_limit = not world.completed
    return trace
