"""The unit checks (`evolve.memory._checks`) report the first error of a mapping in the words
of the pydantic model `MemoryUnit` was: 1,500 seeded mappings (`unit_cases`) with the error
that model gave, recorded from it (`data/unit_checks.jsonl`), and the unit it kept."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.memory import MalformedUnit, MemoryUnit, dump_unit, parse_unit
from evolve.memory._checks import InvalidUnit
from unit_cases import cases, decode

_ROWS = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "unit_checks.jsonl").read_text().splitlines()
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def test_the_recorded_mappings_are_the_generated_ones() -> None:
    assert len(_ROWS) >= 1_000
    for row, data in zip(_ROWS, cases(), strict=True):
        got = decode(row["in"])
        assert list(got) == list(data)
        assert all(_same(got[k], data[k]) or got[k] == data[k] for k in data)


def test_every_mapping_gets_the_first_error_pydantic_gave() -> None:
    mismatches: list[tuple[Any, ...]] = []
    for row in _ROWS:
        data = decode(row["in"])
        try:
            unit = MemoryUnit.model_validate(data)
        except InvalidUnit as exc:
            got = {"loc": list(exc.loc), "type": exc.type, "msg": exc.msg}
            want = {k: row.get(k) for k in ("loc", "type", "msg")}
            if got != want:
                mismatches.append((data, got, want))
            continue
        if "ok" not in row:
            mismatches.append((data, "valid", row["msg"]))
            continue
        dumped = unit.model_dump(by_alias=True, exclude_none=True)
        if json.loads(json.dumps(dumped)) != row["ok"] or [type(v) for v in dumped.values()] != [
            type(v) for v in row["ok"].values()
        ]:
            mismatches.append((data, dumped, row["ok"]))
    assert not mismatches, mismatches[:5]
    assert sum("ok" in r for r in _ROWS) > 100  # valid ones are among them
    assert len({r["type"] for r in _ROWS if "type" in r}) >= 10  # and every kind of error


def test_the_errors_are_value_errors_and_read_as_pydantics() -> None:
    with pytest.raises(ValueError, match="Input should be a valid string") as caught:
        MemoryUnit(id=3, recipe="ace", kind="x")  # type: ignore[arg-type]
    assert isinstance(caught.value, InvalidUnit)
    assert caught.value.errors()[0]["loc"] == ("id",)


def test_a_file_with_a_wrong_field_names_it_as_before() -> None:
    raw = "---\nid: a\nrecipe: ace\nkind: b\nhelpful: -1\n---\nx\n"
    with pytest.raises(MalformedUnit) as caught:
        parse_unit("memory/a.md", raw)
    assert str(caught.value) == (
        "memory/a.md: field 'helpful': Input should be greater than or equal to 0."
    )
    with pytest.raises(MalformedUnit, match=r"field 'extra': unknown field\."):
        parse_unit("memory/a.md", "---\nid: a\nrecipe: ace\nkind: b\nextra: 1\n---\nx\n")


def test_built_and_copied_units_keep_the_model_api() -> None:
    unit = MemoryUnit(id="a", recipe="ace", kind="b", alpha=2)
    assert unit.alpha == 2.0 and type(unit.alpha) is float  # as strict pydantic kept it
    copy = unit.model_copy(update={"status": "revoked"})
    assert copy.status == "revoked" and unit.status == "active"
    assert dict(copy)["status"] == "revoked"
    assert MemoryUnit.model_validate(unit.model_dump(by_alias=True)) == unit
    assert parse_unit("memory/a.md", dump_unit(unit)).id == "a"


def test_a_unit_pickles_as_it_is() -> None:
    import pickle

    unit = MemoryUnit(id="a", recipe="ace", kind="b", evidence=["x"], alpha=2)
    assert pickle.loads(pickle.dumps(unit)) == unit
    unchecked = unit.with_(status="bogus")  # copies are not checked, as pydantic's were not
    assert pickle.loads(pickle.dumps(unchecked)).status == "bogus"


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_the_quick_printable_check_never_passes_what_the_full_one_refuses(text: str) -> None:
    from evolve._format._units import safe_text
    from evolve._text import unsafe_char

    if safe_text(text):
        assert unsafe_char(text) is None
