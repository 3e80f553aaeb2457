"""`evolve research`: adding a card commits it (or refuses it, writing nothing); list, topics,
pick and brief report the pool in words and JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import GitRunner, cli_json, one_sentence, run_cli, workspace_state
from evolve.research import pool_version, research_commits, starter_pool
from evolve.workspace import Workspace

CARD = """\
title: "Chain-of-Verification Reduces Hallucination in Large Language Models"
authors: [Shehzaad Dhuliawala, Jason Weston]
year: 2023
identifier: arXiv:2309.11495
module: workflow
mechanism: chain of verification
variant: verify_first
summary: Draft an answer, ask verification questions, answer them apart, then revise.
"""


def _card(tmp_path: Path, text: str = CARD, name: str = "cove.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_add_commits_the_card_and_raises_the_pool_version(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    assert pool_version(ws) == 0
    done = cli_json(capsys, "research", "add", str(_card(tmp_path)))
    assert (
        done["card"] == "cove"
        and done["pool_version"] == 1
        and done["path"] == "research/cove.yaml"
    )
    message = run_git(ws.root, "log", "-1", "--format=%B")
    assert "Evolve-Kind: research" in message and "Evolve-Card: cove" in message
    assert run_git(ws.root, "status", "--porcelain") == ""
    text = (ws.root / "research" / "cove.yaml").read_text(encoding="utf-8")
    assert "provenance: added by " in text  # filled in: the file gave none
    listed = cli_json(capsys, "research", "list", "--module", "workflow")["cards"]
    mine = [c for c in listed if c["id"] == "cove"]
    assert mine and mine[0]["source"] == "workspace" and mine[0]["variant"] == "verify_first"
    # The same card again: nothing to commit.
    again = cli_json(capsys, "research", "add", str(_card(tmp_path)))
    assert again["commit"] is None and again["pool_version"] == 1
    # A second card from options; a search that started after the first sees only it.
    first = research_commits(ws)[0].sha
    code, out, err = run_cli(
        capsys, "research", "add", "--id", "plan_first", "--title", "Plans", "--author", "A. Author",
        "--year", "2024", "--identifier", "arXiv:2401.00001", "--module", "workflow",
        "--mechanism", "plan then act", "--summary", "Plan the steps, then act.",
    )  # fmt: skip
    assert code == 0, err
    assert "pool version 2" in out and "new cycle" in out
    assert [c.card for c in research_commits(ws, since=first)] == ["plan_first"]
    assert pool_version(ws) == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (CARD + "extra: 1\n", "unknown key 'extra'"),
        (CARD.replace("verify_first", "verify_twice"), "no built-in variant 'verify_twice'"),
        (CARD.replace("year: 2023", "year: soon"), "year must be a whole number"),
        (CARD.replace("module: workflow", "module: planner"), "module is 'planner'"),
        ("#" * 70_000, "64 KiB"),
    ],
)
def test_a_bad_card_is_refused_and_nothing_is_written(
    ws: Workspace,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    run_git: GitRunner,
    text: str,
    needle: str,
) -> None:
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "research", "add", str(_card(tmp_path, text)))
    assert code != 0 and needle in one_sentence(err)
    assert workspace_state(ws.root, run_git) == before


def test_another_card_of_the_same_id_needs_replace(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    cli_json(capsys, "research", "add", str(_card(tmp_path)))
    other = _card(tmp_path, CARD.replace("then revise", "then rewrite"), "other.yaml")
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "research", "add", str(other), "--id", "cove")
    assert code != 0 and "--replace" in one_sentence(err)
    assert workspace_state(ws.root, run_git) == before
    done = cli_json(capsys, "research", "add", str(other), "--id", "cove", "--replace")
    assert done["commit"] and done["pool_version"] == 2
    assert "replace card cove" in run_git(ws.root, "log", "-1", "--format=%s")


def test_a_card_written_in_place_by_hand_is_committed_in_canonical_form(
    ws: Workspace, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    (ws.root / "research").mkdir()
    mine = ws.root / "research" / "cove.yaml"
    mine.write_text("# my notes\n" + CARD, encoding="utf-8")
    done = cli_json(capsys, "research", "add", "research/cove.yaml")
    assert done["commit"] and done["card"] == "cove"
    assert run_git(ws.root, "status", "--porcelain") == ""
    assert "# my notes" not in mine.read_text(encoding="utf-8")  # the canonical form
    assert "add card cove" in run_git(ws.root, "log", "-1", "--format=%s")


def test_a_card_that_repeats_one_of_the_pool_is_refused(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    same = CARD.replace("arXiv:2309.11495", "arXiv:2303.17651").replace(
        "chain of verification", "Self-Refine"
    )
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "research", "add", str(_card(tmp_path, same)))
    assert code != 0 and "as self_refine" in one_sentence(err)
    assert workspace_state(ws.root, run_git) == before


def test_a_starter_id_is_replaced_in_the_workspace(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = cli_json(capsys, "research", "add", str(_card(tmp_path)), "--id", "self_refine")
    assert done["replaced_starter"] is True
    cards = cli_json(capsys, "research", "list")["cards"]
    assert len(cards) == len(starter_pool())
    assert [c["source"] for c in cards if c["id"] == "self_refine"] == ["workspace"]


def test_a_research_folder_linked_out_is_refused(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.root / "research").symlink_to(outside)
    before = workspace_state(ws.root, run_git)
    code, _, err = run_cli(capsys, "research", "add", str(_card(tmp_path)))
    assert code != 0 and one_sentence(err)
    assert list(outside.iterdir()) == [] and workspace_state(ws.root, run_git) == before


def test_file_and_options_together_and_no_id_are_refused(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "research", "add", str(_card(tmp_path)), "--title", "x")
    assert code != 0 and "not both" in one_sentence(err)
    code, _, err = run_cli(capsys, "research", "add", "--title", "x")
    assert code != 0 and "--id" in one_sentence(err)


def test_topics_pick_and_brief_report_the_pool(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    found = cli_json(capsys, "research", "topics")
    assert sorted(found) == sorted(["tools", "context", "skills", "memory", "workflow"])
    ids = sorted(c for ts in found.values() for t in ts for c in t["cards"])
    assert ids == sorted(c.id for c in starter_pool())
    assert all(t["labelled_by"] == "terms" and t["label"] for ts in found.values() for t in ts)
    picked = cli_json(capsys, "research", "pick", "workflow", "-n", "2")
    assert picked["strategy"] == "topics" and len(picked["cards"]) == 2
    brief = cli_json(capsys, "research", "brief")
    assert brief["episodes"] == 0 and len(brief["module_order"]) == 5
    code, out, _ = run_cli(capsys, "research", "topics", "--module", "memory")
    assert code == 0 and out.startswith("memory: ")
    code, out, _ = run_cli(capsys, "research", "brief")
    assert code == 0 and "No training records yet" in out
