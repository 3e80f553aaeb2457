"""Adversarial review (issue 13): what the skills' records and messages say.

A hand-edited counter sidecar is refused by `train` and `run` too; `evolve skills` and the
report refuse two active skills with one id as `run` does; a retired skill's `show` ends its
validity at the retirement; a skill under a folder that cannot be a topic, a `log` of a path no
commit changed, and a missing key for a model role other than the agent's each get a sentence
that says what is wrong and what to do.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import GitRunner, run_cli
from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.errors import ModelError
from evolve.llm import make_role_llm
from evolve.memory import parse_unit
from evolve.skills._scoreboard import retire_ops
from evolve.workspace import Workspace

EPISODES = "40"


def _trained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "ws"
    assert run_cli(capsys, "init", str(root), "--skills")[0] == 0
    code, _out, err = run_cli(capsys, "train", "-C", str(root), "--episodes", EPISODES)
    assert code == 0, err
    return root


def _skill_files(root: Path, folder: str) -> list[Path]:
    return sorted((root / "memory" / "skills" / folder).rglob("skill-*.md"))


# --- A: the pooled counters ---------------------------------------------------------------


@pytest.mark.slow
def test_train_and_run_refuse_counters_that_cannot_be_episodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    root = _trained(tmp_path, capsys)
    skill = _skill_files(root, "topics")[0]
    sidecar = skill.parent / "_counters.yaml"
    sidecar.write_text(
        f"{skill.stem}: {{held_out: 1, held_out_pass: 7, injected: 2, injected_pass: 0}}\n"
    )
    run_git(root, "commit", "-qam", "hand edit")
    rel = sidecar.relative_to(root).as_posix()
    want = f"error: {rel}: entry {skill.stem!r} has more passes than episodes.\n"
    for args in (("train", "--episodes", "44"), ("run", "--split", "dev"), ("skills",)):
        code, _out, err = run_cli(capsys, *args, "-C", str(root))
        assert (code, err.lstrip("\n")) == (1, want), args  # run's progress line ends first
    assert run_git(root, "status", "--porcelain") == ""  # nothing half-written


# --- B: two active skills with one id ------------------------------------------------------


@pytest.mark.slow
def test_skills_and_report_refuse_two_active_skills_with_one_id_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    root = _trained(tmp_path, capsys)
    general = _skill_files(root, "general")[0]
    copy = root / "memory" / "skills" / "topics" / "phone" / general.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(general.read_text().replace("shelf: general\n", "shelf: topic\ntopic: phone\n"))
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "dup")
    code, _out, err = run_cli(capsys, "run", "-C", str(root), "--split", "dev")
    run_err = err.lstrip("\n")  # after run's progress line
    assert code == 1 and run_err.startswith(
        f"error: two active skills share the id {general.stem!r}"
    )
    for args in (("skills",), ("skills", "--json"), ("report",)):
        assert run_cli(capsys, *args, "-C", str(root)) == (1, "", run_err), args


# --- C: a retired skill's end ----------------------------------------------------------------

TOPIC = """---
id: venmo-lookup
recipe: hand
kind: skill
status: {status}
scope: global
valid_from: '2026-01-01T00:00:00.000004+00:00'
{end}shelf: topic
topic: venmo
trigger: paying someone on venmo
---
Look up the past payments before paying.
"""
SKILL = "memory/skills/topics/venmo/venmo-lookup.md"


def test_a_retirement_records_its_date_as_the_end_of_validity() -> None:
    unit = parse_unit(SKILL, TOPIC.format(status="active", end=""))
    unit = unit.with_(injected=20, injected_pass=0, held_out=20, held_out_pass=20)
    strata = {"venmo-lookup": {"t1": (10, 0, 10, 10), "t2": (10, 0, 10, 10)}}
    now = datetime(2026, 3, 1, 12, 0, 0, 5, tzinfo=UTC)
    [(op, _score)] = retire_ops([unit], 0.9, strata, now)
    assert (op.unit.status, op.unit.valid_to) == ("retired", "2026-03-01T12:00:00+00:00")
    # a clock behind the skill's start never puts the end before it
    [(op, _score)] = retire_ops([unit], 0.9, strata, datetime(2025, 1, 1, tzinfo=UTC))
    assert op.unit.valid_to == unit.valid_from


@pytest.mark.parametrize(
    ("end", "held"),
    [
        ("valid_to: '2026-03-01T12:00:00+00:00'\n",
         "held from 2026-01-01T00:00:00.000004+00:00 to 2026-03-01T12:00:00+00:00;"),
        ("", "held from 2026-01-01T00:00:00.000004+00:00 (retired, undated);"),
    ],
)  # fmt: skip
def test_show_of_a_retired_skill_never_says_it_still_holds(
    ws: Workspace,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    end: str,
    held: str,
) -> None:
    path = ws.root / SKILL
    path.parent.mkdir(parents=True)
    path.write_text(TOPIC.format(status="retired", end=end))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "retired by hand")
    argv = ["show", "venmo-lookup"]
    capsys.readouterr()
    assert _fast.run(argv) == 0  # the stdlib fast path and the click command agree
    fast = capsys.readouterr()
    assert run_click(argv) == 0
    assert capsys.readouterr() == fast
    assert held in fast.out and "still holds" not in fast.out


# --- D: messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("topic", ["vénmo", "My-App", "9lives"])
def test_a_skill_under_a_folder_that_cannot_be_a_topic_is_told_the_rule(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], topic: str
) -> None:
    path = ws.root / "memory" / "skills" / "topics" / topic / "venmo-lookup.md"
    path.parent.mkdir(parents=True)
    path.write_text(TOPIC.format(status="active", end="").replace("venmo\n", f"{topic}\n"))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "bad topic")
    code, out, err = run_cli(capsys, "skills")
    rel = path.relative_to(ws.root).as_posix()
    assert (code, out) == (1, "")
    assert err == (
        f"error: {rel}: the topic folder {topic!r} must be 1-32 lower-case letters, digits "
        "or '_', starting with a letter.\n"
    )


@pytest.mark.slow
def test_log_of_a_path_no_commit_changed_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _trained(tmp_path, capsys)
    monkeypatch.chdir(root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    argv = ["log", "memory/skills/nonexistent.md"]
    assert _fast.run(argv) == 0
    fast = capsys.readouterr()
    assert run_click(argv) == 0  # an empty list, as for a workspace not trained yet
    assert capsys.readouterr() == fast
    assert fast.out == "no memory or prompt commit changed memory/skills/nonexistent.md.\n"


@pytest.mark.parametrize(
    ("role", "instead"),
    [
        ("agent", "choose another --model such as sim"),
        ("updater", "choose another --updater-model such as sim"),
        ("reflector", "choose another --reflector-model such as sim"),
        ("evolver", "set models.evolver in evolve.yaml to sim"),
        ("selector", "set models.selector in evolve.yaml to lexical or sim"),
    ],
)
def test_a_missing_key_names_the_setting_of_the_role_it_is_for(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, role: str, instead: str
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = workspace.config
    models = config.models.model_copy(update={role: "openai/x"})
    config = config.model_copy(update={"models": models})
    with pytest.raises(ModelError) as caught:
        make_role_llm(config, role)  # type: ignore[arg-type]
    assert str(caught.value) == f"OPENAI_API_KEY is not set; export it, or {instead}."
