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
from collections.abc import Callable, Mapping, Sequence
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
    """What an agent did in one episode: its turns (calls and unusable replies), the tokens
    its model used, whether it ran out of turns, and why it stopped early if it did."""

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
    # A real call as the example (never a placeholder such as `app__api`).
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


@dataclass(frozen=True)
class Review:
    """What a workflow asks before an action runs (:attr:`LoopHooks.review`).

    `note` is sent as a user message after the model's draft; the model's answer to it, when
    it is one well-formed action, replaces the draft in the conversation and is what runs.
    """

    note: str


def _no_review(action: Action, reviewed: int) -> Review | None:
    return None


@dataclass(frozen=True)
class LoopHooks:
    """The parts of the loop a harness module may change (evolve.harness); the defaults are
    the loop as it always was.

    - `result_text`: what the model is told after a world call (its result or its error);
    - `correction`: what the model is told after a reply that could not be used;
    - `local`: tools the harness answers itself, never the world (documentation on demand):
      name -> a function of the arguments returning the text of the answer;
    - `review`: before an action runs, a note asking the model to check it (None: it runs);
      `reviewed` counts the reviews already made in this episode.
    """

    result_text: Callable[[ApiCall], str] = _result_text
    correction: Callable[[BadReply, Sequence[str]], str] = correction
    local: Mapping[str, Callable[[Mapping[str, Any]], str]] = field(default_factory=dict)
    review: Callable[[Action, int], Review | None] = _no_review


DEFAULT_HOOKS = LoopHooks()


def run_agent(
    llm: LLM,
    world: World,
    *,
    system_prompt: str,
    task_message: str,
    tools: Sequence[str],
    max_turns: int,
    seed: int | None = None,
    hooks: LoopHooks = DEFAULT_HOOKS,
) -> Trace:
    """Run one episode until the task is marked complete or the turn limit is reached.

    `hooks` are the harness's changes to the loop (:class:`LoopHooks`); the defaults are
    evolve's own loop."""
    messages = [Message("system", system_prompt), Message("user", task_message)]
    trace = Trace()
    known = tuple(tools) + tuple(t for t in hooks.local if t not in tools)
    reviewed = 0
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
            action = parse_action(completion.text, known)
        except BadReply as exc:
            trace.turns.append(Turn(bad_reply=str(exc), reply=completion.text))
            messages.append(Message("user", hooks.correction(exc, known)))
            continue
        review = hooks.review(action, reviewed)
        if review is not None:
            reviewed += 1
            action, text = _reviewed(llm, messages, review, action, known, trace, seed)
            messages[-1] = Message("assistant", text)
        answer = hooks.local.get(action.tool)
        if answer is not None:
            app, _, api = action.tool.partition("__")
            local = ApiCall(app, api, dict(action.arguments), True, answer(action.arguments))
            trace.turns.append(Turn(call=local, reply=messages[-1].content))
            messages.append(Message("user", hooks.result_text(local)))
            continue
        call = world.call(action.tool, action.arguments)
        trace.turns.append(Turn(call=call, reply=messages[-1].content))
        messages.append(Message("user", hooks.result_text(call)))
        if world.completed:
            break
    else:
        trace.hit_turn_limit = not world.completed
    return trace


def _reviewed(
    llm: LLM,
    messages: list[Message],
    review: Review,
    draft: Action,
    tools: Sequence[str],
    trace: Trace,
    seed: int | None,
) -> tuple[Action, str]:
    """The action that runs after a review: the model's answer when it is one well-formed
    action, else the draft (a review that fails changes nothing)."""
    ask = [*messages, Message("user", review.note)]
    try:
        completion = llm.complete(ask, json_schema=ACTION_SCHEMA, temperature=0.0, seed=seed)
    except (ReplyMalformed, RequestFailed):
        return draft, messages[-1].content
    trace.usage = trace.usage + completion.usage
    if not encodable(completion.text):
        return draft, messages[-1].content
    try:
        return parse_action(completion.text, tools), completion.text
    except BadReply:
        return draft, messages[-1].content
