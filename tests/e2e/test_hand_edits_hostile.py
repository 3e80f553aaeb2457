"""Adversarial: hand-edited files that are not UTF-8 (a Latin-1 `é`). Every command refuses
with one sentence naming the file, exits 1, prints no traceback and changes nothing, on the
fast path (`evolve memory`, `evolve run`) as on the full one.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import GitRunner, one_sentence, run_cli, workspace_state
from evolve.workspace import Workspace

LATIN1 = "caf\xe9".encode("latin-1")
FILES = {
    "memory/alex/n1.md": b"---\nid: n1\nrecipe: hand\nkind: note\nscope: user:alex\n---\nPay "
    + LATIN1
    + b".\n",
    "memory/_counters.yaml": b"n1:\n  helpful: 1\n# " + LATIN1 + b"\n",
    "prompts/parameters.yaml": b"agent.max_turns: 5\n# " + LATIN1 + b"\n",
}


def _refused(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], *args: str
) -> str:
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, *args)
    assert code == 1, (args, err)
    assert "Traceback" not in err, (args, err)
    assert workspace_state(ws.root, run_git) == before, args
    return one_sentence(err)


@pytest.mark.parametrize("rel", sorted(FILES))
def test_a_hand_edited_file_that_is_not_utf8_is_refused_in_one_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], rel: str
) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(FILES[rel])
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand edit")
    commands: list[tuple[str, ...]] = [
        ("run", "--split", "dev"),
        ("run", "--split", "dev", "--json"),
    ]
    if rel.startswith("memory/"):  # parameters.yaml: memory and skills do not read it
        commands += [("memory",), ("skills",)]
    for args in commands:
        line = _refused(ws, run_git, capsys, *args)
        assert f"{rel} is not UTF-8" in line or f"{rel}: the file is not UTF-8" in line, line


def test_an_evolve_yaml_that_is_not_utf8_is_refused_in_one_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    config.write_bytes(config.read_bytes() + b"# " + LATIN1 + b"\n")
    run_git(ws.root, "commit", "-qam", "hand edit")
    for args in (("memory",), ("skills",), ("run", "--split", "dev"), ("train",)):
        line = _refused(ws, run_git, capsys, *args)
        assert "evolve.yaml is not UTF-8 text" in line, (args, line)


_DUP_UNIT = "---\nid: n1\nrecipe: hand\nkind: note\nkind: note\nscope: user:alex\n---\nPay.\n"
HAND_EDITS = {
    "prompts/parameters.yaml": (
        "agent.max_turns: 5\nagent.max_turns: 6\n",
        "agent.max_turns",
        "1 and 2",
    ),
    "memory/alex/n1.md": (_DUP_UNIT, "kind", "4 and 5"),
    "memory/skills/_strata.yaml": (
        "skill-x:\n  pay_back-1: [1, 1, 0, 0]\nskill-x:\n  pay_back-2: [1, 1, 0, 0]\n",
        "skill-x",
        "1 and 3",
    ),
}


@pytest.mark.parametrize("rel", sorted(HAND_EDITS))
@pytest.mark.parametrize("dry", [True, False])
def test_evolve_refuses_an_unreadable_hand_edit_before_a_generation_is_recorded(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], rel: str, dry: bool
) -> None:
    config = ws.root / "evolve.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("  recipe: ace", "  recipe: skills", 1),
        encoding="utf-8",
    )
    text, key, lines = HAND_EDITS[rel]
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand edit")
    refs = run_git(ws.root, "for-each-ref", "refs/evolve")
    args = ("evolve", "--dry-run") if dry else ("evolve",)
    line = _refused(ws, run_git, capsys, *args)
    assert (
        line
        == f"error: {rel} gives the key {key!r} twice (lines {lines}); keep one of them and retry."
    )
    assert run_git(ws.root, "for-each-ref", "refs/evolve") == refs  # no generation recorded


@pytest.mark.parametrize(
    "text, says",
    [
        ("- id: x\n  family: [a\n", "procedures.yaml is not valid YAML at line 3."),
        ("- id: x\n", "has a malformed procedures.yaml: field 'family': field required."),
    ],
)
def test_a_malformed_procedures_file_is_refused_in_one_sentence(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    (ws.root / "evalset" / "procedures.yaml").write_text(text, encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand edit")
    for args in (("run", "--split", "dev"), ("train",)):
        line = _refused(ws, run_git, capsys, *args)
        assert line.endswith(says) and "<unicode string>" not in line, (args, line)


def test_a_unit_saved_with_a_byte_order_mark_keeps_its_front_matter(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    """An editor's UTF-8 signature before `---` must not turn the unit into a hand note whose
    text is the YAML (the agent would be shown `id: n1`, `recipe: hand`, ...)."""
    from evolve.memory import load_units
    from evolve.quick._read import parse_or_full

    rel = "memory/alex/n1.md"
    body = "---\nid: n1\nrecipe: hand\nkind: note\nscope: user:alex\n---\nPay with the blue card.\n"
    (ws.root / "memory" / "alex").mkdir(parents=True, exist_ok=True)
    (ws.root / rel).write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "a note saved with a BOM")
    (unit,) = [u for u in load_units(ws.root) if u.id == "n1"]
    assert unit.text == "Pay with the blue card." and unit.kind == "note"
    assert parse_or_full(rel, "\ufeff" + body).text == unit.text  # the fast reader agrees
    code, out, err = run_cli(capsys, "memory")
    assert code == 0, err
    assert "[n1] Pay with the blue card." in out and "recipe: hand" not in out


@pytest.mark.slow
def test_an_older_skills_batch_can_be_reverted_without_cascade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess

    root = tmp_path / "w"
    assert run_cli(capsys, "init", str(root), "--skills")[0] == 0
    monkeypatch.chdir(root)
    assert run_cli(capsys, "train")[0] == 0
    log = subprocess.run(
        ["git", "log", "--reverse", "--format=%H %s", "--", "memory/skills/_failed_tasks.yaml"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert len(log) >= 2  # an older batch, and a later one that recorded another failed task
    from evolve.skills._failed import FAILED_PATH, load_failed, parse_failed

    def at(rev: str) -> dict[str, int]:
        shown = subprocess.run(
            ["git", "show", f"{rev}:{FAILED_PATH}"], cwd=root, capture_output=True, text=True
        )
        return parse_failed(shown.stdout if shown.returncode == 0 else None)

    first = log[0].split()[0]
    added = Counter(at(first)) - Counter(at(f"{first}^"))  # the failing episodes it counted
    before = load_failed(root)
    code, _, err = run_cli(capsys, "revert", first)
    assert code == 0, err
    # The later batches' failing episodes stay: a task they failed too stays recorded.
    assert load_failed(root) == dict(Counter(before) - added)


def test_the_no_failed_task_sentence_does_not_call_an_unmeasured_lift_zero() -> None:
    """`evolve skills` shows '-' for a lift with no episode counted; the sentence shown while
    no task has failed must not say every lift is 0 (a new workspace shows only '-')."""
    from evolve.skills._failed import NO_TASK_FAILED

    assert "every lift is 0" not in NO_TASK_FAILED and "'-'" in NO_TASK_FAILED
