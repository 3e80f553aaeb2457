"""Episode records dump what pydantic's JSON mode dumps for the same fields, without pydantic
(`evolve run` scores without importing it)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from pydantic import TypeAdapter

from evolve.episode import CallRecord, EpisodeRecord, TurnRecord
from evolve.episode._records import jsonable

TRICKY: list[Any] = [
    None, True, 0, -3, 1.5, "x", "é\u2028", [1, [2, {"a": None}]], {"k": {"n": [True]}},
    (1, 2), {3, 4}, frozenset({"a"}), b"bytes", {1: "int key"}, {(1, 2): "tuple key"},
    float("inf"), float("nan"), datetime.date(2026, 1, 2), [(1, {"s": {5}})],
    [(float("inf"), float("-inf"))],
]  # fmt: skip


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_values_dump_as_pydantics_json_mode(value: Any) -> None:
    expected = TypeAdapter(Any).dump_python(value, mode="json")
    got = jsonable(value)
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


def _record(**extra: Any) -> EpisodeRecord:
    turn = TurnRecord(call=CallRecord(tool="t", args={"a": (1, 2)}, ok=True, result={"r": {3}}))
    fields: dict[str, Any] = {
        "task_id": "t-1", "family": "f", "split": "dev", "persona": "alex", "run": 0,
        "seed": 1, "model": "sim", "turns": [turn, TurnRecord(bad_reply="no", reply="x")],
        "hit_turn_limit": False, "final_state": {"completed": True}, "task_success": True,
        "failure": None, "applicable_rules": ["r"], "violations": {}, "accepted": True,
        "input_tokens": 3, "output_tokens": 4, "cost": 0, "prompt_chars": 9, "duration_s": 1,
    }  # fmt: skip
    return EpisodeRecord(**{**fields, **extra})


def test_a_record_dumps_every_field_in_order_with_floats_kept_float() -> None:
    record = _record()
    dumped = record.model_dump(mode="json")
    assert list(dumped)[:3] == ["schema_version", "task_id", "family"]
    assert dumped["cost"] == 0.0 and isinstance(dumped["cost"], float)
    assert isinstance(dumped["duration_s"], float)
    assert dumped["turns"][0]["call"] == {
        "tool": "t", "args": {"a": [1, 2]}, "ok": True, "result": {"r": [3]}, "error": None,
    }  # fmt: skip
    assert dumped["turns"][1] == {"call": None, "bad_reply": "no", "reply": "x"}
    assert dumped["refused"] == [] and record.tokens == 7
    assert json.loads(record.model_dump_json()) == dumped
    copy = record.model_copy(update={"commit": "abc", "episode": 3})
    assert (copy.commit, copy.episode, record.commit) == ("abc", 3, None)
    with pytest.raises(TypeError):
        _record(unknown=1)
