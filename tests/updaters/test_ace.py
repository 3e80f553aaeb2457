"""ACE: bullets with opaque ids, polarity-aware dedup, outcome counters and a truthful cap."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from evolve.applier import MemoryApplier, Op
from evolve.llm import Message
from evolve.llm._mock import MockLLM
from evolve.memory import MemoryUnit, load_units
from evolve.train import train
from evolve.updaters import RECIPES, EpisodeView, RecipeContext, Update, get_recipe, render_for
from evolve.workspace import Workspace

RunGit = Callable[..., str]
ALEX = "user:alex"


def render_memory(units: Sequence[MemoryUnit], scope: str) -> str:
    """Rendered memory of a workspace configured to render every recipe."""
    return render_for(units, scope, RECIPES)


NOW = "2026-01-01T00:00:00+00:00"
FIRST_NAME = "Text messages should end with my first name."

# Thirteen bullets about different things (pairwise trigram cosine well under 0.85).
DISTINCT = [
    "Sign every text message with a dash and my first name.",
    "Make Venmo payments visible to friends only.",
    "Pay with the card I use most often.",
    "Title notes in Title Case.",
    "Write note bodies as a numbered list.",
    "Start email subjects with [Alex].",
    "Copy me on every email I send.",
    "Greet people by first name in emails.",
    "Keep payment notes under forty characters.",
    "Open text messages with 'Hey'.",
    "Close emails with 'Best, Alex'.",
    "Add the date at the top of every note.",
    "Never use exclamation marks anywhere.",
]


def _bullet(uid: str, text: str, episode: int = 0, **fields: Any) -> MemoryUnit:
    base: dict[str, Any] = {
        "id": uid,
        "recipe": "ace",
        "kind": "bullet",
        "scope": ALEX,
        "created_episode": episode,
        "updated_episode": episode,
        "helpful": 0,
        "harmful": 0,
        "text": text,
    }
    base.update(fields)
    return MemoryUnit.model_validate(base)


def _ctx(
    units: Sequence[MemoryUnit], reply: str | dict[str, Any], episode: int = 1
) -> RecipeContext:
    text = reply if isinstance(reply, str) else json.dumps(reply)
    return RecipeContext(
        units=list(units),
        scope=ALEX,
        episode=EpisodeView(
            episode=episode,
            task_id="text_update-1",
            instruction="Text Morgan Diaz to let them know: I'm running late.",
            actions="",
            complaint="My text to Morgan Diaz didn't end the way I sign my texts.",
            accepted=False,
        ),
        llm=MockLLM([text]),
        seed=0,
        now=NOW,
    )


def _observe(units: Sequence[MemoryUnit], reply: str | dict[str, Any], episode: int = 1) -> Update:
    return get_recipe("ace").observe(_ctx(units, reply, episode))


def _labels(update: Update) -> list[tuple[str, str]]:
    return [(op.op, op.id) for op in update.ops]


def _after(units: Sequence[MemoryUnit], update: Update) -> list[MemoryUnit]:
    """The unit set once the update's ops are written (what the applier would leave)."""
    state = {u.id: u for u in units}
    for op in update.ops:
        if op.op == "evict":
            state.pop(op.id, None)
        else:
            state[op.id] = op.unit
    return list(state.values())


def _active_texts(units: Sequence[MemoryUnit]) -> set[str]:
    return {u.text for u in units if u.status == "active"}


def _commit_units(ws: Workspace, units: Sequence[MemoryUnit], message: str) -> None:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply([Op(op="add", unit=u) for u in units], load_units(ws.root))
    assert not result.refused
    assert ws.store.commit(result.paths, message) is not None
    applier.done()


def _apply_and_commit(ws: Workspace, update: Update, message: str) -> None:
    applier = MemoryApplier(ws, ALEX)
    result = applier.apply(update.ops, load_units(ws.root))
    assert result.refused == [], result.refused
    assert ws.store.commit(result.paths, message) is not None
    applier.done()


# --- modify and re-add ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "replacement",
    [
        pytest.param("Text messages should not end with my first name.", id="similar-replacement"),
        pytest.param(
            "Text messages should end with my initials.",
            id="dissimilar-replacement",
        ),
    ],
)
def test_modify_then_readd_of_original_text_is_handled_as_the_recipe_defines(
    workspace: Workspace, replacement: str
) -> None:
    original = _bullet("ace-orig", FIRST_NAME)
    _commit_units(workspace, [original], "seed")

    # Episode 1: modify revokes the old bullet and adds a new one, with a new id, superseding it.
    first = _observe(
        load_units(workspace.root),
        {"operations": [{"op": "modify", "id": "ace-orig", "text": replacement}]},
        episode=1,
    )
    assert first.refused == []
    assert [op.op for op in first.ops] == ["revoke", "add"]
    revoked, added = first.ops[0].unit, first.ops[1].unit
    assert revoked.id == "ace-orig" and revoked.text == FIRST_NAME
    assert revoked.status == "revoked" and revoked.revoked_at == 1
    assert revoked.revoked_by == added.id and (revoked.valid_to or "").startswith(NOW[:19])
    assert added.id != "ace-orig" and added.text == replacement
    assert added.status == "active" and added.supersedes == "ace-orig"
    assert added.created_episode == 1
    _apply_and_commit(workspace, first, "episode 1")
    assert render_memory(load_units(workspace.root), ALEX) == f"[{added.id}] {replacement}"

    # Episode 2: re-adding the original text reactivates the old bullet (same id, same text)
    # and revokes the replacement: exactly these two operations, and nothing else.
    second = _observe(
        load_units(workspace.root), {"operations": [{"op": "add", "text": FIRST_NAME}]}, episode=2
    )
    assert second.refused == []
    assert sorted(_labels(second)) == sorted([("reactivate", "ace-orig"), ("revoke", added.id)])
    by_id = {op.id: op.unit for op in second.ops}
    back = by_id["ace-orig"]
    assert back.status == "active" and back.text == FIRST_NAME
    assert back.revoked_by is None and back.revoked_at is None and back.valid_to is None
    assert by_id[added.id].status == "revoked" and by_id[added.id].revoked_by == "ace-orig"
    _apply_and_commit(workspace, second, "episode 2")
    units = load_units(workspace.root)
    assert _active_texts(units) == {FIRST_NAME}
    assert render_memory(units, ALEX) == f"[ace-orig] {FIRST_NAME}"


def test_modify_to_the_same_text_is_a_logged_no_op() -> None:
    update = _observe(
        [_bullet("ace-a", FIRST_NAME)],
        {
            "operations": [
                {
                    "op": "modify",
                    "id": "ace-a",
                    "text": "  text messages should end with my first name ",
                }
            ]
        },
    )
    assert update.ops == [] and update.refused == []
    assert any("no change" in n for n in update.notes)


# --- dedup with polarity ------------------------------------------------------------------------


def test_negating_add_is_not_silently_dropped() -> None:
    old = _bullet("ace-a", FIRST_NAME)
    negation = "Text messages should not end with my first name."
    update = _observe([old], {"operations": [{"op": "add", "text": negation}]})
    assert update.refused == []
    assert [op.op for op in update.ops] == ["revoke", "add"]
    revoked, added = update.ops[0].unit, update.ops[1].unit
    assert revoked.id == "ace-a" and revoked.status == "revoked"
    assert revoked.revoked_by == added.id and revoked.text == FIRST_NAME
    assert added.text == negation and added.status == "active"
    assert any("negated or changed" in n and added.id in n for n in update.notes)
    assert _active_texts(_after([old], update)) == {negation}


def test_add_that_changes_a_value_replaces_the_similar_bullet() -> None:
    old = _bullet("ace-a", "Pay with the card ending in 4242 for every payment.")
    new = "Pay with the card ending in 1881 for every payment."
    update = _observe([old], {"operations": [{"op": "add", "text": new}]})
    assert [op.op for op in update.ops] == ["revoke", "add"]
    assert _active_texts(_after([old], update)) == {new}


@pytest.mark.parametrize(
    "duplicate",
    [FIRST_NAME, "text messages should END with my first name!", f"  {FIRST_NAME}  "],
)
def test_a_true_duplicate_add_is_dropped_with_a_dedup_note(duplicate: str) -> None:
    update = _observe(
        [_bullet("ace-a", FIRST_NAME)], {"operations": [{"op": "add", "text": duplicate}]}
    )
    assert update.ops == []
    assert update.refused == []
    assert any(n.startswith("dedup:") and "ace-a" in n for n in update.notes)


def test_dedup_and_a_real_add_in_one_reply(workspace: Workspace, run_git: RunGit) -> None:
    """Through `train`: the commit's Evolve-Ops names only what was written."""
    _commit_units(workspace, [_bullet("ace-a", FIRST_NAME)], "seed")
    replies = iter(
        [
            {"operations": [{"op": "add", "text": FIRST_NAME}, {"op": "add", "text": DISTINCT[1]}]},
        ]
    )

    def responder(messages: Sequence[Message], schema: Any) -> str:
        return json.dumps(next(replies, {"operations": []}))

    report = train(workspace, recipe="ace", episodes=6, updater_llm=MockLLM(responder))
    (commit,) = report.commits
    body = run_git(workspace.root, "log", "-1", "--format=%B", commit)
    ops_line = next(line for line in body.splitlines() if line.startswith("Evolve-Ops:"))
    added = [u for u in load_units(workspace.root) if u.text == DISTINCT[1]]
    assert len(added) == 1
    assert ops_line == f"Evolve-Ops: add={added[0].id}"
    assert "dedup: dropped new bullet" in body and "ace-a" in body
    assert run_git(workspace.root, "log", "-1", "--format=%s", commit).startswith(
        "ace · alex · episode"
    )


# --- helpful / harmful ---------------------------------------------------------------------


def test_helpful_and_harmful_move_with_bullet_tags() -> None:
    units = [
        _bullet("ace-a", DISTINCT[0], helpful=2),
        _bullet("ace-b", DISTINCT[1], harmful=1),
        _bullet("ace-c", DISTINCT[2]),
    ]
    update = _observe(
        units,
        {
            "operations": [],
            "bullet_tags": [
                {"id": "ace-a", "tag": "helpful"},
                {"id": "ace-b", "tag": "harmful"},
                {"id": "ace-c", "tag": "neutral"},
            ],
        },
        episode=5,
    )
    assert update.refused == []
    # Counters move in `count` ops (the sidecar): the bullet's content is not touched.
    assert _labels(update) == [("count", "ace-a"), ("count", "ace-b")]
    a, b = update.ops[0].unit, update.ops[1].unit
    assert (a.helpful, a.harmful, a.updated_episode) == (3, 0, 0)
    assert (b.helpful, b.harmful, b.updated_episode) == (0, 2, 0)
    assert a.text == DISTINCT[0] and a.status == "active"


def test_counters_reach_the_files_and_the_next_episode_reads_them(workspace: Workspace) -> None:
    _commit_units(workspace, [_bullet("ace-a", DISTINCT[0])], "seed")
    for episode in (1, 2):
        update = _observe(
            load_units(workspace.root),
            {"operations": [], "bullet_tags": [{"id": "ace-a", "tag": "harmful"}]},
            episode=episode,
        )
        _apply_and_commit(workspace, update, f"episode {episode}")
    (unit,) = load_units(workspace.root)
    assert unit.harmful == 2 and unit.helpful == 0


# --- the cap --------------------------------------------------------------------------------


def _twelve(**overrides: dict[str, Any]) -> list[MemoryUnit]:
    return [
        _bullet(f"ace-{i:02d}", DISTINCT[i], episode=i, **overrides.get(f"ace-{i:02d}", {}))
        for i in range(12)
    ]


def test_cap_evicts_by_helpful_minus_harmful_before_age() -> None:
    units = _twelve(
        **{"ace-00": {"helpful": 3}, "ace-05": {"harmful": 2}, "ace-07": {"harmful": 1}}
    )
    update = _observe(units, {"operations": [{"op": "add", "text": DISTINCT[12]}]}, episode=20)
    labels = _labels(update)
    assert [op for op, _ in labels] == ["add", "evict"]
    assert labels[1] == ("evict", "ace-05")  # lowest score, although ace-00 and ace-01 are older
    assert update.ops[1].unit == units[5]  # the state it had
    assert any("cap: evicted ace-05" in n for n in update.notes)
    after = _after(units, update)
    assert len([u for u in after if u.status == "active"]) == 12


def test_cap_with_equal_scores_evicts_the_oldest() -> None:
    units = _twelve()
    update = _observe(units, {"operations": [{"op": "add", "text": DISTINCT[12]}]}, episode=20)
    assert [op for op, _ in _labels(update)] == ["add", "evict"]
    assert _labels(update)[1] == ("evict", "ace-00")


def test_an_add_the_cap_discards_is_not_recorded_as_an_add() -> None:
    units = _twelve(**{f"ace-{i:02d}": {"helpful": 1} for i in range(12)})
    update = _observe(units, {"operations": [{"op": "add", "text": DISTINCT[12]}]}, episode=20)
    assert update.ops == []  # the new bullet scored lowest; nothing was written
    assert any(n.startswith("cap: evicted") for n in update.notes)


def test_cap_eviction_is_recorded_in_the_commit(workspace: Workspace, run_git: RunGit) -> None:
    units = _twelve(**{"ace-03": {"harmful": 4}})
    _commit_units(workspace, units, "seed twelve bullets")

    def responder(messages: Sequence[Message], schema: Any) -> str:
        return json.dumps({"operations": [{"op": "add", "text": DISTINCT[12]}]})

    report = train(workspace, recipe="ace", episodes=8, updater_llm=MockLLM(responder))
    first = report.commits[0]
    body = run_git(workspace.root, "log", "-1", "--format=%B", first)
    subject = body.splitlines()[0]
    assert "add 1" in subject and "evict 1" in subject
    new = next(u for u in load_units(workspace.root) if u.text == DISTINCT[12])
    assert f"Evolve-Ops: add={new.id} evict=ace-03" in body
    assert "cap: evicted ace-03" in body
    assert not (workspace.root / "memory/alex/ace-03.md").exists()
    shown = run_git(workspace.root, "show", "--name-status", "--format=", first).split()
    assert "memory/alex/ace-03.md" in shown


# --- refusals: the episode goes on ------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"op": "modify", "id": "ace-nope", "text": "x y z"}, "unknown bullet id"),
        ({"op": "modify", "text": "no id at all"}, "unknown bullet id"),
        ({"op": "delete", "id": "ace-a"}, "only add, modify and retire"),
        ({"op": "add", "text": ""}, "1-300 characters"),
        ({"op": "add", "text": "   "}, "1-300 characters"),
        ({"op": "add", "text": "x" * 301}, "1-300 characters"),
        ({"op": "add", "text": 42}, "1-300 characters"),
    ],
)
def test_a_bad_operation_is_refused_and_the_rest_goes_on(bad: dict[str, Any], reason: str) -> None:
    update = _observe(
        [_bullet("ace-a", FIRST_NAME)], {"operations": [bad, {"op": "add", "text": DISTINCT[3]}]}
    )
    assert len(update.refused) == 1
    assert reason in update.refused[0].reason
    assert [(op.op, op.unit.text) for op in update.ops] == [("add", DISTINCT[3])]


def test_an_unknown_bullet_id_in_a_tag_is_refused() -> None:
    revoked = _bullet("ace-old", DISTINCT[4], status="revoked")
    update = _observe(
        [_bullet("ace-a", FIRST_NAME), revoked],
        {
            "operations": [],
            "bullet_tags": [
                {"id": "ace-nope", "tag": "helpful"},
                {"id": "ace-old", "tag": "helpful"},
                {"id": "ace-a", "tag": "excellent"},
                {"id": "ace-a", "tag": "harmful"},
            ],
        },
    )
    reasons = [(r.what, r.reason) for r in update.refused]
    assert ("ace-nope", "unknown bullet id") in reasons
    assert ("ace-old", "unknown bullet id") in reasons  # a revoked bullet is not rendered
    assert any(what == "ace-a" and "unknown tag" in why for what, why in reasons)
    assert _labels(update) == [("count", "ace-a")]
    assert update.ops[0].unit.harmful == 1


@pytest.mark.parametrize(
    "reply",
    [
        "I think you should add a bullet about sign-offs.",
        "{'operations': []}",
        '["not", "an", "object"]',
        '{"operations": "add everything"}',
        '{"operations": ["add this"]}',
    ],
)
def test_a_bad_reply_is_refused_with_a_reason(reply: str) -> None:
    update = _observe([_bullet("ace-a", FIRST_NAME)], reply)
    assert update.ops == []
    assert update.refused and all(r.reason for r in update.refused)


def test_a_fenced_reply_is_accepted() -> None:
    reply = (
        'Sure:\n```json\n{"operations": [{"op": "add", "text": "Title notes in Title Case."}]}\n```'
    )
    update = _observe([], reply)
    assert [(op.op, op.unit.text) for op in update.ops] == [("add", "Title notes in Title Case.")]


def test_a_training_run_goes_on_through_bad_replies(workspace: Workspace, run_git: RunGit) -> None:
    head = workspace.store.head()
    report = train(workspace, recipe="ace", episodes=6, updater_llm=MockLLM(lambda m, s: "nope"))
    assert len(report.outcomes) == 6
    rejected = [o for o in report.outcomes if not o.accepted]
    assert rejected, "the sim agent with empty memory is rejected at least once"
    assert all(any("not valid JSON" in line for line in o.refused) for o in rejected)
    assert report.commits == [] and workspace.store.head() == head
    assert run_git(workspace.root, "status", "--porcelain") == ""


# --- ids ------------------------------------------------------------------------------------


def test_ids_are_opaque_and_never_a_hash_of_text_the_unit_no_longer_has() -> None:
    text = DISTINCT[0]
    one = _observe([], {"operations": [{"op": "add", "text": text}]}, episode=1).ops[0].unit
    two = _observe([], {"operations": [{"op": "add", "text": text}]}, episode=2).ops[0].unit
    assert one.id != two.id  # not derived from the text
    again = _observe([], {"operations": [{"op": "add", "text": text}]}, episode=1).ops[0].unit
    assert again.id == one.id  # deterministic for the run: reproducible
    for digest in (
        hashlib.md5(text.encode()).hexdigest(),
        hashlib.sha256(text.encode()).hexdigest(),
    ):
        assert digest[:6] not in one.id

    modified = _observe(
        [one],
        {
            "operations": [
                {"op": "modify", "id": one.id, "text": "Sign every text message with my initials."}
            ]
        },
        episode=3,
    )
    state = {u.id: u for u in _after([one], modified)}
    assert state[one.id].text == text  # the old id still names the old text ...
    assert state[one.id].status == "revoked"
    (new,) = [u for u in state.values() if u.status == "active"]
    assert new.id != one.id and new.text == "Sign every text message with my initials."


def test_the_prompt_shows_active_bullets_with_ids_and_the_complaint() -> None:
    units = [_bullet("ace-a", DISTINCT[0]), _bullet("ace-r", DISTINCT[1], status="revoked")]
    ctx = _ctx(units, {"operations": []})
    get_recipe("ace").observe(ctx)
    assert isinstance(ctx.llm, MockLLM)
    (call,) = ctx.llm.calls
    prompt = call.messages[-1].content
    assert f"[ace-a] {DISTINCT[0]}" in prompt
    assert DISTINCT[1] not in prompt
    assert "didn't end the way I sign my texts" in prompt
    assert call.json_schema is not None and call.temperature == 0.0


def test_another_users_bullets_are_not_the_playbook() -> None:
    blair = _bullet("ace-b", FIRST_NAME, scope="user:blair")
    update = _observe([blair], {"operations": [{"op": "add", "text": FIRST_NAME}]})
    assert [op.op for op in update.ops] == ["add"]
    assert update.ops[0].unit.scope == ALEX
