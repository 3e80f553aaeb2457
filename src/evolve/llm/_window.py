"""The model's context window: learning it, fitting a request into it, refusing what cannot fit.

Where the window comes from, first found first:

1. the server, asked once per model object: llama.cpp's ``GET /props``
   (``default_generation_settings.n_ctx``, or ``n_ctx``), else ``GET /v1/models``
   (the model's ``meta.n_ctx``, else ``meta.n_ctx_train``, else ``n_ctx``);
2. ``models.context_tokens`` in evolve.yaml;
3. a server's refusal of a request for its length (HTTP 400 "maximum context length is N
   tokens", llama.cpp's ``n_ctx``): learned, and the request fitted and sent once more.

With no window known, requests go as they are.

Tokens are counted from characters at the most tokens per character the endpoint has shown
(its replies' ``usage.prompt_tokens`` and its refusals' counts), starting at one token per
three characters, which over-counts English and JSON for the usual tokenizers.

What is cut to fit, in this order (the system prompt and the task are never cut: they are what
is being scored):

1. the oldest turns of the conversation: an assistant reply and the answer to it, as a pair,
   after the task message; the latest message always stays;
2. the reply bound (`models.max_tokens.<role>`), lowered to what is left, down to a quarter of
   its configured value (at least 16 tokens).

What still does not fit is refused before it is sent (:class:`ContextTooSmall`), in one
sentence naming the setting to change.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from evolve.llm._errors import ContextTooSmall
from evolve.llm._types import Message

# Tokens per character before the endpoint has shown its own (over-counts on purpose).
START_PER_CHAR = 1 / 3
# Tokens a chat template adds around each message (role markers, separators).
PER_MESSAGE = 8
# Windows smaller or larger than these are not windows but garbage.
MIN_WINDOW, MAX_WINDOW = 256, 100_000_000
DISCOVERY_TIMEOUT_S = 2.0
_LIMIT_WORDS = (
    "context length",
    "context_length",
    "context size",
    "context window",
    "exceed_context",
    "n_ctx",
)


@dataclass(frozen=True)
class Overflow:
    """A server's refusal of a request for its length, and what it said of the numbers."""

    window: int | None
    prompt_tokens: int | None


def _window_value(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if MIN_WINDOW <= value <= MAX_WINDOW else None


def _get(client: httpx.Client, url: str) -> Any:
    response = client.get(url, timeout=DISCOVERY_TIMEOUT_S)
    if response.status_code != 200 or len(response.content) > 1_000_000:
        return None
    return response.json()


def discover(client: httpx.Client, base_url: str, model: str) -> int | None:
    """The context window the server at `base_url` reports for `model`, or None.

    Any failure (no such route, not JSON, a value that is not a window) is None: the window
    then comes from evolve.yaml or from the server's refusal."""
    root = base_url.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    try:
        props = _get(client, f"{root}/props")
        if isinstance(props, dict):
            settings = props.get("default_generation_settings")
            found = _window_value(settings.get("n_ctx")) if isinstance(settings, dict) else None
            found = found or _window_value(props.get("n_ctx"))
            if found:
                return found
        listing = _get(client, f"{base_url.rstrip('/')}/models")
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return None
        entries = [d for d in data if isinstance(d, dict)]
        chosen = [d for d in entries if d.get("id") == model] or entries[:1]
        for entry in chosen:
            meta = entry.get("meta")
            meta = meta if isinstance(meta, dict) else {}
            for value in (meta.get("n_ctx"), meta.get("n_ctx_train"), entry.get("n_ctx")):
                found = _window_value(value)
                if found:
                    return found
    except Exception:  # a server that does not say is an ordinary case, whatever it answers
        return None
    return None


def overflow(text: str) -> Overflow | None:
    """The numbers a refusal for length gives (llama.cpp, llama-cpp-python, vLLM, OpenAI),
    or None when `text` (an error answer's body) is not such a refusal."""
    lowered = text.lower()
    if not any(word in lowered for word in _LIMIT_WORDS):
        return None
    window = prompt = None
    try:
        body = json.loads(text) if len(text) < 100_000 else None
    except (ValueError, RecursionError):
        body = None
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict):
        window = _window_value(error.get("n_ctx"))
        count = error.get("n_prompt_tokens")
        prompt = count if isinstance(count, int) and not isinstance(count, bool) else None
    found = re.search(r"maximum context length is (\d{1,9}) tokens", text)
    if window is None and found:
        window = _window_value(int(found.group(1)))
    found = re.search(r"\((\d{1,9}) in the messages", text) or re.search(
        r"resulted in (\d{1,9}) tokens", text
    )
    if prompt is None and found:
        prompt = int(found.group(1))
    return Overflow(window, prompt)


def suggested_window(needed: int) -> int:
    """A window to suggest: the next power of two that holds `needed`, 4,096 at least."""
    size = 4096
    while size < needed:
        size *= 2
    return size


class Window:
    """One endpoint's context window, as far as it is known, and its tokens per character.

    Args:
        configured: `models.context_tokens` (used where the server says nothing).
    """

    def __init__(self, configured: int | None = None) -> None:
        self.configured = configured
        self.tokens: int | None = configured
        self.source = "models.context_tokens" if configured else ""
        self.per_char = START_PER_CHAR
        self.counted = False  # whether the server has counted a prompt for us yet
        self._discovered = False
        self._lock = threading.Lock()

    def discover(self, client: httpx.Client, base_url: str, model: str) -> None:
        """Ask the server, once."""
        with self._lock:
            if self._discovered:
                return
            self._discovered = True
            found = discover(client, base_url, model)
            if found:
                self.tokens, self.source = found, "server"

    def estimate(self, messages: Sequence[Message]) -> int:
        chars = sum(len(m.content) for m in messages)
        return int(chars * self.per_char) + 1 + PER_MESSAGE * len(messages)

    def learn(self, messages: Sequence[Message], prompt_tokens: int) -> None:
        """The server counted `prompt_tokens` for `messages`: count at least as many from now."""
        chars = sum(len(m.content) for m in messages)
        if chars <= 0 or prompt_tokens <= 0:
            return
        # The template's own tokens are counted as text's too: an over-count, on purpose.
        per_char = prompt_tokens / chars
        with self._lock:
            self.per_char = max(self.per_char, per_char) if self.counted else per_char
            self.counted = True

    def learn_overflow(self, messages: Sequence[Message], over: Overflow) -> None:
        if over.window is not None:
            self.tokens, self.source = over.window, "server"
        if over.prompt_tokens is not None:
            self.learn(messages, over.prompt_tokens)

    def fit(
        self, messages: Sequence[Message], max_tokens: int | None, *, name: str, base_url: str
    ) -> tuple[list[Message], int | None]:
        """`messages` and the reply bound, cut (in the module's order) to fit the window.

        Raises:
            ContextTooSmall: when even the system prompt, the task and the latest message
                with the smallest reply bound do not fit.
        """
        out = list(messages)
        window = self.tokens
        if window is None:
            return out, max_tokens
        reserve = max_tokens or 0
        if self.estimate(out) + reserve <= window:
            return out, max_tokens
        # The conversation's oldest turns, in pairs, after the system prompt and the task.
        first = 0
        while first < len(out) and out[first].role == "system":
            first += 1
        keep_head = first + 1  # the task message
        while len(out) - keep_head > 1 and self.estimate(out) + reserve > window:
            drop = 2 if len(out) - keep_head > 2 else 1
            del out[keep_head : keep_head + drop]
        needed = self.estimate(out)
        if max_tokens is not None:
            floor = max(16, max_tokens // 4)
            room = window - needed
            if room >= floor:
                return out, min(max_tokens, room)
        elif needed < window:
            return out, max_tokens
        if not self.counted:
            # Counted from characters only: the server's own count decides (it refuses a
            # request that is too long, and says by how much; see `overflow`).
            return out, max_tokens
        raise ContextTooSmall(self._sentence(name, base_url, needed, max_tokens or 0, window))

    def _sentence(self, name: str, base_url: str, needed: int, bound: int, window: int) -> str:
        reply = f" and its reply up to {bound:,}" if bound else ""
        suggest = suggested_window(needed + bound)
        if self.source == "models.context_tokens":
            where = (
                f"than models.context_tokens ({window:,}) in evolve.yaml allows; raise it if "
                f"the server's window is larger, or start the server with a larger one "
                f"(llama.cpp: --n_ctx {suggest})"
            )
        else:
            where = (
                f"than the {window:,}-token context window of the server at {base_url}; "
                f"start it with a larger one (llama.cpp: --n_ctx {suggest}) or lower "
                "models.max_tokens in evolve.yaml"
            )
        return f"the prompt for {name} needs about {needed:,} tokens{reply}, more {where}."
