"""The experiment file: a wrong one is one sentence before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli
from evolve.compare import ExperimentError, Job, parse_experiment, plan
from evolve.workspace import Workspace

PERSONAS = ["alex", "blair"]
RECIPES = ["ace", "tepa"]

GOOD = """
name: t
personas: [alex]
feedback: [instance, corrective]
orders: [0, 1]
arms:
  none: {}
  oracle: {}
  fixed: {type: fixed, match: ace}
  ace: {}
  tepa-small: {recipe: tepa, caps: {chars: 80}}
"""


def parse(text: str, recipes: list[str] = RECIPES) -> object:
    return parse_experiment(text, source="x.yaml", personas=PERSONAS, recipes=recipes)


def test_a_good_file_expands_to_baselines_and_one_job_per_recipe_cell() -> None:
    exp = parse_experiment(GOOD, source="x.yaml", personas=PERSONAS, recipes=RECIPES)
    assert exp.arms["none"].type == "none" and exp.arms["ace"].recipe == "ace"
    assert exp.arms["tepa-small"].caps is not None and exp.arms["tepa-small"].caps.chars == 80
    jobs = plan(exp)
    assert jobs[0] == Job("base", "alex")
    train = [j for j in jobs if j.kind == "train"]
    assert len(train) == 2 * 2 * 2  # recipe arms x tiers x orders (the fixed arm rides along)
    assert train[0].ref("t") == "refs/evolve/arms/t/ace/alex/instance/0"


def test_any_registered_recipe_is_an_arm_skills_included() -> None:
    text = "name: t\npersonas: [alex]\narms:\n  skills: {}\n  none: {}\n"
    with pytest.raises(ExperimentError, match="unknown recipe 'skills'"):
        parse(text)
    exp = parse_experiment(text, source="x", personas=PERSONAS, recipes=[*RECIPES, "skills"])
    assert exp.arms["skills"].type == "recipe" and exp.arms["skills"].recipe == "skills"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: t\npersonas: [alex]\narms: {none: {}\n", "not valid YAML at line"),
        ("- a list\n", "must be a YAML mapping"),
        ("name: t\npersonas: [zed]\narms: {none: {}}\n", "unknown persona 'zed'"),
        ("name: t\npersonas: [alex]\narms: {x: {recipe: nope}}\n", "unknown recipe 'nope'"),
        ("name: t\npersonas: [alex]\narms: {x: {type: magic}}\n", "unknown type 'magic'"),
        ("name: t\npersonas: [alex]\narms: {f: {type: fixed}}\n", "needs one of match"),
        ("name: t\npersonas: [alex]\narms: {f: {type: fixed, match: none}, none: {}}\n",
         "not a recipe arm"),
        ("name: t\npersonas: [alex]\nepisodes: 0\narms: {none: {}}\n", "episodes"),
        ("name: t\npersonas: [alex]\nwat: 1\narms: {none: {}}\n", "unknown key 'wat'"),
        ("name: T!\npersonas: [alex]\narms: {none: {}}\n", "name 'T!'"),
        ("name: t\npersonas: [alex]\nfeedback: [loud]\narms: {none: {}}\n", "feedback"),
        ("name: t\npersonas: [alex, alex]\narms: {none: {}}\n", "lists a value twice"),
        ("name: t\npersonas: [alex]\narms: {none: {recipe: ace}}\n", "takes no recipe"),
        ("name: t\npersonas: [alex]\narms: {oracle: {review: true}}\n", "takes no recipe"),
        # A key given twice is refused, not silently the last one (an arm, a parameter).
        ("name: t\npersonas: [alex]\narms: {ace: {}, ace: {recipe: tepa}}\n",
         "gives the key 'ace' twice (both on line 3)"),
        ("name: t\npersonas: [alex]\narms: {ace: {caps: {units: 2, units: 9}}}\n",
         "gives the key 'units' twice"),
        ("name: t\npersonas: [alex]\narms: {none: {}}\npersonas: [blair]\n",
         "gives the key 'personas' twice (lines 2 and 4)"),
        # Nothing to score, or nothing to train under: refused, not an empty result.
        ("name: t\npersonas: [alex]\nsplits: []\narms: {none: {}}\n", "splits"),
        ("name: t\npersonas: [alex]\nfeedback: []\narms: {ace: {}}\n", "feedback"),
        # A seed is an integer, not a boolean or a string that looks like one.
        ("name: t\npersonas: [alex]\norders: [true]\narms: {ace: {}}\n", "orders.0"),
        ("name: t\npersonas: [alex]\neval_seeds: ['1']\narms: {ace: {}}\n", "eval_seeds.0"),
    ],
)  # fmt: skip
def test_a_wrong_file_is_one_sentence(text: str, says: str) -> None:
    with pytest.raises(ExperimentError) as info:
        parse(text)
    message = str(info.value)
    assert says in message and message.startswith("x.yaml")
    assert message.endswith(".") and "\n" not in message


def test_the_command_refuses_a_wrong_file_before_anything_runs(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    before = ws.store.git("for-each-ref")
    Path("bad.yaml").write_text(
        "name: bad\npersonas: [alex]\narms: {x: {recipe: nope}}\n", encoding="utf-8"
    )
    code, out, err = run_cli(capsys, "compare", "bad.yaml")
    assert code == 1 and out == ""
    assert "unknown recipe 'nope'" in err and len(err.strip().splitlines()) == 1
    assert ws.store.git("for-each-ref") == before
    assert not (ws.root / "generations" / "experiments" / "bad").exists()
    code, _, err = run_cli(capsys, "compare", "missing.yaml")
    assert code == 1 and "does not exist" in err


def test_the_shipped_q3_plan(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """`evolve init` copies experiments/q3.yaml; its plan is seed 000's Q3 shape."""
    assert (ws.root / "experiments" / "q3.yaml").is_file()
    assert ws.store.git("ls-files", "experiments").split() == ["experiments/q3.yaml"]
    from conftest import cli_json

    doc = cli_json(capsys, "compare", "experiments/q3.yaml", "--plan")
    labels = [j["label"] for j in doc["jobs"]]
    assert doc["pending"] == len(labels) == 5 + 6 * 5 * 2 * 3
    arms = {j["ref"].split("/")[4] for j in doc["jobs"] if j["ref"]}
    assert arms == {"ace", "tepa", "trace", "reflexion", "rewrite", "topl"}
    assert ws.store.git("for-each-ref", "refs/evolve/arms") == ""
