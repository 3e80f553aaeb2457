"""A content-addressed cache of model requests and their replies, kept outside git.

Canonical form of a request (version 1): the JSON object

    {"v": 1, "model": <backend name, e.g. "openai/gpt-4o-mini">,
     "messages": [[<role>, <content>], ...],
     "schema": null | {"name": <name>, "schema": <JSON schema>},
     "temperature": <float>, "seed": null | <int>, "max_tokens": null | <int>}

serialised with sorted keys, no insignificant whitespace, UTF-8 and no ASCII escaping.
Its key is ``sha256:<hex digest of those bytes>``; the prefix names the algorithm, so a later
change of algorithm or form cannot be mistaken for a hit. One entry is one file,
``<root>/requests/<first two hex digits>/<hex>.json``, written atomically, holding the
canonical request and the reply (text, model, finish reason, token usage).

No configured secret is stored: the request and the reply written in an entry have every
secret of the workspace's redactor hidden by value (`redact:` of evolve.yaml, the variables it
names, the model API keys), and the key is the hash of that redacted request. So a replayed
reply holds ``<redacted>`` where the model's reply held one of those (and the request that
quotes it next finds its entry); a reply with none is stored byte for byte (replay stays
exact). Text that only looks like a credential
(the built-in shapes) is left as sent: what every other role is sent and sends back was
redacted by shape already (`evolve.llm._redacting`).

Modes: ``read`` answers hits from the cache and sends misses to the model without recording
them; ``write`` also records every miss; ``replay`` answers only from the cache and fails on
a miss, so a recorded run can be repeated without the endpoint (offline, or in CI).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from evolve.llm._errors import ReplayMiss
from evolve.llm._paths import cache_root
from evolve.llm._redacting import redact_reply
from evolve.llm._types import LLM, Completion, JsonSchema, Message, Usage
from evolve.redact import DEFAULT_REDACTOR, Redactor

CacheMode = Literal["off", "read", "write", "replay"]
CACHE_MODES: tuple[CacheMode, ...] = ("off", "read", "write", "replay")
FORM_VERSION = 1
ALGORITHM = "sha256"


def canonical_request(
    model: str,
    messages: Sequence[Message],
    json_schema: JsonSchema | None,
    temperature: float,
    seed: int | None,
    max_tokens: int | None,
) -> dict[str, Any]:
    """The request as the JSON object its key is computed from (see the module text)."""
    return {
        "v": FORM_VERSION,
        "model": model,
        "messages": [[m.role, m.content] for m in messages],
        "schema": (
            None
            if json_schema is None
            else {"name": json_schema.name, "schema": json_schema.schema}
        ),
        "temperature": float(temperature),
        "seed": seed,
        "max_tokens": max_tokens,
    }


def canonical_bytes(request: dict[str, Any]) -> bytes:
    return json.dumps(
        request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def request_key(request: dict[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical bytes of `request`."""
    return f"{ALGORITHM}:{hashlib.sha256(canonical_bytes(request)).hexdigest()}"


class RequestCache:
    """The folder of cached entries (default: `requests/` under the evolve cache folder)."""

    def __init__(self, root: Path | None = None, redactor: Redactor = DEFAULT_REDACTOR) -> None:
        self.root = root if root is not None else cache_root() / "requests"
        self.redactor = redactor  # what an entry may not hold (see the module text)

    def path(self, key: str) -> Path:
        digest = key.split(":", 1)[1]
        return self.root / digest[:2] / f"{digest}.json"

    def get(self, key: str) -> Completion | None:
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
            reply = entry["response"]
            usage = reply.get("usage") or {}
            return Completion(
                text=str(reply["text"]),
                usage=Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))),
                model=str(reply.get("model", "")),
                finish_reason=str(reply.get("finish_reason", "")),
                cached=True,
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # absent or unreadable: a miss

    def put(self, key: str, request: dict[str, Any], completion: Completion) -> None:
        entry = {
            "key": key,
            "request": {
                **request,
                "messages": [
                    [role, self.redactor.values_text(content)]
                    for role, content in request["messages"]
                ],
            },
            "response": {
                "text": redact_reply(completion.text, self.redactor, shapes=False),
                "model": completion.model,
                "finish_reason": completion.finish_reason,
                "usage": {
                    "input_tokens": completion.usage.input_tokens,
                    "output_tokens": completion.usage.output_tokens,
                },
            },
        }
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".entry-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(entry, out, ensure_ascii=False, indent=1, sort_keys=True)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class CachedLLM:
    """Wraps a backend with the request cache; the backend itself stays simple.

    Args:
        inner: the backend to ask on a miss.
        mode: "read", "write" or "replay" (see the module text).
        cache: the cache folder.
        redactor: what the entries written may not hold (the workspace's secrets); used when
            `cache` is not given.
    """

    def __init__(
        self,
        inner: LLM,
        mode: CacheMode,
        cache: RequestCache | None = None,
        *,
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> None:
        if mode not in CACHE_MODES or mode == "off":
            raise ValueError(f"CachedLLM needs mode read, write or replay, not {mode!r}")
        self.inner = inner
        self.name = inner.name
        self.mode = mode
        self.cache = cache if cache is not None else RequestCache(redactor=redactor)
        self.hits = 0
        self.misses = 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        bound = max_tokens if max_tokens is not None else _default_bound(self.inner)
        # Keyed with the configured secrets hidden, as stored: a replayed reply that held one
        # says <redacted>, and the next request, which quotes it, finds its entry all the same.
        hide = self.cache.redactor.values_text
        keyed = [Message(m.role, hide(m.content)) for m in messages]
        request = canonical_request(self.inner.name, keyed, json_schema, temperature, seed, bound)
        key = request_key(request)
        hit = self.cache.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        if self.mode == "replay":
            raise ReplayMiss(
                f"--cache replay found no recorded reply of {self.inner.name} for request "
                f"{key} in {self.cache.root}; record it first with --cache write."
            )
        completion = self.inner.complete(
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        if self.mode == "write":
            self.cache.put(key, request, completion)
        return completion


def _default_bound(llm: LLM) -> int | None:
    value = getattr(llm, "max_tokens_default", None)
    return value if isinstance(value, int) else None
