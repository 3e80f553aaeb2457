"""A text with no scheme (`Bearer`, `Basic`) and no secret-named pair is redacted without the
full scans for them, and every text is redacted exactly as those scans redact it."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from evolve.redact import REDACTED, _redact
from evolve.redact._redact import Redactor


class _Counted:
    """A compiled pattern that counts its `sub` calls."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.subs = pattern, 0

    def sub(self, repl: Any, text: str) -> str:
        self.subs += 1
        return self.pattern.sub(repl, text)


def _full(text: str) -> str:
    """What `Redactor().text` answers, every scan run on the whole text."""
    text = _redact._PEM.sub(REDACTED, text)
    text = _redact._KEY_SHAPES.sub(REDACTED, text)
    text = _redact._AUTH.sub(_redact._auth_sub, text)
    text = _redact._PAIR.sub(_redact._pair_sub, text)
    return _redact._RUN.sub(_redact._run_sub, text)


def test_a_plain_prompt_skips_the_scheme_and_pair_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    auth, pair = _Counted(_redact._AUTH), _Counted(_redact._PAIR)
    monkeypatch.setattr(_redact, "_AUTH", auth)
    monkeypatch.setattr(_redact, "_PAIR", pair)
    prompt = "Sign off every email with 'Best, Alex'. Texts about topic 12 are short.\n" * 500
    assert Redactor().text(prompt) == prompt
    assert (auth.subs, pair.subs) == (0, 0)
    assert Redactor().text("token = abcdefgh1234") == f"token = {REDACTED}"
    assert Redactor().text("Authorization: Bearer abcdefgh12345678") == (
        f"Authorization: Bearer {REDACTED}"
    )
    assert (auth.subs, pair.subs) == (1, 1)  # each scan only where its words are


WORDS = [
    "token", "TOKEN", "Token", "api_key", "apikey", "API-KEY", "access-key", "private_key",
    "auth", "AUTH", "passwd", "pwd", "secret", "credential", "password", "bearer", "Bearer",
    "BEARER", "Basic", "basic", "x", "my_", "=", ":", "'", '"', " ", "  ", "\n", ";", "abc123",
    "ZmFrZXVzZXI6cGFzc3dvcmQ1", "s3cr3tvalue99", "sk-", "ſecret", "K", "é", "-", "_",
]  # fmt: skip


def test_every_text_is_redacted_as_the_full_scans_redact_it() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))
        assert Redactor().text(text) == _full(text), text
