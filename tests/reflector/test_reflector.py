"""The reflector: what it asks, how it reads a reply, and the sim's `reflector_edits` role."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from evolve.agent import section
from evolve.envs.persona_world import recognize
from evolve.evaluate import open_env
from evolve.llm import JsonSchema, Message, MockLLM
from evolve.reflector import PromptProposal, Reflector, summarize_failures
from evolve.sim import SimLLM, proposals_from_complaint
from evolve.sim._roles import GENERIC_ADVICE
from evolve.workspace import Workspace

PARAMS = {"agent.max_turns": (4.0, 30.0)}
SIGNOFF = "My text to Priya Nair didn't end with my usual sign-off."
GREETING = "My text to Omar Haddad didn't open the way I greet people."
# Instance lines that show their value (docs/sim.md, "What each tier can teach").
VISIBILITY = "My payment to Sam Lee was public, visible to more people than I wanted."
CC = "I didn't get a copy of my email to Priya Nair."


def _propose(
    reply: str, failures: Sequence[str] = (SIGNOFF,), guidance: Sequence[str] = ()
) -> tuple[PromptProposal, MockLLM]:
    llm = MockLLM([reply])
    proposal = Reflector(llm).propose(
        failures,
        guidance,
        parameters=PARAMS,
        max_chars=6000,
        seed=11,
    )
    return proposal, llm


def test_a_reply_is_read_into_guidance_edits_and_parameters() -> None:
    reply = json.dumps(
        {
            "guidance": ["Sign off texts with a dash and my first name."],
            "edits": [{"path": "prompts/style.md", "content": "Be brief.\n"}],
            "parameters": {"agent.max_turns": 8},
        }
    )
    proposal, _ = _propose(f"Here you go:\n```json\n{reply}\n```\n")
    assert proposal.guidance == ["Sign off texts with a dash and my first name."]
    assert proposal.edits == [{"path": "prompts/style.md", "content": "Be brief.\n"}]
    assert proposal.parameters == {"agent.max_turns": 8}
    assert proposal.refused == []


def test_the_request_uses_the_reflector_schema_at_temperature_zero_with_the_seed() -> None:
    _, llm = _propose('{"guidance": []}')
    [call] = llm.calls
    assert call.json_schema is not None and call.json_schema.name == "reflector_edits"
    assert call.temperature == 0.0
    assert call.seed == 11
    assert [m.role for m in call.messages] == ["system", "user"]


def test_the_prompt_shows_counted_failures_the_current_guidance_ranges_and_cap() -> None:
    _, llm = _propose(
        '{"guidance": []}',
        failures=[SIGNOFF, GREETING, SIGNOFF, "  ", SIGNOFF],
        guidance=["Pay friends-only."],
    )
    prompt = llm.calls[0].messages[-1].content
    failures = section(prompt, "failures")
    assert failures == f"3x {SIGNOFF}\n1x {GREETING}"
    assert section(prompt, "guidance") == "- Pay friends-only."
    assert "agent.max_turns in [4, 30]" in prompt
    assert "under 6000 characters" in prompt
    assert "$" not in prompt  # every template field was filled


def test_no_guidance_key_means_no_guidance_change_and_an_empty_list_clears_it() -> None:
    proposal, _ = _propose('{"parameters": {"agent.max_turns": 6}}')
    assert proposal.guidance is None
    proposal, _ = _propose('{"guidance": []}')
    assert proposal.guidance == []


@pytest.mark.parametrize(
    ("reply", "op", "reason"),
    [
        ("I think you should be nicer.", "reply", "not valid JSON"),
        ('["a", "b"]', "reply", "not a JSON object"),
        ('{"guidance": "be nicer"}', "guidance", "must be a list of text"),
    ],
)
def test_an_unusable_reply_is_refused_with_a_reason(reply: str, op: str, reason: str) -> None:
    proposal, _ = _propose(reply)
    assert proposal.guidance is None
    assert proposal.edits == [] and proposal.parameters == {}
    [refusal] = proposal.refused
    assert refusal.op == op
    assert reason in refusal.reason


def test_unknown_fields_are_refused_but_the_rest_is_kept() -> None:
    proposal, _ = _propose('{"guidance": ["Be brief."], "gate": {"min_gain": -1}}')
    assert proposal.guidance == ["Be brief."]
    [refusal] = proposal.refused
    assert refusal.op == "reply" and "gate" in refusal.what
    assert refusal.reason == "unknown fields"


def test_malformed_items_are_dropped() -> None:
    proposal, _ = _propose(
        '{"guidance": ["ok", 3, null], "edits": ["prompts/x.md", {"path": "prompts/y.md",'
        ' "content": "y"}], "parameters": ["agent.max_turns", 8]}'
    )
    assert proposal.guidance == ["ok"]
    assert proposal.edits == [{"path": "prompts/y.md", "content": "y"}]
    assert proposal.parameters == {}
    # ... and each dropped part is a logged refusal, never a silent "no change".
    reasons = [(r.op, r.reason) for r in proposal.refused]
    assert reasons == [
        ("guidance", "a guidance line must be text"),
        ("guidance", "a guidance line must be text"),
        ("edit", "an edit must be an object with a text 'path' and 'content'"),
        ("parameter", "'parameters' must be an object"),
    ]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("{}", "none of 'guidance', 'edits' or 'parameters'"),
        ('{"thoughts": "all good"}', "none of 'guidance', 'edits' or 'parameters'"),
        ('{"edits": "prompts/x.md"}', "'edits' must be a list of objects"),
        ('{"edits": [{"path": 5, "content": "x"}]}', "text 'path' and 'content'"),
        (r'{"guidance": ["a\u001fb"]}', "U+001F"),
        ('{"guidance": ["a\x1fb"]}', "Invalid control character"),
        (r'{"guidance": ["\ud800"]}', "U+D800"),
        ("[" * 3000 + "]" * 3000, "deeper than"),
        ('{"parameters": {"agent.max_turns": NaN}}', "not a JSON number"),
    ],
)
def test_every_wrong_shaped_reply_is_a_logged_refusal(reply: str, reason: str) -> None:
    proposal, _ = _propose(reply)
    assert any(reason in r.reason for r in proposal.refused), proposal.refused
    assert not proposal.edits and not proposal.guidance


def test_refused_fragments_are_escaped_and_redacted() -> None:
    key = "sk-proj-Q7x2Lm9Vb4Nc8Rt1Ws6Yz3Kp0Hd5Jf"
    proposal, _ = _propose(f"no json here \x1f {key}")
    [refusal] = proposal.refused
    assert key not in refusal.line() and "\x1f" not in refusal.what
    proposal, _ = _propose(json.dumps({"guidance": [f"Use {key} for calls."]}))
    assert proposal.guidance == ["Use <redacted> for calls."]


def test_summarize_failures_counts_and_orders_by_frequency() -> None:
    lines = ["b", "a", "b", " c ", "b", "a", ""]
    assert summarize_failures(lines) == "3x b\n2x a\n1x c"
    assert summarize_failures(lines, limit=1) == "3x b"
    assert summarize_failures([]) == "(none)"
    assert summarize_failures(["", "  "]) == "(none)"


# --- the sim's reflector_edits role ------------------------------------------------------------


def _sim_guidance(
    sim: SimLLM, current: Sequence[str], seed: int, failures: Sequence[str] = (VISIBILITY, CC)
) -> list[str]:
    proposal = Reflector(sim).propose(
        [failures[0], *failures], current, parameters=PARAMS, max_chars=6000, seed=seed
    )
    assert proposal.refused == []
    assert proposal.guidance is not None
    return proposal.guidance


def test_the_sim_reflector_is_deterministic_for_a_seed(workspace: Workspace) -> None:
    sim = SimLLM(open_env(workspace))
    for seed in range(6):
        assert _sim_guidance(sim, ["Pay friends-only."], seed) == _sim_guidance(
            SimLLM(open_env(workspace)), ["Pay friends-only."], seed
        )


def test_the_sim_reflector_sometimes_helps_and_sometimes_offers_generic_advice(
    workspace: Workspace,
) -> None:
    sim = SimLLM(open_env(workspace))
    current = ["Pay with the card I use most often."]
    statements = {p.statement for text in (VISIBILITY, CC) for p in proposals_from_complaint(text)}
    assert len(statements) == 2 and all(recognize(s) for s in statements)
    helpful = generic = 0
    for seed in range(24):
        lines = _sim_guidance(sim, current, seed)
        # The reply replaces the whole block: it restates the current guidance first.
        assert lines[: len(current)] == current
        added = lines[len(current) :]
        assert added
        if set(added) <= statements:
            helpful += 1
        else:
            assert len(added) == 1 and added[0] in GENERIC_ADVICE
            generic += 1
    assert helpful > 0 and generic > 0


def test_the_sim_reflector_states_no_value_a_failure_does_not_show(workspace: Workspace) -> None:
    """Sign-off and greeting complaints name no value: the sim reflector never turns them into
    guidance (it adds nothing, or generic advice)."""
    sim = SimLLM(open_env(workspace))
    for seed in range(24):
        lines = _sim_guidance(sim, [], seed, failures=(SIGNOFF, GREETING))
        assert all(line in GENERIC_ADVICE for line in lines), lines
        assert not any(recognize(line) for line in lines)


def test_the_sim_answers_the_reflector_schema_directly(workspace: Workspace) -> None:
    sim = SimLLM(open_env(workspace))
    prompt = "<failures>\n2x " + CC + "\n</failures>\n<guidance>\n(empty)\n</guidance>\n"
    replies = {
        sim.complete(
            [Message("user", prompt)], json_schema=JsonSchema("reflector_edits", {}), seed=seed
        ).text
        for seed in range(10)
    }
    parsed = [json.loads(r) for r in replies]
    assert all(set(p) == {"guidance"} for p in parsed)
    assert any(p["guidance"] and p["guidance"][0] == "CC me on every email I send." for p in parsed)
