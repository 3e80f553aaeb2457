"""`openai/<model>`: the OpenAI Chat Completions API, or any server that speaks it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import httpx

from evolve.errors import ModelError
from evolve.llm._http import JsonPoster, RetryPolicy
from evolve.llm._types import Completion, JsonSchema, Message, Usage, estimate_tokens

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OFFICIAL_HOST = "api.openai.com"


class OpenAIChat:
    """A chat model behind `POST {base_url}/chat/completions`.

    Works with OpenAI and with OpenAI-compatible servers (vLLM, llama.cpp server, Ollama);
    those usually need no key, and none is sent when none is set.

    Args:
        model: the model name the server knows, e.g. "gpt-4o-mini".
        base_url: the API root; defaults to `$OPENAI_BASE_URL`, else OpenAI's.
        api_key: the key; defaults to `$OPENAI_API_KEY`. Required only for api.openai.com.
        client: an `httpx.Client` to send requests with.
        retry: how to retry transient failures.
        timeout: an `httpx.Timeout`, or seconds to wait for a reply.

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
    ) -> None:
        self.model = model
        self.name = f"openai/{model}"
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        official = httpx.URL(base_url).host == _OFFICIAL_HOST
        if official and not self._api_key:
            raise ModelError(
                "OPENAI_API_KEY is not set; export it, or choose another --model such as sim."
            )
        self._http = JsonPoster(
            base_url,
            provider="OpenAI" if official else "OpenAI-compatible server",
            key_env="OPENAI_API_KEY",
            secret=self._api_key,
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
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "temperature": temperature,
        }
        if seed is not None:
            body["seed"] = seed
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if json_schema is not None:
            # Not strict: strict mode rejects schemas without additionalProperties=false etc.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": json_schema.name,
                    "schema": json_schema.schema,
                    "strict": False,
                },
            }
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        reply = self._http.post("/chat/completions", body, headers)
        try:
            choice = reply["choices"][0]
            text = choice["message"]["content"]
            usage = reply.get("usage")
            model = reply.get("model") or self.model
        except (KeyError, IndexError, TypeError) as exc:
            raise ModelError(
                f"{self._http.provider} answered without choices[0].message ({exc!r}); check "
                f"that {self._http.base_url} serves the Chat Completions API."
            ) from exc
        if not isinstance(text, str):
            refusal = choice["message"].get("refusal")
            reason = (
                f"refused: {refusal}" if refusal else f"finish_reason {choice.get('finish_reason')}"
            )
            raise ModelError(
                f"{self._http.provider} answered with no message content ({reason}); "
                "rephrase the request, raise max_tokens, or choose another --model."
            )
        if isinstance(usage, dict) and "prompt_tokens" in usage:
            counted = Usage(int(usage["prompt_tokens"]), int(usage.get("completion_tokens") or 0))
        else:
            prompt = sum(estimate_tokens(m.content) for m in messages)
            counted = Usage(prompt, estimate_tokens(text))
        return Completion(text=text, usage=counted, model=str(model))
