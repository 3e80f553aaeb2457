"""Adversarial review of selection's evidence order (issue 13): the model selector's candidate
order against the lexical matcher's tie order, and evidence a caller gives that is not finite.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evolve._triggers import rank_triggers
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.sim import SimLLM
from evolve.skills._select import Skill, SkillPicker, by_evidence

PAY = "Pay Sam Lee back $12.50 on Venmo for lunch."
STATE = "a venmo task that changes stored state (pay, payment, venmo)"
EVALSET = Path(__file__).resolve().parents[2] / "evalset"


def _skills(*ids: str) -> list[Skill]:
    return [Skill(i, STATE, f"Lesson {i}.") for i in ids]


def test_the_model_selector_sees_no_evidence_before_a_measured_zero() -> None:
    """The lexical tie order puts a skill with no evidence yet before one measured at exactly 0
    (it gets the slot and earns evidence); the model selector's candidate lines must be in
    that same order, or `selector: sim` (which takes the first line shown in a tie) picks
    the measured-0 skill where the lexical matcher picks the new one."""
    ev = {"a-measured": 0.0}
    skills = _skills("a-measured", "b-new")
    assert rank_triggers(PAY, [(s.id, s.trigger) for s in skills], ev) == ["b-new", "a-measured"]
    assert [s.id for s in by_evidence(skills, ev)] == ["b-new", "a-measured"]
    env = PersonaWorldEnv(EVALSET)
    lexical = SkillPicker(skills, max_injected=1, evidence=ev).pick(PAY, 0).injected
    by_model = SkillPicker(skills, max_injected=1, evidence=ev, selector=SimLLM(env)).pick(PAY, 0)
    assert lexical == ("b-new",)
    assert by_model.injected == lexical


def test_non_finite_evidence_is_no_evidence_in_both_orders() -> None:
    """A caller's NaN or infinite evidence counts as none (as `rank_triggers` documents): it
    neither sorts by the float's accident (NaN compares false both ways) nor as a measured 0."""
    ev = {"a-nan": float("nan"), "b-zero": 0.0, "c-inf": float("inf")}
    skills = _skills("c-inf", "b-zero", "a-nan", "d-new")
    expected = ["a-nan", "c-inf", "d-new", "b-zero"]  # no evidence (by id), then measured 0
    assert rank_triggers(PAY, [(s.id, s.trigger) for s in skills], ev) == expected
    assert [s.id for s in by_evidence(skills, ev)] == expected
    assert [s.id for s in by_evidence(list(reversed(skills)), ev)] == expected


_TRIGGERS = st.sampled_from(
    ["paying on venmo", STATE, "texting a contact", "", "saving a note", "an email with a total"]
)
_EVIDENCE = st.one_of(st.none(), st.sampled_from([-1.0, -0.25, 0.0, 0.0, 0.5, 1.0]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_TRIGGERS, _EVIDENCE), min_size=1, max_size=8),
    st.integers(1, 4),
    st.sampled_from([PAY, "Text Dana that the note is saved.", "Email the total to Kim."]),
)
def test_the_sim_selector_picks_what_the_lexical_matcher_picks(
    specs: list[tuple[str, float | None]], b: int, task: str
) -> None:
    """`selector: sim` reads the candidate lines in the order shown and takes the first in a
    tie: with the picker's evidence order it must pick what `lexical` picks, for any library,
    any evidence (none, measured 0, ties) and any `b`."""
    skills = [Skill(f"s{i}", trigger, f"Lesson {i}.") for i, (trigger, _) in enumerate(specs)]
    ev = {f"s{i}": v for i, (_, v) in enumerate(specs) if v is not None}
    lexical = SkillPicker(skills, max_injected=b, evidence=ev).pick(task, 0).injected
    by_model = SkillPicker(skills, max_injected=b, evidence=ev, selector=_SIM).pick(task, 0)
    assert by_model.injected == lexical


_SIM = SimLLM(PersonaWorldEnv(EVALSET))
