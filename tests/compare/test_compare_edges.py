"""`evolve compare` edges: a skills arm's evolver is paid for; uncommitted set-up is named."""

from __future__ import annotations

import json

import pytest
from compare_helpers import write_small

from conftest import GitRunner, cli_json, run_cli
from evolve.workspace import Workspace

pytestmark = pytest.mark.slow

SKILLS = """\
name: small
personas: [alex]
feedback: [instance]
orders: [0]
eval_seeds: [0]
episodes: 8
splits: [dev]
bootstrap_samples: 100
arms:
  skills: {}
"""


def test_a_skills_arm_counts_its_evolver_tokens_in_training(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    write_small(ws.root, SKILLS)
    cli_json(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    cell = json.loads((cells / "train--skills--alex--instance--0.json").read_text("utf-8"))
    train = cell["results"][0]["train"]
    assert train["commits"] >= 1  # the evolver ran: batches were committed
    assert train["evolver_tokens"] > 0
    assert train["tokens"] == (
        train["agent_tokens"] + train["updater_tokens"] + train["evolver_tokens"]
    )


def test_uncommitted_configuration_is_named_as_left_out(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """Arms run in clones of HEAD: an uncommitted evolve.yaml or evalset is not used, and the
    run says so (as it does for memory/ and prompts/)."""
    write_small(ws.root, "name: small\npersonas: [alex]\neval_seeds: [0]\narms: {none: {}}\n")
    config = ws.root / "evolve.yaml"
    config.write_text(config.read_text("utf-8") + "\n# tried a change\n", encoding="utf-8")
    (ws.root / "memory" / "draft.md").write_text("a draft\n", encoding="utf-8")
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 0, err
    assert "uncommitted changes (" in err and "evolve.yaml" in err and "memory/draft.md" in err


def test_a_plan_that_finished_no_job_does_not_ask_for_fresh(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first run that failed before any job finished (here: a model with no replies) left
    no results; the corrected run just runs, it is not told to discard results that are not
    there."""
    write_small(ws.root, "name: small\npersonas: [alex]\neval_seeds: [0]\narms: {none: {}}\n")
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--model", "mock")
    assert code != 0 and "mock" in err
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 0, err
    assert "--fresh" not in err
    # With a finished job, another plan's results are never mixed in: --fresh is asked for.
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--model", "mock")
    assert code != 0 and "--fresh" in err


def test_a_skills_arm_with_an_evolver_that_cannot_start_is_refused_before_anything_runs(
    ws: Workspace,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run_git: GitRunner,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = ws.root / "evolve.yaml"
    text = config.read_text("utf-8")
    assert "  evolver: sim" in text
    config.write_text(text.replace("  evolver: sim", "  evolver: openai/gpt-x"), "utf-8")
    run_git(ws.root, "commit", "-qam", "evolver on a server")
    write_small(ws.root, SKILLS.replace("arms:\n", "arms:\n  none: {}\n"))
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code != 0 and "OPENAI_API_KEY" in err
    assert not (ws.root / "generations" / "experiments" / "small").exists()


def test_an_arm_whose_stream_head_already_trained_runs_its_full_episodes(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evolve train` on the workspace before the experiment: the ace arm's stream (alex,
    instance, order 0) is already on HEAD. The arm still trains the experiment's episodes
    (it was cut short to what was left of them) and the run says it continued a stream."""
    from evolve.train import train

    train(ws, episodes=6)
    write_small(
        ws.root, SKILLS.replace("skills: {}", "ace: {}").replace("episodes: 8", "episodes: 4")
    )
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code == 0, err
    cells = ws.root / "generations" / "experiments" / "small" / "cells"
    cell = json.loads((cells / "train--ace--alex--instance--0.json").read_text("utf-8"))
    train_info = cell["results"][0]["train"]
    assert train_info["episodes"] == 4 and train_info["stream_start"] > 0
    assert "note: HEAD already holds training of 1 arm stream(s) (ace · alex" in err


def test_a_second_compare_on_a_locked_workspace_is_refused_without_announcing_work(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    from evolve.txn import writer

    write_small(ws.root, "name: small\npersonas: [alex]\neval_seeds: [0]\narms: {none: {}}\n")
    with writer(ws, "evolve compare"):
        code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert code != 0 and "locked" in err
    assert "to run" not in err and err.strip().count("\n") == 0  # one sentence


def test_the_plan_says_when_the_run_will_need_fresh(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    small = "name: small\npersonas: [alex]\neval_seeds: [0]\narms: {none: {}}\n"
    write_small(ws.root, small)
    assert cli_json(capsys, "compare", "experiments/small.yaml", "--jobs", "1")
    assert cli_json(capsys, "compare", "experiments/small.yaml", "--plan")["needs_fresh"] is False
    write_small(ws.root, small.replace("eval_seeds: [0]", "eval_seeds: [0, 1]"))
    code, _out, err = run_cli(capsys, "compare", "experiments/small.yaml", "--plan")
    assert code == 0 and "the run needs --fresh" in err
    assert cli_json(capsys, "compare", "experiments/small.yaml", "--plan")["needs_fresh"] is True


SKILLS_EXPERIMENT = """\
name: sk
personas: [alex]
feedback: [corrective]
orders: [0]
eval_seeds: [0]
episodes: 12
splits: [dev]
models: {agent: sim, updater: sim}
bootstrap_samples: 100
arms:
  none: {type: none}
  oracle: {type: oracle}
  fixed: {type: fixed, match: skills}
  skills: {recipe: skills}
"""


@pytest.mark.slow
def test_a_skills_arm_counts_its_injected_section_and_its_control_matches_it(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    (ws.root / "experiments" / "sk.yaml").write_text(SKILLS_EXPERIMENT, encoding="utf-8")
    run_git(ws.root, "add", "experiments/sk.yaml")
    run_git(ws.root, "commit", "-qm", "experiment: skills")
    code, _, err = run_cli(capsys, "compare", "experiments/sk.yaml", "--jobs", "1")
    assert code == 0, err
    cell = json.loads(
        (
            ws.root / "generations" / "experiments" / "sk" / "cells"
            / "train--skills--alex--corrective--0.json"
        ).read_text(encoding="utf-8")
    )  # fmt: skip
    chars = {r["arm"]: r["memory_chars"] for r in cell["results"]}
    # The skills arm renders no <memory> of its own: what it adds is its <skills> section.
    assert chars["skills"] > 0
    assert chars["fixed"] == chars["skills"]
