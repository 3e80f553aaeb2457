"""Adversarial review (issue 13): two hand-written skill files with one id.

Selection, the injected `[id]` lines and the scoreboard's record all go by id. Before, both
skills matched, `lexical_matches` mapped both ids back to the same (last) skill, and every
episode got that lesson twice (`skills_injected: ["x", "x"]`) and the other never, the two
counted as one in the record. Now `evolve run` and `evolve train` refuse the library in one
sentence, writing nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import GitRunner, one_sentence, run_cli, workspace_state
from evolve.errors import EvolveError
from evolve.skills._select import Skill, skills_of
from evolve.workspace import Workspace
from factories import WRITE_TRIGGER, skill_file

TRIGGER = WRITE_TRIGGER


def _two_with_one_id(root: Path, run_git: GitRunner, scope: str = "global") -> None:
    general = root / "memory" / "skills" / "general"
    venmo = root / "memory" / "skills" / "topics" / "venmo"
    general.mkdir(parents=True)
    venmo.mkdir(parents=True)
    (general / "x.md").write_text(skill_file("x", "Lesson one.", TRIGGER), encoding="utf-8")
    (venmo / "x.md").write_text(
        skill_file("x", "Lesson two.", TRIGGER, scope=scope, topic="venmo"), encoding="utf-8"
    )
    text = (root / "evolve.yaml").read_text(encoding="utf-8")
    text = text.replace("  enabled: false ", "  enabled: true ", 1)
    (root / "evolve.yaml").write_text(text, encoding="utf-8")
    run_git(root, "add", "-A")
    run_git(root, "commit", "-qm", "two skills, one id")


def test_a_picker_never_gets_one_id_twice() -> None:
    skills = [Skill("x", TRIGGER, "Lesson one."), Skill("x", TRIGGER, "Two.", "topic", "venmo")]
    with pytest.raises(EvolveError, match="share the id 'x' .general and topics/venmo."):
        skills_of(_Unit.of(s) for s in skills)
    retired = [_Unit.of(skills[0]), _Unit.of(skills[1], status="retired")]
    assert [s.text for s in skills_of(retired)] == ["Lesson one."]  # only live ones compete


class _Unit:
    kind = "skill"

    def __init__(self, skill: Skill, status: str) -> None:
        self.id, self.trigger, self.text = skill.id, skill.trigger, skill.text
        self.shelf, self.topic, self.status = skill.shelf, skill.topic, status

    @classmethod
    def of(cls, skill: Skill, status: str = "active") -> _Unit:
        return cls(skill, status)


@pytest.mark.parametrize(
    "argv", [("run", "--split", "dev", "--json"), ("train", "--episodes", "2", "--json")]
)
def test_run_and_train_refuse_two_skills_with_one_id(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]
) -> None:
    _two_with_one_id(ws.root, run_git)
    before = workspace_state(ws.root, run_git)
    refs = run_git(ws.root, "for-each-ref")
    code, out, err = run_cli(capsys, *argv)
    assert code != 0 and out == ""
    assert "share the id 'x'" in one_sentence(err)
    assert workspace_state(ws.root, run_git) == before
    assert run_git(ws.root, "for-each-ref") == refs  # no timeline written on the side ref
    assert not (ws.root / "generations" / "runs").exists()


def test_one_id_in_two_users_scopes_is_no_clash(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """The persona sees the global `x` only (the other is blair's): nothing to refuse."""
    _two_with_one_id(ws.root, run_git, scope="user:blair")
    code, _out, err = run_cli(capsys, "run", "--split", "dev", "--json")
    assert code == 0, err
