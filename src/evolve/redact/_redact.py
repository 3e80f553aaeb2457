"""Credentials never reach the disk: secrets are replaced before anything is written.

Two ways a value is found secret:

- **By name**: the value of any mapping key that names a credential (``password``, ``token``,
  ``secret``, ``api_key``, ``authorization``, ``credential`` ...) is replaced whole.
- **By value**, in every string wherever it appears (an SMS text, a note, an echoed API
  error, a complaint), whatever its field is called:

  - API-key shapes: ``sk-…`` (OpenAI, ``sk-ant-…`` Anthropic, ``sk-proj-…``), GitHub
    ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_``/``github_pat_``, Slack ``xox?-``, GitLab
    ``glpat-``, Google ``AIza…``, AWS access key ids (``AKIA``/``ASIA``… + 16), JSON web
    tokens, PEM private-key blocks;
  - ``Bearer <token>`` and ``Basic <base64>`` credentials (the scheme word is kept);
  - ``name=value`` / ``name: value`` pairs whose name ends in password, passwd, pwd, secret,
    token, api_key/apikey, access_key, private_key, auth or credential (the name is kept);
  - **high-entropy tokens** (see :func:`is_high_entropy` for the exact rule);
  - the values a user lists in ``evolve.yaml`` (``redact: {values: [...], env: [...]}``) and
    the values of the API-key environment variables evolve itself reads.

Redaction is idempotent: ``<redacted>`` matches none of the patterns.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from evolve.redact._values import (
    REDACTED,
    hide_values,
    holds_value,
    secret_values,
)

_SECRET = re.compile(r"(password|passwd|token|secret|api_?key|authorization|credential)", re.I)


_T = r"A-Za-z0-9"
_LEFT = rf"(?<![{_T}_-])"
_KEY_SHAPES = re.compile(
    _LEFT
    + r"(?:"
    + rf"sk-(?=[{_T}_-]*[0-9])[{_T}_-]{{16,}}"
    + rf"|gh[pousr]_[{_T}]{{20,}}|github_pat_[{_T}_]{{20,}}"
    + rf"|xox[abprse]-[{_T}-]{{10,}}"
    + rf"|glpat-[{_T}_-]{{20,}}"
    + r"|AIza[0-9A-Za-z_-]{35}"
    + r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[0-9A-Z]{16}(?![0-9A-Z])"
    + r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    + r")"
)
_PEM = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S
)
_AUTH = re.compile(
    r"(?i:\b(bearer)\s+)([A-Za-z0-9._~+/=-]{8,})|\b(Basic)\s+(?=[A-Za-z+/]*[0-9])([A-Za-z0-9+/]{8,}={0,2})"
)
_PAIR = re.compile(
    r"(?i)\b([A-Za-z_-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|auth|credential))(\"?'?\s*[:=]\s*[\"']?)([^\s\"',;&}<>]+)"
)
# Every match of `_AUTH` holds its scheme, and every match of `_PAIR` one of its words with
# the separator after it: a text holding neither (most prompts) is left as it is without the
# full scans, which try every word boundary (most of the time a long prompt's redaction took).
_AUTH_NEAR = re.compile(r"(?i:bearer)|Basic")
_PAIR_NEAR = re.compile(
    r"(?i)(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"|private[_-]?key|auth|credential)\"?'?\s*[:=]"
)
# `_PAIR_NEAR` for lower-cased ASCII text (see `_pair_hits`).
_PAIR_NEAR_LOWER = re.compile(_PAIR_NEAR.pattern.removeprefix("(?i)"))
_RUN = re.compile(r"[A-Za-z0-9+=_-]{24,}")
_HEXISH = re.compile(r"^[0-9a-fA-F-]+$")
_DIGIT_RUNS = re.compile(r"[0-9]+")


# `_segments()` and `_name_char()` are compiled on first use: most texts have no long token
# and no secret-named pair.
@cache
def _segments() -> re.Pattern[str]:
    return re.compile(r"[-_]")


def entropy(text: str) -> float:
    """Shannon entropy of `text` in bits per character (over its own character counts)."""
    n = len(text)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def _kind(ch: str) -> int:
    return 0 if ch.isupper() else 1 if ch.islower() else 2 if ch.isdigit() else 3


def is_high_entropy(token: str) -> bool:
    """Whether `token` (a run of ``[A-Za-z0-9+=_-]``) looks like a random credential.

    All of these must hold:

    1. at least 24 characters;
    2. not only hex digits and ``-`` (git SHAs, content hashes and UUIDs are ids, not secrets);
    3. at least two separate runs of digits (``Name2024Handler`` has one);
    4. not an identifier made of words: three or more ``-``/``_`` segments that are all at most
       12 characters long (``x86_64-linux-gnu-gcc-12``, ``pay-card-visibility-03``) are kept;
    5. Shannon entropy of at least 3.8 bits per character;
    6. the character class (upper, lower, digit, other) changes between at least 35% of
       neighbouring characters (words and slugs change class rarely; random text often).

    Slashes, dots, colons and ``@`` end a token, so paths, file names, e-mail addresses and
    times are split into short tokens and never match. Measured on random strings: base62
    tokens of 24/32/40 characters are caught about 90%/97%/99% of the time; lowercase+digit
    ones about 50%/70%/75% (those are caught by the pair and prefix rules when labelled).
    """
    if len(token) < 24 or _HEXISH.match(token):
        return False
    if len(_DIGIT_RUNS.findall(token)) < 2:
        return False
    segments = _segments().split(token)
    if len(segments) >= 3 and all(len(s) <= 12 for s in segments):
        return False
    if entropy(token) < 3.8:
        return False
    changes = sum(_kind(a) != _kind(b) for a, b in zip(token, token[1:], strict=False))
    return changes >= 0.35 * (len(token) - 1)


class _RedactSection(Protocol):
    """`redact:` of evolve.yaml (`evolve.workspace.RedactConfig`)."""

    @property
    def values(self) -> Iterable[str]: ...

    @property
    def env(self) -> Iterable[str]: ...


@dataclass(frozen=True)
class Redactor:
    """Replaces secrets in text and in JSON-like values (see the module docstring).

    Attributes:
        values: literal secrets to hide wherever they occur (longest first).
    """

    values: tuple[str, ...] = ()

    @classmethod
    def from_settings(
        cls,
        values: Iterable[str] = (),
        env: Iterable[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> Redactor:
        """A redactor for listed `values` plus the values of the environment variables `env`
        (and of :data:`DEFAULT_SECRET_ENV`); unset or short variables are skipped."""
        return cls(secret_values(values, env, environ))

    @classmethod
    def from_config(
        cls, config: _RedactSection, environ: Mapping[str, str] | None = None
    ) -> Redactor:
        """The workspace's one redactor: `redact:` of evolve.yaml (`config`, its `values` and
        the variables named in `env`) and the model API keys (:data:`DEFAULT_SECRET_ENV`)."""
        return cls.from_settings(config.values, config.env, environ)

    def values_text(self, text: str) -> str:
        """`text` with the listed values (only) replaced by :data:`REDACTED`: for text that
        must otherwise stay as written (the agent's system prompt)."""
        return hide_values(text, self.values)

    def holds_value(self, text: str) -> bool:
        """Whether `text` holds one of the listed values (a configured secret)."""
        return holds_value(text, self.values)

    def text(self, text: str) -> str:
        """`text` with every secret, by value and by shape, replaced by :data:`REDACTED`."""
        text = self.values_text(text)
        text = _PEM.sub(REDACTED, text)
        text = _KEY_SHAPES.sub(REDACTED, text)
        if _auth_near(text):
            text = _AUTH.sub(_auth_sub, text)
        if len(text) < _LONG:
            if _PAIR_NEAR.search(text):
                text = _PAIR.sub(_pair_sub, text)
        elif hits := _pair_hits(text):
            text = _sub_pairs(text, hits)
        return _RUN.sub(_run_sub, text)

    def __call__(self, value: Any) -> Any:
        """A copy of `value` with secret-named fields and secret-shaped strings replaced."""
        return _walk(value, self.text)


def _auth_sub(m: re.Match[str]) -> str:
    scheme = m.group(1) or m.group(3)
    return f"{scheme} {REDACTED}"


def _pair_sub(m: re.Match[str]) -> str:
    return f"{m.group(1)}{m.group(2)}{REDACTED}"


# From this length on, a text's pairs are looked for where `_PAIR_NEAR` is (`_sub_pairs`);
# a shorter one is scanned whole, as cheap as finding where to look.
_LONG = 2_000


@cache
def _name_char() -> re.Pattern[str]:
    """A character of `_PAIR`'s name part (`[A-Za-z_-]`, case-blind as `_PAIR` reads it)."""
    return re.compile(r"(?i)[A-Za-z_-]")


def _auth_near(text: str) -> bool:
    """Whether `_AUTH_NEAR` matches in `text` (in ASCII text, by looking for its two words)."""
    if text.isascii():
        return "Basic" in text or "bearer" in text.lower()
    return _AUTH_NEAR.search(text) is not None


def _pair_hits(text: str) -> list[int]:
    """Where `_PAIR_NEAR` matches in `text`. In ASCII text, case-blind matching is matching
    the lower case: a plain pattern finds the same places, without trying every case of
    every word at every character (a long prompt's full scan took most of its redaction)."""
    if text.isascii():
        return [m.start() for m in _PAIR_NEAR_LOWER.finditer(text.lower())]
    return [m.start() for m in _PAIR_NEAR.finditer(text)]


def _sub_pairs(text: str, hits: list[int]) -> str:
    """`_PAIR.sub(_pair_sub, text)`, with `_PAIR` tried only where a match can start
    (`hits`: where `_PAIR_NEAR` matches, in order).

    A match's name part is one run of name characters ending with a word of `_PAIR_NEAR`
    right before its separator (no such word ends with another), so it starts inside the run
    that ends at a hit; and a match ends where its value does, before a character that no
    name holds. So each hit's run is tried from its start, and the text between hits is not
    scanned word by word.
    """
    out: list[str] = []
    pos = 0  # where the text not yet copied starts: a match starts here or later
    for hit in hits:
        if hit < pos:
            continue  # inside the value of the last match
        start = hit
        name_char = _name_char()
        while start > pos and name_char.match(text, start - 1):
            start -= 1
        for at in range(start, hit + 1):
            found = _PAIR.match(text, at)
            if found is not None:
                out += (text[pos : found.start()], _pair_sub(found))
                pos = found.end()
                break
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _run_sub(m: re.Match[str]) -> str:
    return REDACTED if is_high_entropy(m.group()) else m.group()


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {
            (text(k) if isinstance(k, str) else k): (
                REDACTED if isinstance(k, str) and _SECRET.search(k) else _walk(v, text)
            )
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_walk(v, text) for v in value]
    return value


DEFAULT_REDACTOR = Redactor()


def redact(value: Any, redactor: Redactor | None = None) -> Any:
    """A copy of `value` with secret-named fields and secret-shaped strings replaced."""
    return (redactor or DEFAULT_REDACTOR)(value)


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """`text` with every secret-shaped value replaced."""
    return (redactor or DEFAULT_REDACTOR).text(text)
