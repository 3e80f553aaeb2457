"""`openai/<model>`: the OpenAI Chat Completions API, or any server that speaks it."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import httpx

from evolve._text import MAX_DEPTH, json_depth
from evolve.errors import ModelError
from evolve.llm._budget import Budget
from evolve.llm._errors import (
    ContextTooSmall,
    KeyMissing,
    ReplyMalformed,
    ReplyRefused,
    ShapeRefused,
)
from evolve.llm._http import JsonPoster, RetryPolicy, reply_text, token_count
from evolve.llm._structured import (
    CHOICES,
    REFUSAL_WORDS,
    EndpointMemory,
    Mode,
    endpoint_memory,
    instructions,
    next_mode,
)
from evolve.llm._types import Completion, JsonSchema, Message, Usage, estimate_tokens
from evolve.llm._window import Overflow, Window, overflow

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OFFICIAL_HOST = "api.openai.com"
REPAIR = (
    "Your reply was not one JSON object ({problem}). Reply again with only the JSON object "
    "the schema asks for: no prose, no code fence."
)


class OpenAIChat:
    """A chat model behind `POST {base_url}/chat/completions`.

    Works with OpenAI and with OpenAI-compatible servers (vLLM, llama.cpp server, Ollama);
    those usually need no key, and none is sent when none is set. Structured replies are
    negotiated by capability (see :mod:`evolve.llm._structured`).

    Args:
        model: the model name the server knows, e.g. "gpt-4o-mini".
        base_url: the API root; defaults to `$OPENAI_BASE_URL`, else OpenAI's.
        api_key: the key; defaults to `$OPENAI_API_KEY`. Required only for api.openai.com.
        client: an `httpx.Client` to send requests with.
        retry: how to retry transient failures.
        timeout: an `httpx.Timeout`, or seconds to wait for a reply.
        max_tokens_default: the reply bound sent when a call gives none (None: send none).
        structured: "auto" (negotiate, remembered per base URL) or one rung to always use.
        endpoints: where the negotiated rung is remembered (default: the cache folder).
        budget: the run's total time budget, shared by its models.
        context_tokens: the context window where the server does not say (see
            :mod:`evolve.llm._window`: requests are fitted into it, or refused).

    Raises:
        ModelError: when the base URL is OpenAI's and no key is set.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | float | None = None,
        max_tokens_default: int | None = None,
        structured: str = "auto",
        endpoints: EndpointMemory | None = None,
        budget: Budget | None = None,
        context_tokens: int | None = None,
    ) -> None:
        if structured not in CHOICES:
            raise ModelError(
                f"unknown structured-output mode {structured!r}; choose one of "
                f"{', '.join(CHOICES)}."
            )
        self.model = model
        self.name = f"openai/{model}"
        self.max_tokens_default = max_tokens_default
        self.structured = structured
        self._endpoints = endpoints if endpoints is not None else endpoint_memory()
        self._budget = budget
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        official = httpx.URL(base_url).host == _OFFICIAL_HOST
        if official and not self._api_key:
            raise KeyMissing("OPENAI_API_KEY")
        self._http = JsonPoster(
            base_url,
            provider="OpenAI" if official else "OpenAI-compatible server",
            key_env="OPENAI_API_KEY",
            secret=self._api_key,
            client=client,
            retry=retry,
            timeout=timeout,
        )
        self.window = Window(context_tokens)
        self._ask_window = not official  # OpenAI's own API says nothing of windows

    @property
    def base_url(self) -> str:
        return self._http.base_url

    def mode(self) -> Mode:
        """The rung the next structured request starts at."""
        if self.structured != "auto":
            return self.structured  # type: ignore[return-value]
        return self._endpoints.get(self.base_url) or "json_schema"

    def close(self) -> None:
        self._http.close()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        if max_tokens is None:
            max_tokens = self.max_tokens_default
        if self._ask_window:
            self.window.discover(self._http.client, self.base_url, self.model)
        fitted, bound = self.window.fit(
            messages, max_tokens, name=self.name, base_url=self.base_url
        )
        try:
            return self._complete(fitted, json_schema, temperature, seed, bound)
        except _Overflow as exc:
            # The server counted more than the window holds: learn its numbers, fit again
            # (or refuse in one sentence), and try once more.
            self.window.learn_overflow(exc.sent, exc.overflow)
            if self.window.tokens is None:
                raise ContextTooSmall(self._too_long(exc.detail)) from None
            fitted, bound = self.window.fit(
                messages, max_tokens, name=self.name, base_url=self.base_url
            )
            try:
                return self._complete(fitted, json_schema, temperature, seed, bound)
            except _Overflow as again:
                raise ContextTooSmall(self._too_long(again.detail)) from None

    def _too_long(self, detail: str) -> str:
        return (
            f"the server at {self.base_url} refused the prompt for {self.name} as longer than "
            f"its context window ({detail}); start it with a larger one (llama.cpp: --n_ctx "
            "8192), or set models.context_tokens in evolve.yaml to its window so that "
            "evolve fits the prompt into it."
        )

    def _complete(
        self,
        messages: Sequence[Message],
        json_schema: JsonSchema | None,
        temperature: float,
        seed: int | None,
        max_tokens: int | None,
    ) -> Completion:
        if json_schema is None:
            body = self._body(messages, temperature, seed, max_tokens)
            return self._send(body, messages, None)
        mode = self.mode()
        while True:
            try:
                completion = self._structured(
                    mode, messages, json_schema, temperature, seed, max_tokens
                )
            except ShapeRefused:
                lower = next_mode(mode)
                if self.structured != "auto" or lower is None:
                    raise
                mode = lower
                self._endpoints.set(self.base_url, mode)
                continue
            return completion

    # --- request shapes ---------------------------------------------------------------------

    def _body(
        self,
        messages: Sequence[Message],
        temperature: float,
        seed: int | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if seed is not None:
            body["seed"] = seed
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        return body

    def _structured(
        self,
        mode: Mode,
        messages: Sequence[Message],
        schema: JsonSchema,
        temperature: float,
        seed: int | None,
        max_tokens: int | None,
    ) -> Completion:
        if mode != "json_schema":
            messages = _with_instructions(messages, schema)
        body = self._body(messages, temperature, seed, max_tokens)
        if mode == "json_schema":
            # Not strict: strict mode rejects schemas without additionalProperties=false etc.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema, "strict": False},
            }
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema.schema}
        elif mode == "tools":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": schema.name,
                        "description": "Reply in this structure.",
                        "parameters": schema.schema or {"type": "object"},
                    },
                }
            ]
            body["tool_choice"] = {"type": "function", "function": {"name": schema.name}}
        completion = self._send(body, messages, mode)
        if mode != "prompt":
            return completion
        problem = _json_problem(completion.text)
        if problem is None:
            return completion
        repair = [
            *messages,
            Message("assistant", completion.text),
            Message("user", REPAIR.format(problem=problem)),
        ]
        second = self._send(self._body(repair, temperature, seed, max_tokens), repair, mode)
        return Completion(
            text=second.text,
            usage=completion.usage + second.usage,
            model=second.model,
            finish_reason=second.finish_reason,
        )

    def _send(
        self, body: dict[str, Any], messages: Sequence[Message], mode: Mode | None
    ) -> Completion:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        words = REFUSAL_WORDS[mode] if mode is not None else ()
        too_long: list[Overflow] = []

        def refused(response: httpx.Response) -> bool:
            if response.status_code in (400, 413):
                over = overflow(response.text)
                if over is not None:
                    too_long.append(over)
                    return True
            text = response.text.lower()
            return any(word in text for word in words)

        try:
            reply = self._http.post(
                "/chat/completions",
                body,
                headers,
                refused=refused,
                timeout=self._budget.remaining() if self._budget is not None else None,
            )
        except ShapeRefused as exc:
            if too_long:
                raise _Overflow(exc.detail, too_long[0], messages) from None
            raise
        try:
            choice = reply["choices"][0]
            message = choice["message"]
            text = message.get("content")
            usage = reply.get("usage")
            model = reply.get("model") or self.model
            finish = str(choice.get("finish_reason") or "")
            if mode == "tools":
                calls = message.get("tool_calls") or []
                if calls:
                    arguments = calls[0]["function"]["arguments"]
                    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise ReplyMalformed(
                f"{self._http.provider} answered without choices[0].message ({exc!r}); check "
                f"that {self._http.base_url} serves the Chat Completions API."
            ) from exc
        if not isinstance(text, str):
            refusal = message.get("refusal")
            if refusal:
                raise ReplyRefused(
                    f"{self._http.provider} declined to answer ({refusal}); rephrase the "
                    "request or choose another --model."
                )
            raise ModelError(
                f"{self._http.provider} answered with no message content (finish_reason "
                f"{finish or 'unknown'}); raise max_tokens, or choose another --model."
            )
        provider = self._http.provider
        text = reply_text(text, provider)
        if isinstance(usage, dict) and "prompt_tokens" in usage:
            counted = Usage(
                token_count(usage["prompt_tokens"], "prompt_tokens", provider),
                token_count(usage.get("completion_tokens"), "completion_tokens", provider),
            )
            if counted.input_tokens:
                self.window.learn(messages, counted.input_tokens)
        else:
            prompt = sum(estimate_tokens(m.content) for m in messages)
            counted = Usage(prompt, estimate_tokens(text))
        return Completion(text=text, usage=counted, model=str(model), finish_reason=finish)


class _Overflow(ModelError):
    """The server refused a request for its length (see `evolve.llm._window.overflow`)."""

    def __init__(self, detail: str, overflow: Overflow, sent: Sequence[Message]) -> None:
        super().__init__(detail)
        self.detail = detail
        self.overflow = overflow
        self.sent = sent


def _with_instructions(messages: Sequence[Message], schema: JsonSchema) -> list[Message]:
    """`messages` with the schema in words appended to the system message (or prepended)."""
    words = instructions(schema)
    out = list(messages)
    for i, m in enumerate(out):
        if m.role == "system":
            out[i] = Message("system", f"{m.content}\n\n{words}")
            return out
    return [Message("system", words), *out]


def _json_problem(text: str) -> str | None:
    """Why `text` is not one JSON object, or None when it is (a code fence is tolerated)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped.removeprefix("json").strip()
    if json_depth(stripped) > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return f"not valid JSON: {exc.msg} at character {exc.pos}"
    except (ValueError, RecursionError) as exc:
        return f"not usable JSON ({type(exc).__name__})"
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    return None
