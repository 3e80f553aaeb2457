"""An agent of your own: a plain OpenAI-compatible tool-calling loop, written with httpx.

It knows nothing of evolve's internals. evolve hands it one request per episode (the task, the
prompt evolve built with the workspace's memory and skills, the tools, a turn limit) and the
episode's world; it asks any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama) with
the tools declared as functions, makes each call the model asks for through `world.call` (so
evolve records and judges it), and returns the trace.

Two ways to use it:

- by name, in `evolve.yaml`, with this folder on `PYTHONPATH` or this file copied into a
  protected folder of the workspace that ``agent.path`` names::

      agent: {name: "openai_loop:make_agent", path: [agent]}

  `evolve run`, `train` and the gate of `evolve` then play it; it reaches the server at
  `OPENAI_BASE_URL` (with `OPENAI_API_KEY`) and asks the model of the agent role
  (`models.agent: openai/<model>`), or `OPENAI_LOOP_MODEL` when set;
- from Python: ``evolve.open(path).score("dev", agent=OpenAILoop(base_url, model))``.

Small local models often answer with a JSON action in the text instead of a tool call
(``{"tool": "phone__send_text", "arguments": {...}}``); the loop takes that too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import httpx

from evolve.agent import AgentContext, AgentRequest, Trace, Turn
from evolve.envs import ApiCall, World
from evolve.llm import Usage

REQUEST_TIMEOUT_S = 120.0


def tool_specs(tools: Sequence[str]) -> list[dict[str, Any]]:
    """The tools of a request as OpenAI function specs (arguments: any JSON object; the
    `<api_docs>` section of the system prompt documents each one)."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"Call the {name} API (see <api_docs>).",
                "parameters": {"type": "object", "additionalProperties": True},
            },
        }
        for name in tools
    ]


def _arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments (a JSON text, as the API sends them, or an object)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw or "{}")
        except ValueError:
            return {}
    return dict(raw) if isinstance(raw, dict) else {}


def _text_action(content: str, tools: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    """A JSON action in the reply's text (``{"tool": ..., "arguments": {...}}``), if any."""
    start, end = content.find("{"), content.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(content[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("tool") not in tools:
        return None
    return str(data["tool"]), _arguments(data.get("arguments"))


def _result_text(call: ApiCall) -> str:
    if call.ok:
        return json.dumps(call.result, sort_keys=True, default=str)
    return f"error: {call.error}"


class OpenAILoop:
    """A tool-calling loop over an OpenAI-compatible chat completions endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        max_tokens: int = 512,
    ) -> None:
        """
        Args:
            base_url: the server's API root (``http://127.0.0.1:8080/v1``).
            model: the model to ask.
            api_key: sent as a bearer token when given.
            client: an httpx client to reuse (one per agent otherwise).
            max_tokens: the longest reply asked for.
        """
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.max_tokens = max_tokens
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = client or httpx.Client(headers=headers, timeout=REQUEST_TIMEOUT_S)

    @property
    def name(self) -> str:
        """What evolve's episode records name as the model."""
        return f"openai-loop/{self.model}"

    def _ask(self, messages: list[dict[str, Any]], request: AgentRequest) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": messages,
            "tools": tool_specs(request.tools),
            "temperature": 0.0,
            "seed": request.seed,
            "max_tokens": self.max_tokens,
        }
        response = self.client.post(f"{self.base_url}/chat/completions", json=body)
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def run(self, request: AgentRequest, world: World) -> Trace:
        """Play one episode: ask, call the tools the model names, answer with their results,
        until the world says the task is complete or the turn limit is reached."""
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": request.system_prompt},
            {"role": "user", "content": request.task_message},
        ]
        trace = Trace()
        for _ in range(request.max_turns):
            try:
                data = self._ask(messages, request)
                message = data["choices"][0]["message"]
            except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
                trace.model_error = f"the chat request failed: {exc}"
                return trace
            usage = data.get("usage") or {}
            trace.usage = trace.usage + Usage(
                int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
            )
            content = str(message.get("content") or "")
            calls = message.get("tool_calls") or []
            if calls:
                messages.append(
                    {"role": "assistant", "content": content or None, "tool_calls": calls}
                )
                for tool_call in calls:
                    function = tool_call.get("function") or {}
                    name = str(function.get("name", ""))
                    call = world.call(name, _arguments(function.get("arguments")))
                    trace.turns.append(Turn(call=call, reply=content))
                    messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": str(tool_call.get("id", "")),
                            "content": _result_text(call),
                        }
                    )
            else:
                messages.append({"role": "assistant", "content": content})
                action = _text_action(content, request.tools)
                if action is None:
                    trace.turns.append(Turn(bad_reply="no tool call in the reply", reply=content))
                    messages.append({"role": "user", "content": "Call one of the tools to go on."})
                    continue
                call = world.call(*action)
                trace.turns.append(Turn(call=call, reply=content))
                messages.append({"role": "user", "content": f"Result: {_result_text(call)}"})
            if world.completed:
                break
        else:
            trace.hit_turn_limit = not world.completed
        return trace


def make_agent(context: AgentContext) -> OpenAILoop:
    """The factory `agent: {name: "openai_loop:make_agent"}` names: the server at
    `OPENAI_BASE_URL`, the model `OPENAI_LOOP_MODEL` or the agent role's
    (``openai/<model>``: `<model>`), replies of up to `OPENAI_LOOP_MAX_TOKENS` tokens."""
    base_url = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1")
    model = os.environ.get("OPENAI_LOOP_MODEL") or context.llm.name.removeprefix("openai/")
    max_tokens = int(os.environ.get("OPENAI_LOOP_MAX_TOKENS") or 512)
    return OpenAILoop(
        base_url, model, api_key=os.environ.get("OPENAI_API_KEY"), max_tokens=max_tokens
    )
