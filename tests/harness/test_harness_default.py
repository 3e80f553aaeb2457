"""The default harness is evolve's agent as it was: the prompt byte for byte, the episode
call for call; `prompts/harness.yaml` selects built-in variants and refuses everything else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evolve.agent import ModelAgent, PromptFile, build_system_prompt, read_prompt_files
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.episode import EpisodeSetup, run_episode
from evolve.errors import ConfigError
from evolve.harness import (
    BUILTINS,
    DEFAULT_HARNESS,
    DEFAULTS,
    HARNESS_FILE,
    MODULES,
    HarnessAgent,
    TaskView,
    build_harness,
    dump_choice,
    load_harness,
    parse_choice,
)
from evolve.sim import SimLLM

REPO = Path(__file__).resolve().parents[2]
ENV = PersonaWorldEnv(REPO / "evalset")
PROMPTS: tuple[PromptFile, ...] = tuple(read_prompt_files(REPO / "prompts"))
TASKS = [t for split in ("train", "dev", "holdout") for t in ENV.tasks(split)]
SKILLS = "[sk-1] when texting: look up the contact first.\n[sk-2] always: confirm the result."


def _memories(persona: str) -> list[str]:
    oracle = ENV.oracle_statements(persona, None)
    return [
        "",
        "\n".join(f"- {s}" for s in oracle),
        "\n".join(f"[ace-{i:010x}] {s}" for i, s in enumerate(oracle)),
        "  \n[note] a hand note\n\n",
    ]


def test_the_default_harness_renders_every_prompt_byte_for_byte() -> None:
    """Every task of every split, every persona, several memories, with and without stats,
    skills and a retry's note: the harness layer changes no byte of the prompt."""
    checked = 0
    for persona in ENV.personas():
        history = ENV.initial_history(persona)
        for memory in _memories(persona):
            for task in TASKS:
                stats = ENV.stats(task, persona, history)
                for skills, note in (("", ""), (SKILLS, ""), ("", "Your previous attempt: x")):
                    merged = memory if not note else f"{memory}\n{note}".strip()
                    before = build_system_prompt(
                        PROMPTS, api_docs=ENV.api_docs(), memory=merged, stats=stats,
                        skills=skills,
                    )  # fmt: skip
                    after = DEFAULT_HARNESS.system_prompt(
                        [f.text for f in PROMPTS], api_docs=ENV.api_docs(), tools=ENV.tools(),
                        memory=memory, note=note, stats=stats, skills=skills,
                        task=TaskView(task.id, task.instruction),
                    )  # fmt: skip
                    assert after == before, (persona, task.id)
                    checked += 1
    assert checked > 1000


def _records(agent: str, persona: str, memory: str) -> list[dict[str, object]]:
    llm = SimLLM(ENV)
    out = []
    for task in ENV.tasks("dev"):
        base = EpisodeSetup(PROMPTS, memory, persona, True, 12)
        setup = {
            "model": dataclasses.replace(base, agent=ModelAgent(llm)),
            "default": base,
            "loaded": dataclasses.replace(base, harness=load_harness(REPO)),
        }[agent]
        history = ENV.initial_history(persona)
        for seed in (0, 1, 2):
            result = run_episode(ENV, llm, task, setup, history=history, seed=seed)
            record = result.record.model_dump()
            record.pop("duration_s")
            out.append({**record, "system": result.system_prompt})
    return out


@pytest.mark.parametrize("persona", ["alex", "blair"])
def test_episodes_through_the_default_harness_are_those_of_the_model_agent(persona: str) -> None:
    memory = "\n".join(f"- {s}" for s in ENV.oracle_statements(persona, None))
    by_model = _records("model", persona, memory)
    assert _records("default", persona, memory) == by_model
    assert _records("loaded", persona, memory) == by_model  # no harness file: the defaults
    assert any(r["violations"] for r in by_model)  # lapses and computed misses happened


def test_the_default_agent_is_assembled_from_the_harness() -> None:
    agent = DEFAULT_HARNESS.agent(SimLLM(ENV))
    assert isinstance(agent, HarnessAgent) and agent.name == "sim"
    assert DEFAULT_HARNESS.names() == dict(DEFAULTS)
    assert DEFAULTS == {
        "tools": "plain",
        "context": "full",
        "skills": "picked",
        "memory": "all",
        "workflow": "act",
    }


# --- prompts/harness.yaml -------------------------------------------------------------------


def _write(root: Path, text: str) -> Path:
    (root / "prompts").mkdir(exist_ok=True)
    (root / HARNESS_FILE).write_text(text, encoding="utf-8")
    return root


def test_every_builtin_variant_is_selected_by_name(tmp_path: Path) -> None:
    assert all(len(BUILTINS[m]) >= 3 for m in MODULES)  # the default and two alternatives
    for module in MODULES:
        for name, variant in BUILTINS[module].items():
            harness = load_harness(_write(tmp_path, f"{module}: {name}\n"))
            assert harness.names() == {**DEFAULTS, module: name}
            assert isinstance(getattr(harness, module), type(variant.make()))


def test_no_file_and_an_empty_file_are_the_defaults(tmp_path: Path) -> None:
    assert load_harness(tmp_path) is DEFAULT_HARNESS
    assert load_harness(_write(tmp_path, "# nothing chosen\n")).names() == dict(DEFAULTS)


def test_parameters_are_checked_and_given_to_the_variant(tmp_path: Path) -> None:
    text = "version: 1\ncontext: {variant: budget_fifo, budget_tokens: 40}\nmemory: {variant: topk_similar, k: 2}\n"
    harness = load_harness(_write(tmp_path, text))
    assert harness.context == BUILTINS["context"]["budget_fifo"].make(budget_tokens=40)
    assert harness.memory == BUILTINS["memory"]["topk_similar"].make(k=2)
    assert harness.choice["memory"] == ("topk_similar", {"k": 2})


def test_the_canonical_text_reads_back_as_the_same_choice() -> None:
    choice = parse_choice(
        "workflow: verify_first\ncontext: {variant: budget_relevance, budget_tokens: 9}\n"
    )
    text = dump_choice(choice)
    assert parse_choice(text) == choice
    assert "context: {variant: budget_relevance, budget_tokens: 9}\n" in text
    assert build_harness(choice).names()["workflow"] == "verify_first"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tools: nope\n", "tools has no variant 'nope'; the built-ins are plain, compact_docs"),
        ("toolz: plain\n", "names the module 'toolz'; the modules are tools, context"),
        ("workflow: ../../evil\n", "workflow must name a variant"),
        ("workflow: 3\n", "workflow must name a variant"),
        ("memory: {variant: topk_similar, k: 0}\n", "k is 0; it must be between 1 and 1000"),
        ("memory: {variant: topk_similar, k: true}\n", "k must be a whole number"),
        ("memory: {variant: all, k: 2}\n", "all has no parameter 'k' (its parameters: none)"),
        ("version: 2\n", "has version 2; this evolve reads 1"),
        ("- tools\n", "must map module names to variant names"),
        ("tools: [unclosed\n", "is not valid YAML"),
        ("tools: plain\ntools: plain\n", "gives the key 'tools' twice"),
    ],
)
def test_a_bad_harness_file_is_one_sentence(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_harness(_write(tmp_path, text))
    assert says in str(err.value)
    assert str(err.value).count(". ") <= 1


def test_a_workspace_variant_file_is_refused_until_a_person_approves_it(tmp_path: Path) -> None:
    (tmp_path / "harness" / "workflow").mkdir(parents=True)
    (tmp_path / "harness" / "workflow" / "mine.py").write_text("raise SystemExit(1)\n")
    with pytest.raises(ConfigError) as err:
        load_harness(_write(tmp_path, "workflow: mine\n"))
    assert "harness/workflow/mine.py" in str(err.value)
    assert "awaits review" in str(err.value)


def test_a_harness_file_that_links_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("workflow: verify_first\n")
    root = tmp_path / "ws"
    (root / "prompts").mkdir(parents=True)
    (root / HARNESS_FILE).symlink_to(outside)
    with pytest.raises(OSError):
        load_harness(root)
