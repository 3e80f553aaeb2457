"""The environment's data: frozen, family-disjoint splits, personas with drift, history, stats."""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from evolve.envs import SPLITS, Task, make_env
from evolve.envs.persona_world import (
    CONTACTS_BY_KEY,
    FAMILIES,
    RULES_BY_NAME,
    History,
    Payment,
    PersonaWorldEnv,
    note_checksum,
)
from evolve.errors import ConfigError, UnknownName

REPO = Path(__file__).resolve().parents[2]
EVALSET = REPO / "evalset"


@pytest.fixture(scope="module")
def env() -> PersonaWorldEnv:
    return PersonaWorldEnv(EVALSET)


def _all(env: PersonaWorldEnv) -> list[Task]:
    return [t for split in SPLITS for t in env.tasks(split)]


# --- sizes -----------------------------------------------------------------------------


def test_sizes(env: PersonaWorldEnv) -> None:
    tasks = _all(env)
    assert len(tasks) >= 40
    assert len({t.family for t in tasks}) >= 6
    assert len(env.personas()) >= 5
    assert len(env.rule_names()) >= 12
    assert len(set(env.rule_names())) == len(env.rule_names())


def test_make_env_opens_persona_world() -> None:
    opened = make_env("persona_world", EVALSET)
    assert isinstance(opened, PersonaWorldEnv) and opened.name == "persona_world"
    from evolve.envs.appworld import AppWorldEnv

    assert isinstance(make_env("appworld", EVALSET), AppWorldEnv)  # opens lazily (issue 12)
    with pytest.raises(UnknownName):
        make_env("nope", EVALSET)


# --- splits ----------------------------------------------------------------------------


def test_splits_are_the_frozen_file(env: PersonaWorldEnv) -> None:
    frozen = yaml.safe_load((EVALSET / "splits.yaml").read_text(encoding="utf-8"))
    assert set(frozen) == set(SPLITS)
    for split in SPLITS:
        assert {t.id for t in env.tasks(split)} == set(frozen[split])
        assert all(t.split == split for t in env.tasks(split))


def test_splits_are_stable_across_loads(env: PersonaWorldEnv) -> None:
    again = PersonaWorldEnv(EVALSET)
    for split in SPLITS:
        assert again.tasks(split) == env.tasks(split)


def test_tasks_are_frozen(env: PersonaWorldEnv) -> None:
    task = env.tasks("train")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.split = "holdout"  # type: ignore[misc]


def test_splits_are_family_disjoint_and_cover_every_kind(env: PersonaWorldEnv) -> None:
    families = {split: {t.family for t in env.tasks(split)} for split in SPLITS}
    assert families["train"].isdisjoint(families["dev"])
    assert families["train"].isdisjoint(families["holdout"])
    assert families["dev"].isdisjoint(families["holdout"])
    for split in SPLITS:
        assert {t.kind for t in env.tasks(split)} == {"sms", "payment", "note", "email"}


def test_task_ids_and_instructions_are_unique(env: PersonaWorldEnv) -> None:
    tasks = _all(env)
    assert len({t.id for t in tasks}) == len(tasks)
    assert len({t.instruction for t in tasks}) == len(tasks)
    for task in tasks:
        assert env.task(task.id) == task
        assert env.task_by_instruction(f"  {task.instruction}\n") == task
    assert env.task_by_instruction("Do something else.") is None


def test_every_family_is_used_and_kinds_match(env: PersonaWorldEnv) -> None:
    kind_of = {f.name: f.kind for f in FAMILIES}
    tasks = _all(env)
    assert {t.family for t in tasks} == set(kind_of)
    assert all(t.kind == kind_of[t.family] for t in tasks)


def test_instructions_name_the_contact_and_parameters(env: PersonaWorldEnv) -> None:
    for task in _all(env):
        contact = task.params.get("contact")
        if contact is not None:
            assert CONTACTS_BY_KEY[contact].name in task.instruction
        if "items" in task.params:
            assert all(item in task.instruction for item in task.params["items"])
        if "amount" in task.params:
            assert f"${float(task.params['amount']):.2f}" in task.instruction


def test_unknown_names_are_refused(env: PersonaWorldEnv) -> None:
    with pytest.raises(UnknownName):
        env.tasks("test")  # type: ignore[arg-type]
    with pytest.raises(UnknownName):
        env.task("no-such-task")
    with pytest.raises(UnknownName):
        env.persona("zed")


def _copy_evalset(tmp_path: Path) -> Path:
    target = tmp_path / "evalset"
    shutil.copytree(EVALSET, target)
    return target


def test_a_task_in_two_splits_is_refused(tmp_path: Path) -> None:
    evalset = _copy_evalset(tmp_path)
    splits = yaml.safe_load((evalset / "splits.yaml").read_text(encoding="utf-8"))
    splits["dev"].append(splits["train"][0])
    (evalset / "splits.yaml").write_text(yaml.safe_dump(splits), encoding="utf-8")
    with pytest.raises(ConfigError, match="both"):
        PersonaWorldEnv(evalset)


def test_a_split_naming_a_missing_task_is_refused(tmp_path: Path) -> None:
    evalset = _copy_evalset(tmp_path)
    splits = yaml.safe_load((evalset / "splits.yaml").read_text(encoding="utf-8"))
    splits["holdout"].append("ghost-1")
    (evalset / "splits.yaml").write_text(yaml.safe_dump(splits), encoding="utf-8")
    with pytest.raises(ConfigError, match="ghost-1"):
        PersonaWorldEnv(evalset)


def test_a_persona_with_an_unknown_rule_is_refused(tmp_path: Path) -> None:
    evalset = _copy_evalset(tmp_path)
    path = evalset / "personas" / "alex.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["preferences"].append({"rule": "sms_emoji", "value": "x"})
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="alex.yaml"):
        PersonaWorldEnv(evalset)


# --- personas and drift ----------------------------------------------------------------


def test_personas_hold_known_rules(env: PersonaWorldEnv) -> None:
    for name in env.personas():
        rules = env.persona_rules(name)
        assert rules and len(set(rules)) == len(rules)
        assert set(rules) <= set(RULES_BY_NAME)


def test_at_least_two_personas_drift(env: PersonaWorldEnv) -> None:
    drifting = {
        name for name in env.personas() if any(p.changes for p in env.persona(name).preferences)
    }
    assert len(drifting) >= 2


def test_drift_value_before_at_and_after_the_change(env: PersonaWorldEnv) -> None:
    seen = 0
    for name in env.personas():
        for pref in env.persona(name).preferences:
            if not pref.changes:
                assert pref.value_at(0) == pref.value_at(None) == pref.value_at(1000)
                continue
            previous = pref.value_at(0)
            for change in sorted(pref.changes, key=lambda c: c.at_episode):
                assert pref.value_at(change.at_episode - 1) == previous
                assert pref.value_at(change.at_episode) == change.value
                assert change.value != previous
                previous = change.value
                seen += 1
            assert pref.value_at(None) == previous  # None: after every change
    assert seen >= 2


@pytest.mark.parametrize(
    ("persona", "rule", "at", "before", "after"),
    [
        ("alex", "payment_visibility", 12, "private", "friends"),
        ("casey", "email_signoff", 15, "Cheers", "Warmly"),
    ],
)
def test_shipped_drifts(
    env: PersonaWorldEnv, persona: str, rule: str, at: int, before: str, after: str
) -> None:
    pref = next(p for p in env.persona(persona).preferences if p.rule == rule)
    assert (pref.value_at(at - 1), pref.value_at(at), pref.value_at(None)) == (
        before,
        after,
        after,
    )
    statement_before = RULES_BY_NAME[rule].statement(before)
    statement_after = RULES_BY_NAME[rule].statement(after)
    assert statement_before in env.oracle_statements(persona, at - 1)
    assert statement_after not in env.oracle_statements(persona, at - 1)
    assert statement_after in env.oracle_statements(persona, at)
    assert statement_after in env.oracle_statements(persona, None)


def test_oracle_statements_one_per_preference(env: PersonaWorldEnv) -> None:
    for name in env.personas():
        statements = env.oracle_statements(name, None)
        assert len(statements) == len(env.persona_rules(name))
        assert len(set(statements)) == len(statements)


# --- history ---------------------------------------------------------------------------


def test_initial_history_is_the_persona_file(env: PersonaWorldEnv) -> None:
    data = yaml.safe_load((EVALSET / "personas" / "blair.yaml").read_text(encoding="utf-8"))
    expected = tuple(Payment(h["contact"], float(h["amount"]), h["card"]) for h in data["history"])
    assert env.initial_history("blair") == History(expected)


def test_advance_history_appends_only_for_payments(env: PersonaWorldEnv) -> None:
    history = env.initial_history("alex")
    for task in _all(env):
        after = env.advance_history(history, task, "alex", 3)
        if task.kind != "payment":
            assert after == history
            continue
        assert after.payments[:-1] == history.payments
        last = after.payments[-1]
        assert last.contact == task.params["contact"]
        assert last.amount == float(task.params["amount"])
        assert last.card == 1002  # alex's most used card: Amex ending 1005, used 4 times of 7
    assert len(history.payments) == 7  # the input is never changed


def test_advance_history_accumulates(env: PersonaWorldEnv) -> None:
    payments = [t for t in _all(env) if t.kind == "payment"][:3]
    history = env.initial_history("dana")
    for episode, task in enumerate(payments):
        history = env.advance_history(history, task, "dana", episode)
    assert len(history.payments) == 3 + 3
    assert [p.contact for p in history.payments[3:]] == [t.params["contact"] for t in payments]


def test_advance_history_with_no_history_uses_the_first_card(env: PersonaWorldEnv) -> None:
    task = next(t for t in _all(env) if t.kind == "payment")
    after = env.advance_history(History(()), task, "emery", 0)
    assert after.payments == (Payment(task.params["contact"], float(task.params["amount"]), 5001),)


# --- stats -----------------------------------------------------------------------------


def test_stats_for_a_payment(env: PersonaWorldEnv) -> None:
    task = next(t for t in _all(env) if t.kind == "payment")
    history = env.initial_history("alex")
    lines = env.stats(task, "alex", history)
    counts = Counter(p.card for p in history.payments)
    assert counts == {1002: 4, 1001: 2, 1003: 1}
    assert lines[0] == (
        "Payment cards used so far: Visa ending 4242 x2, Amex ending 1005 x4, "
        "Mastercard ending 7731 x1; most used: Amex ending 1005 (payment_card_id 1002)."
    )
    contact = task.params["contact"]
    paid = sum(p.amount for p in history.payments if p.contact == contact)
    assert lines[1] == (
        f"Paid so far to {CONTACTS_BY_KEY[contact].name}: ${paid:.2f} (before this payment)."
    )
    assert len(lines) == 2


def test_stats_for_a_payment_with_no_history(env: PersonaWorldEnv) -> None:
    task = next(t for t in _all(env) if t.kind == "payment")
    lines = env.stats(task, "alex", History(()))
    name = CONTACTS_BY_KEY[task.params["contact"]].name
    assert lines == [f"Paid so far to {name}: $0.00 (before this payment)."]


def test_stats_for_a_note_and_for_texts_and_emails(env: PersonaWorldEnv) -> None:
    for task in _all(env):
        lines = env.stats(task, "blair", env.initial_history("blair"))
        if task.kind == "note":
            total = sum(len(item) for item in task.params["items"])
            assert total == note_checksum(task.params["items"])
            assert lines == [f"Checksum of this note's items: {total}."]
        elif task.kind in ("sms", "email"):
            assert lines == []


def test_stats_lines_are_not_read_as_directives_by_the_sim(env: PersonaWorldEnv) -> None:
    """Stats are facts: the sim reads directives from the prompt with <stats> cut out."""
    from evolve.agent import build_system_prompt
    from evolve.sim import read_directives, read_stats

    for name in env.personas():
        for task in _all(env):
            if task.kind not in ("payment", "note"):
                continue
            history = env.initial_history(name)
            lines = env.stats(task, name, history)
            prompt = build_system_prompt((), api_docs="", memory="", stats=lines)
            assert read_directives(prompt) == {}
            stats = read_stats(prompt)
            if task.kind == "note":
                assert stats.checksum == note_checksum(task.params["items"])
            else:
                contact = task.params["contact"]
                paid = sum(p.amount for p in history.payments if p.contact == contact)
                assert stats.paid_before == pytest.approx(paid)
                assert stats.habitual_card in {c.id for c in env.persona(name).cards}
