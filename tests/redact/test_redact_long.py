"""A long text's secret-named pairs are looked for only where their words are, and every
long text is redacted exactly as the scans over the whole text (the code before, kept here)
redact it: random texts of pair words, separators and values in many cases and scripts,
JSON with credentials, and the repository's documents."""

from __future__ import annotations

import json
import random
from pathlib import Path

from evolve.redact import REDACTED, _redact
from evolve.redact._redact import Redactor

REPO = Path(__file__).resolve().parents[2]


def before(text: str) -> str:
    """`Redactor().text` as it was: the scheme and pair scans over the whole text."""
    text = _redact._PEM.sub(REDACTED, text)
    text = _redact._KEY_SHAPES.sub(REDACTED, text)
    if _redact._AUTH_NEAR.search(text):
        text = _redact._AUTH.sub(_redact._auth_sub, text)
    if _redact._PAIR_NEAR.search(text):
        text = _redact._PAIR.sub(_redact._pair_sub, text)
    return _redact._RUN.sub(_redact._run_sub, text)


WORDS = [
    "token", "TOKEN", "Token", "api_key", "apikey", "API-KEY", "access-key", "private_key",
    "auth", "AUTH", "oauth", "passwd", "pwd", "secret", "credential", "password", "Password",
    "bearer", "Bearer", "Basic", "basic", "x", "my_", "db-", "9", "=", ":", " = ", ": ", "'",
    '"', " ", "  ", "\n", "\n\n", "\t", ";", ",", "&", "}", "<", ">", "abc123", "hunter2",
    "ZmFrZXVzZXI6cGFzc3dvcmQ1", "s3cr3tvalue99", "sk-", "ſecret", "\u212a", "ſ", "İ", "ı",
    "é", "-", "_", "<redacted>", "Sign off every text with '- Alex'.", "\u00a0", "\u2028",
]  # fmt: skip


def _random_texts(count: int) -> list[str]:
    rng = random.Random(11)
    texts = []
    for i in range(count):
        pool = WORDS if i % 3 else [w for w in WORDS if w.isascii()]  # ASCII and not
        parts = [rng.choice(pool) for _ in range(rng.randint(700, 1500))]
        texts.append("".join(parts))
    return texts


def _json_prompts() -> list[str]:
    rng = random.Random(5)
    prompts = []
    for i in range(40):
        actions = [
            "supervisor__show_account_passwords({}) -> "
            + json.dumps([{"account_name": "venmo", "password": f"fern-lamp-{i}"}]),
            "venmo__login("
            + json.dumps({"username": "alex@example.com", "password": f"pw{i}x"})
            + ') -> {"access_token": "'
            + f"tok{i}abc.def"
            + '", "token_type": "Bearer"}',
            f"api_key={i}secretvalue auth: Basic ZmFrZTp1c2Vy{i}9x Authorization: Bearer a{i}b",
        ]
        lines = [rng.choice(actions) for _ in range(30)]
        filler = [
            f"[tepa-{n}] [other.detail_{n}] Texts about topic {n} are short." for n in range(80)
        ]
        prompts.append("\n".join(filler[: i * 2] + lines + filler[i * 2 :]))
    return prompts


def test_long_texts_are_redacted_as_the_whole_scans_redact_them() -> None:
    texts = _random_texts(400) + _json_prompts()
    texts += [p.read_text(encoding="utf-8") for p in sorted(REPO.glob("docs/**/*.md"))]
    texts = [t for t in texts if len(t) >= _redact._LONG]  # the short: scanned whole
    assert len(texts) >= 400
    changed = 0
    for text in texts:
        expected = before(text)
        assert Redactor().text(text) == expected, text
        changed += _redact._PAIR.sub(_redact._pair_sub, text) != text
    assert changed >= 300  # most hold pairs to redact


def test_a_long_texts_pairs_are_tried_only_where_their_words_are() -> None:
    text = "Texts about topic 12 are short and casual.\n" * 200 + 'venmo {"password": "hunter22"}'
    hits = _redact._pair_hits(text)
    assert hits == [text.index("password")]
    assert _redact._sub_pairs(text, hits) == text.replace("hunter22", REDACTED)
