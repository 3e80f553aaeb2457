"""Research cards: the starter pool, strict parsing of hostile cards, the workspace's pool."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evolve.errors import ConfigError, PathRefused
from evolve.harness import BUILTINS, DEFAULTS, MODULES
from evolve.research import (
    CARD_BYTES,
    Card,
    check_variants,
    dump_card,
    load_pool,
    parse_card,
    read_cards,
    starter_pool,
)
from evolve.research import (
    MODULES as CARD_MODULES,
)
from evolve.workspace import Workspace

GOOD = """\
title: "Self-Refine: Iterative Refinement with Self-Feedback"
authors: [Aman Madaan, Niket Tandon]
year: 2023
identifier: arXiv:2303.17651
module: workflow
mechanism: self-refine
variant: verify_first
summary: Draft, criticise, refine.
provenance: a test
"""


def known() -> dict[str, dict[str, dict[str, tuple[int, int]]]]:
    return {
        m: {n: {p: (s.low, s.high) for p, s in v.params.items()} for n, v in vs.items()}
        for m, vs in BUILTINS.items()
    }


def test_the_card_modules_are_the_harness_modules() -> None:
    assert CARD_MODULES == MODULES


def test_the_starter_pool_has_twenty_cards_over_every_module() -> None:
    pool = starter_pool()
    assert len(pool) >= 20
    assert {c.module for c in pool} == set(MODULES)
    assert all(sum(c.module == m for c in pool) >= 4 for m in MODULES)
    assert len({c.id for c in pool}) == len(pool)
    assert all(c.provenance == "starter pool" for c in pool)


def test_every_built_in_variant_has_a_starter_card_and_every_card_a_real_variant() -> None:
    pool = starter_pool()
    check_variants(pool, known())  # every named variant and parameter exists, in range
    named = {(c.module, c.variant) for c in pool if c.variant is not None}
    for module, variants in BUILTINS.items():
        for name in variants:
            if name != DEFAULTS[module]:
                assert (module, name) in named, f"no starter card for {module}: {name}"
    assert any(c.variant is None for c in pool)  # mechanisms only a model can implement


def test_a_card_reads_back_from_its_canonical_text() -> None:
    card = parse_card(GOOD, "self_refine")
    assert card == parse_card(dump_card(card), "self_refine")
    assert card.authors == ("Aman Madaan", "Niket Tandon") and card.year == 2023
    assert card.variant == "verify_first" and dict(card.params) == {}
    assert hash(card) == hash(parse_card(GOOD, "self_refine"))  # cards key dicts and sets


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (GOOD + "extra: 1\n", "unknown key 'extra'"),
        (GOOD.replace("year: 2023", "year: '2023'"), "year must be a whole number"),
        (GOOD.replace("year: 2023", "year: true"), "year must be a whole number"),
        (GOOD.replace("module: workflow", "module: planner"), "module is 'planner'"),
        (GOOD.replace("authors: [Aman Madaan, Niket Tandon]", "authors: {a: 1}"), "authors"),
        (GOOD.replace("identifier: arXiv:2303.17651", "identifier: not an id"), "identifier"),
        (GOOD.replace("title: ", "title: [x]\nold: "), "unknown key 'old'"),
        (GOOD.replace("summary: Draft, criticise, refine.", "summary: 3"), "summary must be text"),
        (GOOD.replace("summary: Draft, criticise, refine.", "summary: " + "w " * 1500), "at most"),
        (GOOD.replace("variant: verify_first", "variant: ../../x"), "variant must be"),
        (GOOD.replace("variant: verify_first", "variant: null\nparams: {k: 3}"), "need a variant"),
        (GOOD + "params: {k: '3'}\n", "must be a whole number"),
        (GOOD + "params: [1, 2]\n", "params must map"),
        (GOOD.replace("mechanism: self-refine\n", ""), "lacks mechanism"),
        (GOOD + "title: again\n", "twice"),
        ("- a\n- b\n", "must be a mapping"),
        ("title: [unclosed\n", "not valid YAML"),
        (GOOD + "version: 2\n", "version 2"),
        (GOOD.replace("title: ", 'title: "a\\u0007b" #'), "control character"),
        ("a: &a [*a]\n" * 1, "unknown key"),
    ],
)
def test_a_bad_card_is_refused_in_one_sentence(text: str, needle: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_card(text, "card")
    message = str(raised.value)
    assert needle in message and message.startswith("research/card.yaml")
    assert message.endswith(".") and "\n" not in message


@pytest.mark.parametrize("stem", ["Bad", "a b", "-x", "x" * 65, "../x", ""])
def test_a_card_file_name_is_checked(stem: str) -> None:
    with pytest.raises(ConfigError, match="file name"):
        parse_card(GOOD, stem)


def test_a_card_over_the_size_limit_is_refused() -> None:
    with pytest.raises(ConfigError, match="KiB"):
        parse_card(GOOD + "#" * CARD_BYTES, "big")


def test_check_variants_refuses_unknown_variants_and_parameters() -> None:
    card = parse_card(GOOD, "x")
    bad = parse_card(GOOD.replace("verify_first", "nope"), "x")
    check_variants([card], known())
    with pytest.raises(ConfigError, match="no built-in variant 'nope'"):
        check_variants([bad], known())
    memgpt = GOOD.replace("module: workflow", "module: context").replace(
        "variant: verify_first", "variant: budget_fifo\nparams: {budget_tokens: 0}"
    )
    with pytest.raises(ConfigError, match="between 1 and"):
        check_variants([parse_card(memgpt, "x")], known())
    other = memgpt.replace("budget_tokens: 0", "window: 3")
    with pytest.raises(ConfigError, match="no parameter 'window'"):
        check_variants([parse_card(other, "x")], known())


def _write(root: Path, name: str, text: str) -> None:
    (root / "research").mkdir(exist_ok=True)
    (root / "research" / name).write_text(text, encoding="utf-8")


def test_the_pool_is_the_starter_pool_with_the_workspace_cards_over_it(
    workspace: Workspace,
) -> None:
    root = workspace.root
    assert [c.id for c in load_pool(root)] == sorted(c.id for c in starter_pool())
    assert load_pool(root, starter=False) == []
    _write(root, "self_refine.yaml", GOOD)  # replaces the starter card of that id
    _write(root, "mine.yaml", GOOD)
    _write(root, "README.md", "not a card")
    pool = {c.id: c for c in load_pool(root)}
    assert len(pool) == len(starter_pool()) + 1
    assert pool["self_refine"].provenance == "a test" and "mine" in pool
    assert [c.id for c in load_pool(root, starter=False)] == ["mine", "self_refine"]


def test_a_bad_workspace_card_is_named(workspace: Workspace) -> None:
    _write(workspace.root, "broken.yaml", GOOD + "oops: 1\n")
    with pytest.raises(ConfigError, match=r"^research/broken.yaml has the unknown key 'oops'"):
        load_pool(workspace.root)
    (workspace.root / "research" / "broken.yaml").write_bytes(b"title: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        read_cards(workspace.root)


def test_a_huge_workspace_card_is_refused_before_it_is_parsed(workspace: Workspace) -> None:
    _write(workspace.root, "huge.yaml", "title: x\n" + "# pad\n" * 500_000)
    with pytest.raises(ConfigError, match="over the 64 KiB"):
        read_cards(workspace.root)


def test_links_out_of_the_workspace_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "card.yaml").write_text(GOOD, encoding="utf-8")
    (workspace.root / "research").mkdir()
    os.symlink(outside / "card.yaml", workspace.root / "research" / "card.yaml")
    with pytest.raises(PathRefused):
        load_pool(workspace.root)
    (workspace.root / "research" / "card.yaml").unlink()
    (workspace.root / "research").rmdir()
    os.symlink(outside, workspace.root / "research")
    with pytest.raises(PathRefused):
        load_pool(workspace.root)


def test_a_card_built_in_code_is_hashable_and_read_only() -> None:
    card = Card("x", "T", ("A",), 2020, "arXiv:1", "s", "memory", "m", "topk_similar", {"k": 3})
    assert {card: 1}[card] == 1
    with pytest.raises(TypeError):
        card.params["k"] = 4  # type: ignore[index]


def test_the_docs_table_lists_every_starter_card_with_its_variant() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "research.md"
    rows = [line for line in page.read_text(encoding="utf-8").splitlines() if "| `" in line]
    table = {row.split("`")[1]: row for row in rows}
    pool = starter_pool()
    assert sorted(table) == sorted(c.id for c in pool)
    for c in pool:
        cells = [cell.strip() for cell in table[c.id].strip("|").split("|")]
        assert cells[0] == c.module and cells[2] == c.mechanism and c.identifier in cells[3]
        assert cells[4].split(" ")[0] == (c.variant or "—")
