"""Structured output by capability: the ladder of request shapes and its memory per endpoint.

OpenAI-compatible servers differ in what they accept for a JSON reply. The ladder, best first:

1. ``json_schema``: ``response_format: {type: json_schema, json_schema: {name, schema}}``;
2. ``json_object``: ``response_format: {type: json_object, schema}`` plus the schema in words;
3. ``tools``: one forced function call whose parameters are the schema;
4. ``prompt``: the schema in words only, and one repair request when the reply is not JSON.

A backend starts at the rung remembered for its base URL (or the one `evolve.yaml` forces),
and steps down when a server refuses a rung's shape; the rung that worked is remembered in
this process and in a small JSON file under the cache folder, so later runs start there.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Literal

from evolve.llm._paths import cache_root
from evolve.llm._types import JsonSchema

Mode = Literal["json_schema", "json_object", "tools", "prompt"]
MODES: tuple[Mode, ...] = ("json_schema", "json_object", "tools", "prompt")
CHOICES = ("auto", *MODES)
ENDPOINTS_FILE = "endpoints.json"

# Words whose presence in an error body marks a refusal of that rung's shape.
REFUSAL_WORDS: dict[Mode, tuple[str, ...]] = {
    "json_schema": ("response_format", "json_schema", "json_object", "schema"),
    "json_object": ("response_format", "json_object", "schema"),
    "tools": ("tools", "tool_choice", "function"),
    "prompt": (),
}


def next_mode(mode: Mode) -> Mode | None:
    """The rung below `mode`, or None at the bottom."""
    index = MODES.index(mode)
    return MODES[index + 1] if index + 1 < len(MODES) else None


def instructions(schema: JsonSchema) -> str:
    """The schema in words, for rungs that cannot pass it to the server as a constraint."""
    return (
        "Reply with one JSON object and nothing else (no prose, no code fence). "
        f"It must follow this JSON schema:\n{json.dumps(schema.schema, sort_keys=True)}"
    )


class EndpointMemory:
    """The rung each base URL accepted, in memory and persisted to `path` (atomically)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._modes: dict[str, Mode] | None = None

    def _load(self) -> dict[str, Mode]:
        if self._modes is None:
            self._modes = {}
            if self.path is not None:
                try:
                    data = json.loads(self.path.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    data = {}
                if isinstance(data, dict):
                    self._modes = {
                        str(k): v for k, v in data.items() if isinstance(v, str) and v in MODES
                    }
        return self._modes

    def get(self, base_url: str) -> Mode | None:
        with self._lock:
            return self._load().get(base_url)

    def set(self, base_url: str, mode: Mode) -> None:
        with self._lock:
            modes = self._load()
            if modes.get(base_url) == mode:
                return
            modes[base_url] = mode
            if self.path is None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".endpoints-")
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump(modes, out, indent=2, sort_keys=True)
                os.replace(tmp, self.path)
            except OSError:
                pass  # remembering is an optimisation; the in-process memory still holds


_SHARED: dict[Path | None, EndpointMemory] = {}
_SHARED_LOCK = threading.Lock()


def endpoint_memory(path: Path | None = None, *, persist: bool = True) -> EndpointMemory:
    """The process-wide memory for `path` (default: `endpoints.json` in the cache folder)."""
    if persist and path is None:
        path = cache_root() / ENDPOINTS_FILE
    key = path if persist else None
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = EndpointMemory(key)
        return _SHARED[key]
