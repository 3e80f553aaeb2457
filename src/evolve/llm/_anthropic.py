"""`anthropic/<model>`: the Anthropic Messages API."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import httpx

from evolve.errors import ModelError
from evolve.llm._budget import Budget
from evolve.llm._errors import KeyMissing, ReplyCut, ReplyMalformed, ReplyRefused, TurnPaused
from evolve.llm._http import JsonPoster, RetryPolicy, reply_text, token_count
from evolve.llm._types import Completion, JsonSchema, Message, Usage

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"


class AnthropicMessages:
    """A Claude model behind `POST {base_url}/v1/messages`.

    A `json_schema` request becomes a forced tool call whose input is returned as JSON text.
    The API has no sampling seed, so `seed` is ignored.

    Args:
        model: the model name, e.g. "claude-sonnet-4-5".
        base_url: the API root; defaults to `$ANTHROPIC_BASE_URL`, else Anthropic's.
        api_key: the key; defaults to `$ANTHROPIC_API_KEY`.
        client: an `httpx.Client` to send requests with.
        retry: how to retry transient failures.
        timeout: an `httpx.Timeout`, or seconds to wait for a reply.
        max_tokens_default: the reply bound sent when a call gives none (the API requires one).
        budget: the run's total time budget, shared by its models.

    Raises:
        ModelError: when no key is set.
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
        max_tokens_default: int | None = 1024,
        budget: Budget | None = None,
    ) -> None:
        self.model = model
        self.name = f"anthropic/{model}"
        self.max_tokens_default = max_tokens_default or 1024
        self._budget = budget
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise KeyMissing("ANTHROPIC_API_KEY")
        self._headers = {
            "x-api-key": api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        self._http = JsonPoster(
            base_url or os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
            provider="Anthropic",
            key_env="ANTHROPIC_API_KEY",
            secret=api_key,
            client=client,
            retry=retry,
            timeout=timeout,
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens if max_tokens is not None else self.max_tokens_default,
            "messages": [
                {"role": m.role, "content": m.content} for m in messages if m.role != "system"
            ],
            "temperature": temperature,
        }
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        if system:
            body["system"] = system
        if json_schema is not None:
            body["tools"] = [
                {
                    "name": json_schema.name,
                    "description": "Reply in this structure.",
                    "input_schema": json_schema.schema or {"type": "object"},
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": json_schema.name}
        reply = self._http.post(
            "/v1/messages",
            body,
            self._headers,
            timeout=self._budget.remaining() if self._budget is not None else None,
        )
        return self._parse(reply, json_schema is not None)

    def close(self) -> None:
        self._http.close()

    def _parse(self, reply: Any, structured: bool) -> Completion:
        try:
            blocks = reply["content"]
            stop = str(reply.get("stop_reason") or "")
            if structured:
                inputs = [b["input"] for b in blocks if b.get("type") == "tool_use"]
                text = json.dumps(inputs[0]) if inputs else None
            else:
                texts = [b["text"] for b in blocks if b.get("type") == "text"]
                text = "".join(texts) if texts else None
            counts = reply["usage"]
            # Prompt-cache reads and writes are input too (billed at their own rates).
            prompt = sum(
                token_count(counts.get(key), key, "Anthropic")
                for key in (
                    "input_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
            usage = Usage(
                prompt, token_count(counts["output_tokens"], "output_tokens", "Anthropic")
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReplyMalformed(
                f"Anthropic answered in an unexpected shape ({exc!r}); check that "
                f"{self._http.base_url} serves the Messages API."
            ) from exc
        if stop == "refusal":
            raise ReplyRefused(
                "Anthropic declined to answer (stop_reason refusal); rephrase the prompt or "
                "choose another --model."
            )
        if stop == "pause_turn":
            raise TurnPaused(
                "Anthropic paused a long-running turn (stop_reason pause_turn); evolve sends "
                "no server tools, so check the model and the request, or choose another --model."
            )
        if structured and stop == "max_tokens":
            # A forced tool call cut short has partial input: never use it as the reply.
            raise ReplyCut(
                f"Anthropic's structured reply was cut at max_tokens after "
                f"{usage.output_tokens} tokens; raise models.max_tokens in evolve.yaml."
            )
        if text is None:
            wanted = "tool_use" if structured else "text"
            raise ModelError(
                f"Anthropic answered with no {wanted} block (stop_reason "
                f"{stop or 'unknown'}); raise max_tokens or choose another --model."
            )
        return Completion(
            text=reply_text(text, "Anthropic"),
            usage=usage,
            model=str(reply.get("model") or self.model),
            finish_reason=stop,
        )
