"""Caps in the applier (issue 9 item 7): per-recipe limits declared in the protected
`evolve.yaml`, enforced whatever the proposer does; over the cap is a refusal with a reason."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial

import pytest

from evolve.applier import MemoryApplier, Op
from evolve.errors import ConfigError
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.memory import load_units
from evolve.train import train
from evolve.workspace import RecipeCaps, Workspace, parse_config
from factories import memory_unit

RunGit = Callable[..., str]
ALEX = "user:alex"


_unit = partial(memory_unit, created_episode=0)


def _with_caps(ws: Workspace, run_git: RunGit, caps: str) -> Workspace:
    """The workspace with its `caps:` section replaced by `caps` in evolve.yaml (committed;
    a second `caps:` would be refused as a key given twice)."""
    config = ws.root / "evolve.yaml"
    lines = config.read_text("utf-8").splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("caps:")), len(lines))
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:1] not in (" ", "#")),
               len(lines))  # fmt: skip
    config.write_text("".join(lines[:start] + lines[end:]) + caps, "utf-8")
    run_git(ws.root, "commit", "-q", "-am", "caps")
    return Workspace(ws.root)


def _apply(ws: Workspace, ops: Sequence[Op]) -> tuple[list[str], list[str]]:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(ops, load_units(ws.root))
    applier.done()
    return [op.id for op in result.applied], [r.reason for r in result.refused]


def test_the_defaults_are_the_recipes_own_caps() -> None:
    from evolve.updaters import AceRecipe, ReflexionRecipe, TopLRecipe, TraceRecipe, recipe_caps
    from evolve.updaters._base import MAX_STATEMENT

    config = parse_config("")
    assert recipe_caps(config, "ace").units == AceRecipe.cap
    assert recipe_caps(config, "ace").chars == MAX_STATEMENT
    assert recipe_caps(config, "trace").units == TraceRecipe.cap
    assert recipe_caps(config, "reflexion").units == ReflexionRecipe.keep
    assert recipe_caps(config, "topl").units == TopLRecipe.pool_cap
    assert recipe_caps(config, "rewrite").chars == config.memory.max_memory_chars
    assert recipe_caps(config, "tepa").chars == recipe_caps(config, "topl").chars == 300
    assert recipe_caps(config, "skills").chars == 400
    assert recipe_caps(config, "hand").units is None  # a person's notes are not capped
    assert recipe_caps(config, "hand").chars is None
    assert config.caps_for("ace") == RecipeCaps()  # the config alone knows no recipe


def test_caps_in_evolve_yaml_override_one_field_at_a_time() -> None:
    from evolve.updaters import recipe_caps

    config = parse_config("caps:\n  ace: {units: 4}\n  topl: {chars: null}\n")
    assert recipe_caps(config, "ace").units == 4 and recipe_caps(config, "ace").chars == 300
    assert recipe_caps(config, "topl").chars is None and recipe_caps(config, "topl").units == 60
    with pytest.raises(ConfigError, match="caps.ace.size"):
        parse_config("caps:\n  ace: {size: 4}\n")
    with pytest.raises(ConfigError, match="caps.ace.units"):
        parse_config("caps:\n  ace: {units: 0}\n")


def test_a_unit_over_the_characters_cap_is_refused_with_the_reason(workspace: Workspace) -> None:
    applied, refused = _apply(workspace, [Op(op="add", unit=_unit("ace-a", "y" * 301))])
    assert applied == []
    assert refused == ["over the ace cap of 300 characters per unit (301; caps in evolve.yaml)"]


def test_units_per_scope_are_capped_but_a_replacement_at_the_cap_passes(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = _with_caps(workspace, run_git, "caps:\n  ace: {units: 2}\n")
    ops = [Op(op="add", unit=_unit(f"ace-{c}", f"Rule {c}.")) for c in "abc"]
    applied, refused = _apply(ws, ops)
    assert applied == ["ace-a", "ace-b"]
    assert refused == ["over the ace cap of 2 active units per scope (caps in evolve.yaml)"]

    # At the cap: a replacement (revoke + add) and an add that evicts both keep the count.
    a, b = (u for u in load_units(ws.root) if u.id in ("ace-a", "ace-b"))
    applied, refused = _apply(
        ws,
        [
            Op(op="revoke", unit=a.with_(status="revoked", revoked_by="ace-d")),
            Op(op="add", unit=_unit("ace-d", "Rule d.", supersedes="ace-a")),
            Op(op="add", unit=_unit("ace-e", "Rule e.")),
            Op(op="evict", unit=b),
        ],
    )
    assert refused == [] and applied == ["ace-a", "ace-d", "ace-e", "ace-b"]
    # Over it: the replacement goes through, the plain add is refused.
    applied, refused = _apply(ws, [Op(op="add", unit=_unit("ace-f", "Rule f."))])
    assert applied == [] and refused == [
        "over the ace cap of 2 active units per scope (caps in evolve.yaml)"
    ]


def test_a_replacement_over_the_cap_leaves_the_old_unit_active(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = _with_caps(workspace, run_git, "caps:\n  ace: {chars: 20}\n")
    _apply(ws, [Op(op="add", unit=_unit("ace-a", "Short rule."))])
    (old,) = load_units(ws.root)
    applied, refused = _apply(
        ws,
        [
            Op(op="revoke", unit=old.with_(status="revoked", revoked_by="ace-b")),
            Op(op="add", unit=_unit("ace-b", "A much longer rule than allowed.")),
        ],
    )
    assert applied == []
    assert refused[1].startswith("over the ace cap of 20 characters per unit")
    assert refused[0].startswith("goes with add ace-b, which was refused (over the ace cap")
    assert {u.id: u.status for u in load_units(ws.root)} == {"ace-a": "active"}


def test_memory_chars_caps_all_of_a_recipes_text_together(
    workspace: Workspace, run_git: RunGit
) -> None:
    ws = _with_caps(workspace, run_git, "caps:\n  topl: {memory_chars: 30}\n")
    ops = [
        Op(op="add", unit=_unit(f"topl-{c}", f"Assertion {c} here.", recipe="topl")) for c in "ab"
    ]
    applied, refused = _apply(ws, ops)
    assert applied == ["topl-a"]
    assert refused == [
        "over the topl cap of 30 characters of active text per scope (caps in evolve.yaml)"
    ]


class LongWinded:
    """An updater that proposes one bullet over a 40-character cap, and one under it."""

    def __call__(self, messages: Sequence[Message], schema: JsonSchema | None) -> str:
        ops = [
            {"op": "add", "text": "Pay with the card I use most often, always, every time."},
            {"op": "add", "text": "Sign texts with my name."},
        ]
        return json.dumps({"operations": ops, "bullet_tags": []})


def test_no_proposer_exceeds_the_caps_through_train(workspace: Workspace, run_git: RunGit) -> None:
    ws = _with_caps(workspace, run_git, "caps:\n  ace: {chars: 40}\n")
    report = train(ws, recipe="ace", episodes=2, updater_llm=MockLLM(LongWinded()))
    refused = [line for o in report.outcomes for line in o.refused]
    assert any("over the ace cap of 40 characters per unit" in line for line in refused)
    assert [u.text for u in load_units(ws.root)] == ["Sign texts with my name."]
    body = run_git(ws.root, "log", "-1", "--format=%B")
    assert "over the ace cap of 40 characters per unit" in body
