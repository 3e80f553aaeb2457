"""Seeded mappings for the unit checks (`evolve.memory._checks`): valid units, each field wrong
in the ways a hand edit or a model reply gets it wrong, extra keys, missing keys.

`tests/memory/data/unit_checks.json` holds these mappings with the first error the pydantic
model that `MemoryUnit` used to be reported for each (recorded once from that model); the
test compares the checks' first error to it, word for word.
"""

from __future__ import annotations

import random
from typing import Any

SEED = 20261202
COUNT = 1500

_STR_FIELDS = (
    "valid_from", "valid_to", "key", "revoked_by", "api", "argument", "predicate", "value",
    "trigger", "supersedes", "reason", "reverted_commit", "source_task", "complaint",
)  # fmt: skip
_INT_FIELDS = ("created_episode", "updated_episode", "revoked_at")
_UINT_FIELDS = ("helpful", "harmful", "injected", "injected_pass", "held_out", "held_out_pass")
_FLOAT_FIELDS = ("alpha", "beta")

_TEXTS = ["", "plain", "two\nlines", "tab\there", "üñíçødé", "a: b", "x" * 70, "'quoted'"]
_BAD_TEXTS = ["bell\x07", "nul\x00", "esc\x1b[0m", "del\x7f", "sep\u2028", "lone\ud800", "\x85"]
_WRONG = [None, True, False, 0, -1, 1.5, "s", [], ["a"], {}, {"a": 1}, 2**70, float("inf")]


def _value(rng: random.Random, field: str) -> Any:
    """A valid value for `field`."""
    if field == "id":
        return rng.choice(["u-1", "ace-0123456789", "A.b_c-d", "x" * 64, "9z"])
    if field in ("recipe", "kind"):
        return rng.choice(["ace", "tepa", "note", "skill", "hand", "pkg.mod:Obj", ""])
    if field == "schema":
        return rng.choice([1, 2, 0, -3])
    if field == "status":
        return rng.choice(["active", "revoked", "pending", "tombstoned", "retired"])
    if field == "scope":
        return rng.choice(["global", "user:alex", "user:a_b-c", "user:" + "n" * 40])
    if field in _INT_FIELDS:
        return rng.choice([0, 1, -5, 123456])
    if field in _UINT_FIELDS:
        return rng.choice([0, 1, 99])
    if field in _FLOAT_FIELDS:
        return rng.choice([1.0, 0.5, 3, 2.25, 1e-9])
    if field == "evidence":
        return rng.choice([[], ["t-1"], ["a", "b c"]])
    if field == "text":
        return rng.choice(_TEXTS)
    return rng.choice(_TEXTS[1:])


def _wrong(rng: random.Random, field: str) -> Any:
    """A value that the model refuses for `field` (or, rarely, one it takes)."""
    specific: list[Any] = []
    if field == "id":
        specific = ["", "-lead", "_x", ".x", "a b", "x" * 65, "é", "a/b", "id\x07"]
    elif field == "scope":
        specific = ["user:", "user:_a", "user:-a", "user:A", "user:" + "n" * 41, "Global", "team:x"]
    elif field == "status":
        specific = ["Active", "deleted", "", "active "]
    elif field in _UINT_FIELDS:
        specific = [-1, -100]
    elif field in _FLOAT_FIELDS:
        specific = [0, 0.0, -1.0, -2, float("nan"), float("-inf")]
    elif field == "topic":
        specific = ["", "Topic", "1abc", "a" * 33, "a-b", "venmo\x07"]
    elif field == "shelf":
        specific = ["General", "topics", ""]
    elif field == "evidence":
        specific = [[1], ["a", 2], ["ok", None], "t-1", ["bad\x07"], [["x"]]]
    elif field in ("recipe", "kind", "text") or field in _STR_FIELDS:
        specific = _BAD_TEXTS
    return rng.choice(specific + _WRONG) if specific and rng.random() < 0.7 else rng.choice(_WRONG)


_ALL = (
    "id", "schema", "recipe", "kind", "status", "scope", "created_episode", "updated_episode",
    "valid_from", "valid_to", *_UINT_FIELDS[:2], *_UINT_FIELDS[2:], "key", "revoked_at",
    "revoked_by", "api", "argument", "predicate", "value", *_FLOAT_FIELDS, "shelf", "topic",
    "trigger", "evidence", "supersedes", "reason", "reverted_commit", "source_task", "complaint",
    "text",
)  # fmt: skip
_EXTRA = ["extra", "Text", "schema_version", "helpfull", 1, None, True, "", "id ", 2.5]


def _valid(rng: random.Random) -> dict[Any, Any]:
    out: dict[Any, Any] = {name: _value(rng, name) for name in ("id", "recipe", "kind")}
    for name in rng.sample(_ALL, rng.randint(0, 8)):
        if name in ("shelf", "topic"):
            continue
        out[name] = _value(rng, name)
    shelf = rng.choice([None, None, "general", "topic"])
    if shelf is not None:
        out["shelf"] = shelf
        if shelf == "topic":
            out["topic"] = rng.choice(["venmo", "a", "a_1", "z" * 32])
    return dict(rng.sample(list(out.items()), len(out))) if rng.random() < 0.3 else out


def case(rng: random.Random) -> dict[Any, Any]:
    """One mapping: valid, or with one to three things wrong."""
    data = _valid(rng)
    if rng.random() < 0.15:
        return data
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        what = rng.random()
        if what < 0.6:
            field = rng.choice(_ALL)
            data[field] = _wrong(rng, field)
        elif what < 0.75:
            data[rng.choice(_EXTRA)] = rng.choice(["v", 1, None])
        elif what < 0.87:
            data.pop(rng.choice(["id", "recipe", "kind"]), None)
        elif what < 0.94:  # a shelf without its topic, or a topic without its shelf
            if rng.random() < 0.5:
                data["shelf"] = "topic"
                data.pop("topic", None)
            else:
                data["topic"] = "venmo"
                data["shelf"] = rng.choice(["general", None])
        else:  # the field name instead of the alias, or both
            data["schema_version"] = rng.choice([1, "1", True])
            if rng.random() < 0.5:
                data["schema"] = rng.choice([1, 2, "x"])
    return data


def cases() -> list[dict[Any, Any]]:
    rng = random.Random(SEED)
    return [case(rng) for _ in range(COUNT)]


def encode(data: dict[Any, Any]) -> list[list[Any]]:
    """A mapping as JSON can hold it (keys of any type): its items."""
    return [[k, v] for k, v in data.items()]


def decode(items: list[list[Any]]) -> dict[Any, Any]:
    return {k: v for k, v in items}
