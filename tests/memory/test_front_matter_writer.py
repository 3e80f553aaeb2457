"""Unit front matter is written without PyYAML for the canonical form: the bytes are the
ones PyYAML's safe dumper writes (as `dump_unit` called it), and the canonical reader reads
back what PyYAML's loader reads."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evolve._format import Unhandled
from evolve._format._units import dump_counters, dump_front, read_front, yaml_scalar

_DUMPER: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_KEYS = ["id", "schema", "recipe", "kind", "scope", "valid_from", "key", "trigger", "evidence"]

# Characters that make YAML's choices: indicators, spaces, digits, signs, quotes, letters of
# YAML's words, and a few beyond ASCII.
_ALPHABET = st.sampled_from(
    list("-+.:#,?[]{}&*!|>'\"%@`~=<_ /\\0123456789eExXbBoOyYnNtTfFlLuUsSaA")
    + ["é", "ü", "中", "\u00a0", "\ufeff", "\t", "\n", "\x85", "\u2028", "😀", "\x07"]
)
_WORDLIKE = st.sampled_from(
    ["yes", "No", "true", "FALSE", "on", "Off", "null", "~", "y", "n", "<<", "=", "1_000",
     "0x1F", "0b101", "017", "1:20", "1.5", ".5", "1e3", "1.0e+3", ".inf", "-.Inf", ".NaN",
     "2026-01-01", "2026-1-2T3:04:05Z", "2026-01-01 10:00:00.5 +02:00", "---", "...", "- x",
     "? x", ": x", "a: b", "a #b", "a#b", "x:", " lead", "trail ", "it's", "", "-", "?", ":"]
)  # fmt: skip
_STRINGS = st.one_of(_WORDLIKE, st.text(_ALPHABET, max_size=12), st.text(max_size=8))
_VALUES = st.one_of(
    _STRINGS,
    st.integers(-(10**20), 10**20),
    st.lists(_STRINGS, max_size=3),
    st.floats(allow_nan=True),
)


def _pyyaml(data: dict[str, Any]) -> str:
    return str(yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10_000))


@settings(max_examples=3000, deadline=None)
@given(st.dictionaries(st.sampled_from(_KEYS), _VALUES, min_size=1, max_size=5))
@example({"valid_from": "2026-01-01T00:00:00Z", "evidence": ["t-1", "yes"], "schema": 1})
def test_the_writer_writes_pyyamls_bytes_and_reads_back_its_values(data: dict[str, Any]) -> None:
    try:
        got = dump_front(data)
    except Unhandled:
        return  # PyYAML writes it (dump_unit falls back)
    assert got == _pyyaml(data)
    try:
        read = read_front(got[:-1])  # as parse_unit hands it: without the last newline
    except Unhandled:
        return  # PyYAML reads it
    assert read == yaml.safe_load(got)


@settings(max_examples=3000, deadline=None)
@given(_STRINGS)
def test_most_one_line_strings_are_written_without_pyyaml(value: str) -> None:
    try:
        got = yaml_scalar(value)
    except Unhandled:
        assert not all(" " <= c <= "~" or "\xa0" <= c <= "\u2027" for c in value)
        return
    assert f"k: {got}\n" == _pyyaml({"k": value})


def test_timestamps_and_words_are_quoted_as_pyyaml_quotes_them() -> None:
    assert dump_front({"valid_from": "2026-01-01T00:00:00Z", "kind": "yes", "id": "a-1"}) == (
        "valid_from: '2026-01-01T00:00:00Z'\nkind: 'yes'\nid: a-1\n"
    )


@settings(max_examples=2000, deadline=None)
@given(
    st.dictionaries(
        st.one_of(
            st.sampled_from(["1", "yes", "1e3", "0x1", "a", "ace-0123456789", "No", "1.5"]),
            st.text("ab.-_019eE", min_size=1, max_size=8),
        ),
        st.dictionaries(
            st.sampled_from(["helpful", "harmful", "alpha", "beta", "injected"]),
            st.one_of(st.integers(-5, 10**20), st.floats(), st.sampled_from([1e17, 1e-5, 0.1])),
        ),
        max_size=4,
    )
)
def test_counters_are_written_as_pyyaml_writes_them(data: dict[str, dict[str, Any]]) -> None:
    want = {
        ident: {k: fields[k] for k in sorted(fields)}
        for ident, fields in sorted(data.items())
        if fields
    }
    expected = yaml.dump(want, Dumper=_DUMPER, sort_keys=True, width=10_000) if want else ""
    assert dump_counters(data) == expected


def test_plain_counters_are_written_without_pyyaml() -> None:
    from evolve._format._units import _dump_counters

    assert _dump_counters({"ace-1": {"alpha": 1e17, "helpful": 2}, "1": {"beta": 0.5}}) == (
        "ace-1:\n  alpha: 1.0e+17\n  helpful: 2\n'1':\n  beta: 0.5\n"
    )
