"""Selection and injection: b, the token budget, the hold-out, the model selector's reply."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evolve._triggers import words
from evolve.agent import build_system_prompt, section
from evolve.llm import Completion, JsonSchema, Message, Usage
from evolve.skills._select import (
    Skill,
    SkillPicker,
    lexical_matches,
    parse_selection,
    within_budget,
)

PAY = "Pay Sam Lee back $12.50 on Venmo for lunch."
TEXT = "Text Jordan Park to let them know: Dinner moved to 7pm."


def _skills(n: int, trigger: str = "sending a payment on Venmo") -> list[Skill]:
    return [Skill(f"s{i}", trigger, f"Lesson number {i}: do the thing.") for i in range(n)]


def test_words_stem_and_fold_synonyms() -> None:
    assert {"pay", "send"} <= words("Sending payments on Venmo")
    assert "text" in words("SMS messages") and "email" in words("an e-mail via Gmail")
    assert "the" not in words("the task")


def test_lexical_matches_only_triggers_sharing_a_word_best_first() -> None:
    pay = Skill("pay", "paying someone on venmo", "x")
    text = Skill("text", "texting a contact", "x")
    both = Skill("both", "paying or texting or emailing or saving notes", "x")
    assert lexical_matches(PAY, [text, both, pay]) == [pay, both]
    assert lexical_matches(TEXT, [pay, both, text]) == [text, both]
    assert lexical_matches("Make a note titled 'x'", [pay, text]) == []


@pytest.mark.parametrize("b", [0, 1, 2, 3, 5])
def test_selection_respects_b(b: int) -> None:
    picker = SkillPicker(_skills(8), max_injected=b, budget_tokens=10_000)
    picked = picker.pick(PAY, seed=1)
    assert len(picked.injected) == min(b, 8)
    assert len(picked.section.splitlines()) == min(b, 8)


def test_selection_respects_the_token_budget() -> None:
    skills = _skills(3)
    one = len(skills[0].line() + "\n")
    picker = SkillPicker(skills, max_injected=3, budget_tokens=(2 * one + 3) // 4)
    picked = picker.pick(PAY, seed=1)
    assert len(picked.injected) == 2
    assert len(picked.section) // 4 <= picker.budget_tokens
    # A line that does not fit is skipped; a shorter one after it still goes in.
    long = Skill("long", "pay", "word " * 400)
    assert [s.id for s in within_budget([long, skills[0]], 50)] == ["s0"]


def test_retired_and_inactive_skills_are_never_selected() -> None:
    active = Skill("a", "paying on venmo", "x")
    retired = Skill("r", "paying on venmo", "x", status="retired")
    from evolve.skills._select import skills_of

    class U:
        def __init__(self, s: Skill) -> None:
            self.id, self.kind, self.text, self.status = s.id, "skill", s.text, s.status
            self.trigger, self.shelf, self.topic = s.trigger, "general", None

    assert [s.id for s in skills_of([U(active), U(retired)])] == ["a"]


def test_held_out_skills_are_recorded_not_injected_and_not_replaced() -> None:
    skills = _skills(4)
    picker = SkillPicker(skills, max_injected=2, budget_tokens=10_000, holdout_share=0.5)
    seen_out = False
    for seed in range(40):
        picked = picker.pick(PAY, seed)
        assert not set(picked.injected) & set(picked.held_out)
        assert set(picked.injected) | set(picked.held_out) <= {"s0", "s1"}  # top b, no backfill
        for ident in picked.held_out:
            assert f"[{ident}]" not in picked.section
        seen_out |= bool(picked.held_out)
    assert seen_out


class _Selector:
    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.seen: list[Sequence[Message]] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.seen.append(messages)
        assert json_schema is not None and json_schema.name == "skill_selection"
        return Completion(text=self.reply, usage=Usage(1, 1), model=self.name)


def test_a_model_selector_reply_is_hostile_input() -> None:
    skills = _skills(4)
    reply = '{"skills": ["s2", "nope", "s2", 7, "s0", "s1", "s3"]}'
    selector = _Selector(reply)
    picker = SkillPicker(skills, max_injected=2, selector=selector)
    assert picker.pick(PAY, 3).injected == ("s2", "s0")
    assert "[s1] sending a payment on Venmo" in selector.seen[0][1].content
    for bad in ("not json", "[1, 2]", '{"skills": "s1"}', '{"other": []}'):
        assert parse_selection(bad, skills, 3) == []


@pytest.mark.parametrize(
    ("reply", "injected", "says"),
    [
        ('{"skills": ["s1"]}', ("s1",), None),
        ('{"skills": []}', (), None),  # "none applies" is an answer, not a fault
        ('{"skills": ["s1", "s1", "s0", "s2"]}', ("s1", "s0"), None),  # repeats, past b
        ('{"skills": ["s9", "s1", 7]}', ("s1",), "2 id(s) not among the candidates ('s9', '7')"),
        ("sure, use s1", (), "was not used"),
        ('{"skills": "s1"}', (), "has no `skills` list"),
        ('{"skills": ["s1\u2028"]}', (), "U+2028"),  # the whole reply is refused
    ],
)
def test_what_a_model_selectors_reply_loses_is_said_in_the_record(
    reply: str, injected: tuple[str, ...], says: str | None, tmp_path: Path
) -> None:
    picked = SkillPicker(_skills(3), max_injected=2, selector=_Selector(reply)).pick(PAY, 3)
    assert picked.injected == injected
    if says is None:
        assert picked.note == ""
    else:
        assert says in picked.note and "\n" not in picked.note and len(picked.note) <= 300


def test_the_prompt_gets_a_skills_section_only_when_skills_are_injected() -> None:
    plain = build_system_prompt((), api_docs="DOCS", memory="- m")
    assert build_system_prompt((), api_docs="DOCS", memory="- m", skills="  ") == plain
    with_skills = build_system_prompt(
        (), api_docs="DOCS", memory="- m", stats=["n = 1"], skills="[s1] when: do"
    )
    assert section(with_skills, "skills") == "[s1] when: do"
    assert with_skills.index("</memory>") < with_skills.index("<skills>")
    assert with_skills.index("</skills>") < with_skills.index("<stats>")


def _payment_episode(picker: SkillPicker | None = None, seed: int = 1) -> Any:
    """A sim episode of a persona_world payment task with `picker` choosing its skills: the
    task, and the episode's result (record and system prompt)."""
    from evolve.agent import read_prompt_files
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.episode import EpisodeSetup, run_episode
    from evolve.sim import SimLLM

    root = Path(__file__).resolve().parents[2]
    env = PersonaWorldEnv(root / "evalset")
    task = next(t for t in env.tasks("train") if t.kind == "payment")
    if picker is None:
        return task, None
    setup = EpisodeSetup(
        prompt_files=tuple(read_prompt_files(root / "prompts")),
        memory="",
        persona="alex",
        stats=True,
        max_turns=12,
        skills=picker,
    )
    return task, run_episode(
        env, SimLLM(env), task, setup, history=env.initial_history("alex"), seed=seed
    )


def test_episode_records_injected_and_held_out(tmp_path: Path) -> None:
    task, _ = _payment_episode()
    skills = [Skill("pay-a", "paying on venmo", "x"), Skill("pay-b", "venmo payment", "y")]
    seeds: dict[bool, int] = {}
    for seed in range(30):
        picked = SkillPicker(skills, holdout_share=0.5).pick(task.instruction, seed)
        seeds.setdefault(bool(picked.held_out), seed)
    for seed in seeds.values():
        _, result = _payment_episode(SkillPicker(skills, holdout_share=0.5), seed)
        picked = SkillPicker(skills, holdout_share=0.5).pick(task.instruction, seed)
        assert result.record.skills_injected == list(picked.injected)
        assert result.record.skills_held_out == list(picked.held_out)
        assert (section(result.system_prompt, "skills") or "") == picked.section
    assert set(seeds) == {True, False}


def test_an_episode_records_the_selectors_note(tmp_path: Path) -> None:
    notes = []
    for reply in ('{"skills": ["pay-a", "ghost"]}', '{"skills": ["pay-a"]}'):
        picker = SkillPicker([Skill("pay-a", "paying on venmo", "x")], selector=_Selector(reply))
        record = _payment_episode(picker)[1].record
        assert record.skills_injected == ["pay-a"]
        notes.append(record.model_dump(mode="json")["skills_note"])
    assert notes[0] is not None and "'ghost'" in notes[0] and notes[1] is None


def test_the_sim_selector_role_answers_what_the_lexical_matcher_picks() -> None:
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.sim import SimLLM

    env = PersonaWorldEnv(Path(__file__).resolve().parents[2] / "evalset")
    skills = [
        Skill("pay", "paying someone on venmo", "x"),
        Skill("text", "texting a contact", "x"),
        Skill("any", "paying, texting or emailing", "x"),
    ]
    by_model = SkillPicker(skills, max_injected=1, selector=SimLLM(env))
    lexical = SkillPicker(skills, max_injected=1)
    for task in (PAY, TEXT, "Make a note titled 'x'"):
        assert by_model.pick(task, 1).injected == lexical.pick(task, 1).injected
    assert SkillPicker(skills, max_injected=3, selector=SimLLM(env)).pick(PAY, 1).injected == (
        "pay",
        "any",
    )


def test_a_skill_without_trigger_applies_to_its_topic_or_to_every_task() -> None:
    from evolve.skills._select import skill_of

    class U:
        def __init__(self, ident: str, shelf: str, topic: str | None) -> None:
            self.id, self.kind, self.text, self.status = ident, "skill", "Be careful.", "active"
            self.trigger, self.shelf, self.topic = None, shelf, topic

    venmo, anywhere = skill_of(U("v", "topic", "venmo")), skill_of(U("g", "general", None))
    assert venmo is not None and anywhere is not None
    pay_skill = Skill("pay", "paying someone", "x")
    assert lexical_matches(PAY, [anywhere, venmo, pay_skill]) == [venmo, pay_skill, anywhere]
    assert lexical_matches(TEXT, [anywhere, venmo, pay_skill]) == [anywhere]
    assert anywhere.line() == "[g] Be careful."


def test_make_picker_reads_the_config_and_builds_the_selector_role(tmp_path: Path) -> None:
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.skills._select import make_picker
    from evolve.workspace import parse_config

    env = PersonaWorldEnv(Path(__file__).resolve().parents[2] / "evalset")
    off = parse_config("persona: alex\n")
    assert make_picker(off, [], training=True, env=env) is None
    on = parse_config(
        "skills: {enabled: true, max_injected: 2, budget_tokens: 50, holdout_share: 0.3}\n"
        "models: {selector: sim}\n"
    )
    train = make_picker(on, [], training=True, env=env)
    assert train is not None and train.selector is not None and train.selector.name == "sim"
    assert (train.max_injected, train.budget_tokens, train.holdout_share) == (2, 50, 0.3)
    evaluation = make_picker(on, [], training=False, env=env)
    assert evaluation is not None and evaluation.holdout_share == 0.0
    by_recipe = make_picker(parse_config("train: {recipe: skills}\n"), [], training=False)
    assert by_recipe is not None and by_recipe.selector is None  # lexical by default


def test_a_run_given_the_skills_recipe_injects_whatever_the_file_says() -> None:
    from evolve.skills._select import make_picker
    from evolve.workspace import parse_config

    config = parse_config("train: {recipe: ace}\n")
    assert make_picker(config, [], training=True) is None
    assert make_picker(config, [], training=True, recipe="skills") is not None


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["paying on venmo", "texting", "any write", "", "note saving"]),
            st.text(min_size=1, max_size=300),
        ),
        max_size=12,
    ),
    st.integers(0, 6),
    st.integers(0, 200),
    st.floats(0.0, 1.0),
    st.integers(0, 2**31),
)
def test_selection_never_exceeds_b_or_the_budget(
    specs: list[tuple[str, str]], b: int, budget: int, share: float, seed: int
) -> None:
    from evolve.llm import estimate_tokens

    skills = [Skill(f"s{i}", trigger, text) for i, (trigger, text) in enumerate(specs)]
    picker = SkillPicker(skills, max_injected=b, budget_tokens=budget, holdout_share=share)
    picked = picker.pick(PAY, seed)
    assert len(picked.injected) + len(picked.held_out) <= b
    assert not set(picked.injected) & set(picked.held_out)
    lines = picked.section.splitlines() if picked.section else []
    assert sum(estimate_tokens(line + "\n") for line in lines) <= budget or not lines
    assert len(lines) >= len(picked.injected)
