"""The fast path's parsers give the full parsers' answers: trailers, unit files, counters."""

from __future__ import annotations

import re
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve._format import _units
from evolve._format._message import split_message, trailer_block
from evolve.memory import MalformedUnit, MemoryUnit, dump_counters, dump_unit, parse_unit
from evolve.memory._counters import parse_counters
from evolve.quick._git import Unhandled
from evolve.quick._read import parse_or_full

# The regex reading of a trailer block that the str-method version replaced (the oracle).
_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*)$")


def _regex_block(paragraph: str) -> dict[str, str] | None:
    pairs: list[list[str]] = []
    other, known = 0, False
    for line in paragraph.split("\n"):
        if not line.strip():
            continue
        match = _LINE.match(line)
        if match:
            pairs.append([match.group(1), match.group(2).strip()])
            known = known or match.group(1).startswith(("Evolve-", "Signed-off-by"))
        elif line[:1] in (" ", "\t") and pairs:
            pairs[-1][1] = f"{pairs[-1][1]} {line.strip()}".strip()
        else:
            other += 1
    if not pairs or (other and not (known and len(pairs) * 3 >= other)):
        return None
    return {key: value for key, value in pairs}


_PIECES = st.sampled_from(
    ["Evolve-Episode", "Signed-off-by", "Key", "k-1", "1x", "-a", "a b", ":", ": ", " ", "\t",
     "\n", "\n\n", "x", "é", "\r", "\x0b", "value", "Evolve-Ops: add=u-1", "  cont"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=24).map("".join))
def test_trailer_blocks_read_as_the_regex_reads_them(paragraph: str) -> None:
    assert trailer_block(paragraph) == _regex_block(paragraph)


def test_a_message_splits_into_subject_body_and_trailers() -> None:
    msg = (
        "ace: add 1\nmore\n\nComplaint:\n  x\n\nEvolve-Episode: 3\nEvolve-Ops: add=u-1\n  add=u-2\n"
    )
    assert split_message(msg) == (
        "ace: add 1 more",
        "Complaint:\n  x",
        {"Evolve-Episode": "3", "Evolve-Ops": "add=u-1 add=u-2"},
    )


# --- unit files ---------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\u2028\u2029"),
    max_size=30,
)
_MAYBE = st.one_of(
    st.none(), _TEXT, st.sampled_from(["yes", "null", "12", "0x1", "a: b", "#x", "'q'", " s "])
)


@st.composite
def units(draw: Any) -> MemoryUnit:
    fields: dict[str, Any] = {
        "id": draw(st.sampled_from(["ace-1", "A.b_c-9", "x"])),
        "recipe": draw(st.sampled_from(["ace", "tepa", "topl"])),
        "kind": draw(st.sampled_from(["bullet", "a b", "on"])),
        "status": draw(st.sampled_from(["active", "revoked", "pending", "tombstoned"])),
        "scope": draw(st.sampled_from(["global", "user:alex"])),
        "created_episode": draw(st.one_of(st.none(), st.integers(-5, 10**6))),
        "text": draw(_TEXT),
    }
    for name in ("key", "value", "complaint", "reason", "valid_from", "predicate"):
        value = draw(_MAYBE)
        if value is not None:
            fields[name] = value
    return MemoryUnit.model_validate(fields)


@settings(max_examples=300, deadline=None)
@given(units())
def test_canonical_files_read_as_parse_unit_reads_them(unit: MemoryUnit) -> None:
    path = unit.path().as_posix()
    raw = dump_unit(unit)
    want = parse_unit(path, raw).model_dump(by_alias=True, exclude_none=True)
    try:
        got = _units.parse(path, raw)
    except Unhandled:
        return  # the full parser reads it
    assert got.dump() == want


def test_most_canonical_files_take_the_fast_path() -> None:
    unit = MemoryUnit(
        id="ace-1", recipe="ace", kind="bullet", scope="user:alex", created_episode=2,
        valid_from="2026-01-01T10:00:00+00:00", complaint="it's: 'wrong'", text="- Do it.\n- Now.",
    )  # fmt: skip
    assert _units.parse("memory/alex/ace-1.md", dump_unit(unit)).dump() == unit.model_dump(
        by_alias=True, exclude_none=True
    )


@pytest.mark.parametrize(
    "raw",
    [
        "---\nid: u\nrecipe: ace\nkind: b\nhelpful: true\n---\nx\n",
        "---\nid: u\nrecipe: ace\nkind: b\nbogus: 1\n---\nx\n",
        "---\nid: u\nrecipe: ace\n---\nx\n",
        "---\nid: v\nrecipe: ace\nkind: b\n---\nx\n",
        "---\nid: u\nrecipe: ace\nkind: b\nscope: user:bob\n---\nx\n",
        "---\nid: u\nrecipe: ace\nkind: b\nstatus: gone\n---\nx\n",
        "---\nid: u\nrecipe: ace\nkind: b\n---\nbell \x07\n",
        "---\nid: u\nrecipe: ace\nkind: b\n",
    ],
)
def test_invalid_files_go_to_the_full_parser(raw: str) -> None:
    with pytest.raises(Unhandled):
        _units.parse("memory/u.md", raw)
    with pytest.raises(MalformedUnit):
        parse_or_full("memory/u.md", raw)


def test_hand_notes_read_as_parse_unit_reads_them() -> None:
    raw = "  A note.\r\n- with a bullet\n"
    for path in ("memory/n.md", "memory/alex/Odd Name!.md"):
        assert _units.parse(path, raw).dump() == parse_unit(path, raw).model_dump(
            by_alias=True, exclude_none=True
        )


def test_a_plain_file_on_a_skill_shelf_is_a_skill_read_by_the_full_parser() -> None:
    path = "memory/skills/general/x.md"
    raw = "  A note.\r\n- with a bullet\n"
    with pytest.raises(Unhandled):
        _units.parse(path, raw)
    unit = parse_or_full(path, raw)
    assert unit.shelf == "general"
    assert unit.dump() == parse_unit(path, raw).model_dump(by_alias=True, exclude_none=True)


def test_the_field_table_matches_the_unit_model() -> None:
    """A field added to MemoryUnit needs a row in evolve._format._units.FIELDS (until then,
    files that carry it are read by the full parser; this test says so)."""
    import msgspec

    from evolve.memory._checks import FIELDS as CHECKED

    model = {f.name: f for f in msgspec.structs.fields(MemoryUnit)}
    assert list(_units.FIELDS) == list(model) == list(CHECKED), (
        "update evolve._format._units.FIELDS"
    )
    for name, (key, kind, default) in _units.FIELDS.items():
        info = model[name]
        assert info.encode_name == key == CHECKED[name][0]
        assert info.default == default or (info.required and default is None)
        allowed: dict[str, tuple[Any, ...]] = {
            "int": (int, int | None),
            "uint": (int | None,),
            "float": (float | None,),
            "str": (str, str | None),
            "id": (str,),
            "scope": (str,),
        }
        if kind == "skill":
            assert name in {"shelf", "evidence"}, name
        elif kind == "status":
            assert set(typing.get_args(info.type)) == _units.STATUSES
        else:
            assert info.type in allowed[kind], name


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["ace-1", "b", "1", "yes", "x y"]),
        st.fixed_dictionaries(
            {},
            optional={
                "helpful": st.integers(0, 99),
                "harmful": st.integers(0, 99),
                "alpha": st.floats(0.5, 50),
                "beta": st.integers(1, 9).map(float),
            },
        ),  # fmt: skip
    )
)
def test_counter_sidecars_read_as_parse_counters_reads_them(data: dict[str, Any]) -> None:
    raw = dump_counters(data)
    want = parse_counters("memory/_counters.yaml", raw)
    try:
        got = _units.parse_counters(raw)
    except Unhandled:
        return  # the full parser reads it
    assert got == want


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(units())
def test_the_models_built_from_canonical_files_are_parse_units(unit: MemoryUnit) -> None:
    from evolve.memory._files import read_unit

    path = unit.path().as_posix()
    raw = dump_unit(unit)
    want = parse_unit(path, raw)
    got = read_unit(path, raw)
    assert got == want and repr(got) == repr(want)
    assert dump_unit(got) == dump_unit(want) == raw
