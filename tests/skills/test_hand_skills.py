"""Hand-written skills: minimal front matter, an empty file refused, the trigger shown as
selection uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from evolve.memory import MalformedUnit, load_units, parse_unit
from evolve.skills._select import lexical_matches, skills_of
from evolve.workspace import Workspace


def _write(ws: Workspace, rel: str, text: str) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.mark.parametrize("text", ["", "  \n", "\n\n\t\n"])
def test_an_empty_skill_file_is_refused_in_one_sentence(text: str) -> None:
    with pytest.raises(MalformedUnit, match=r"the skill file is empty; write its lesson"):
        parse_unit("memory/skills/topics/venmo/blank.md", text)


def test_a_skill_with_front_matter_and_no_lesson_is_refused() -> None:
    with pytest.raises(MalformedUnit, match=r"the skill has no lesson"):
        parse_unit("memory/skills/general/x.md", "---\ntrigger: paying someone\n---\n  \n")


def test_a_hand_skill_gives_only_its_trigger() -> None:
    unit = parse_unit(
        "memory/skills/topics/venmo/audience.md",
        "---\ntrigger: paying someone on venmo\n---\nConfirm who can see a payment.\n",
    )
    assert (unit.id, unit.recipe, unit.kind, unit.shelf, unit.topic, unit.scope) == (
        "audience", "hand", "skill", "topic", "venmo", "global",
    )  # fmt: skip
    assert unit.trigger == "paying someone on venmo" and unit.is_hand_written
    skill = skills_of([unit])[0]
    assert lexical_matches("Pay Sam back on Venmo.", [skill]) == [skill]


def test_what_the_file_gives_wins_and_a_wrong_field_is_still_refused() -> None:
    unit = parse_unit(
        "memory/skills/general/g.md",
        "---\ntrigger: any write\nstatus: retired\nscope: user:alex\n---\nRead it back.\n",
    )
    assert (unit.status, unit.scope, unit.shelf, unit.topic) == (
        "retired",
        "user:alex",
        "general",
        None,
    )
    with pytest.raises(MalformedUnit, match=r"does not match its folder"):
        parse_unit("memory/skills/general/g.md", "---\nshelf: topic\ntopic: venmo\n---\nx\n")
    with pytest.raises(MalformedUnit, match=r"file name does not match"):
        parse_unit("memory/skills/general/g.md", "---\nid: other\n---\nx\n")
    with pytest.raises(MalformedUnit, match=r"unknown field"):
        parse_unit("memory/skills/general/g.md", "---\ntriger: typo\n---\nx\n")


def test_evolve_skills_shows_the_trigger_selection_uses(
    workspace: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(workspace, "memory/skills/topics/venmo/plain.md", "Confirm the audience.\n")
    _write(workspace, "memory/skills/general/anywhere.md", "Read back what you wrote.\n")
    _write(workspace, "memory/skills/general/given.md", "---\ntrigger: sending mail\n---\nCc.\n")
    assert {u.id for u in load_units(workspace.root)} >= {"plain", "anywhere", "given"}
    code, out, err = run_cli(capsys, "skills", "--workspace", str(workspace.root))
    assert code == 0, err
    assert "when: venmo (its topic: the file gives no trigger)" in out
    assert "when: any task, after the skills whose trigger matches" in out
    assert "when: sending mail\n" in out
    code, out, err = run_cli(capsys, "skills", "--workspace", str(workspace.root), "--json")
    assert code == 0, err
    data = json.loads(out)
    rows = {r["id"]: r for r in (data["skills"] if isinstance(data, dict) else data)}
    assert (rows["plain"]["trigger"], rows["plain"]["trigger_from"]) == ("venmo", "topic")
    assert (rows["anywhere"]["trigger"], rows["anywhere"]["trigger_from"]) == ("", "any")
    assert (rows["given"]["trigger"], rows["given"]["trigger_from"]) == ("sending mail", "file")


def test_an_empty_skill_file_is_refused_by_evolve_skills(
    workspace: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _write(workspace, "memory/skills/topics/venmo/blank.md", "  \n")
    code, out, err = run_cli(capsys, "skills", "--workspace", str(workspace.root))
    assert code != 0 and "blank.md: the skill file is empty" in err
    assert "Traceback" not in err
