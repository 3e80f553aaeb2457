"""`evolve train`: one commit per changing episode, with trailers; resume; review; refusals."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.cli import main
from evolve.episode import run_episode
from evolve.errors import EvolveError, UnknownName
from evolve.evaluate import agent_memory, open_env, run_split
from evolve.memory import dump_unit, load_units, parse_unit
from evolve.train import last_episode, stream_tasks, train
from evolve.updaters import RECIPES
from evolve.workspace import Workspace

RunGit = Callable[..., str]
TRAILERS = (
    "Evolve-Episode",
    "Evolve-Recipe",
    "Evolve-Task",
    "Evolve-Ops",
    "Evolve-Persona",
    "Evolve-Stream",
)
SUBJECT = re.compile(
    r"^(?P<recipe>[a-z]+) · (?P<persona>[a-z]+) · episode (?P<episode>\d+) "
    r"\((?P<task>[a-z_]+-\d+)\): (?P<counts>[a-z]+ [1-9]\d*(, [a-z]+ [1-9]\d*)*)$"
)


def _history(root: Path, run_git: RunGit) -> list[dict[str, Any]]:
    """Every commit, oldest first: sha, parents, subject, trailers (parsed by git)."""
    out = run_git(
        root,
        "log",
        "--reverse",
        "--format=%H%x1f%P%x1f%s%x1f%(trailers:only=true,unfold=true)%x1e",
    )
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, subject, block = record.split("\x1f")
        trailers = {}
        for line in block.splitlines():
            key, sep, value = line.partition(": ")
            if sep:
                trailers[key] = value
        commits.append(
            {"sha": sha, "parents": parents.split(), "subject": subject, "trailers": trailers}
        )
    return commits


def _training_commits(root: Path, run_git: RunGit) -> list[dict[str, Any]]:
    return [c for c in _history(root, run_git) if "Evolve-Episode" in c["trailers"]]


def _clean(root: Path, run_git: RunGit) -> None:
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""


def _all_units_parse(root: Path) -> None:
    for path in (root / "memory").rglob("*.md"):
        rel = path.relative_to(root).as_posix()
        unit = parse_unit(rel, path.read_text("utf-8"))
        assert dump_unit(unit) == path.read_text("utf-8"), rel  # canonical on disk


@pytest.fixture
def in_ws(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Workspace:
    """The workspace, with the current folder set to it (for the CLI)."""
    monkeypatch.chdir(workspace.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    capsys.readouterr()
    return workspace


@pytest.fixture
def memories(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int | None, str]]]:
    """(episode, rendered memory) of every episode `train` runs, in order."""
    seen: list[tuple[int | None, str]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        setup = args[3]
        seen.append((kwargs.get("episode"), setup.memory))
        return run_episode(*args, **kwargs)

    monkeypatch.setattr("evolve.train._train.run_episode", spy)
    yield seen


# --- every recipe through the CLI -------------------------------------------------------------


@pytest.mark.parametrize("recipe", sorted(set(RECIPES) - {"skills"}))  # skills: per batch
def test_train_every_recipe_makes_one_commit_per_changing_episode(
    in_ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str], recipe: str
) -> None:
    root = in_ws.root
    base = in_ws.store.head()
    code = main(["train", "--recipe", recipe, "--unrendered", "--episodes", "30", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["recipe"] == recipe and report["start"] == 0 and report["end"] == 30
    assert [o["episode"] for o in report["outcomes"]] == list(range(30))

    commits = _training_commits(root, run_git)
    assert commits, f"{recipe}: thirty episodes with empty memory changed nothing"
    assert [c["sha"] for c in commits] == report["commits"]
    committed = {o["episode"]: o for o in report["outcomes"] if o["commit"]}
    # Episodes that change nothing make no commit; accepted episodes change nothing.
    for outcome in report["outcomes"]:
        if outcome["accepted"]:
            assert outcome["commit"] is None
    tasks = stream_tasks(open_env(in_ws), 0, 30)
    previous = base
    for commit in commits:
        t = commit["trailers"]
        assert set(TRAILERS) <= set(t), t
        k = int(t["Evolve-Episode"])
        assert t["Evolve-Recipe"] == recipe
        assert t["Evolve-Persona"] == "alex"
        assert t["Evolve-Stream"] == f"alex/{recipe}/0/instance"
        assert t["Evolve-Task"] == tasks[k].id
        assert commit["sha"] == committed[k]["commit"]
        assert commit["parents"] == [previous]  # linear: one commit per episode, in order
        previous = commit["sha"]
        # A readable first line whose counts match the recorded operations.
        m = SUBJECT.match(commit["subject"])
        assert m, commit["subject"]
        assert m["recipe"] == recipe and int(m["episode"]) == k and m["task"] == tasks[k].id
        assert m["persona"] == "alex"
        labels = [pair.split("=", 1)[0] for pair in t["Evolve-Ops"].split()]
        assert labels, commit
        counts = {op: int(n) for op, n in (c.split(" ") for c in m["counts"].split(", "))}
        # A modify is counted once, however the recipe wrote it (modify, rewrite, revoke+add).
        pairs = counts.get("modify", 0) - labels.count("modify") - labels.count("rewrite")
        assert pairs >= 0
        added = labels.count("add") + labels.count("reactivate")
        assert counts.get("add", 0) + counts.get("reactivate", 0) == added - pairs
        assert counts.get("revoke", 0) == labels.count("revoke") - pairs
        assert counts.get("evict", 0) == labels.count("evict")
        changed = run_git(root, "show", "--name-only", "--format=", commit["sha"]).split()
        assert changed and all(p.startswith("memory/alex/") for p in changed)
    episodes = [int(c["trailers"]["Evolve-Episode"]) for c in commits]
    assert episodes == sorted(set(episodes))
    _clean(root, run_git)
    _all_units_parse(root)
    assert all(u.recipe == recipe for u in load_units(root) if u.recipe != "hand")


@pytest.mark.parametrize("recipe", ["ace", "tepa", "rewrite", "topl"])
def test_training_lowers_dev_violations(workspace: Workspace, recipe: str) -> None:
    before = run_split(workspace, "dev", runs=2, log=False)
    train(workspace, recipe=recipe, episodes=30)
    # A workspace renders the recipe(s) it is configured for (render.recipes, default
    # train.recipe = ace): evaluate as one configured for the recipe it trained.
    render = workspace.config.render.model_copy(update={"recipes": (recipe,)})
    configured = Workspace(workspace.root, workspace.config.model_copy(update={"render": render}))
    after = run_split(configured, "dev", runs=2, log=False)
    assert after.violation_rate < before.violation_rate, (
        before.violation_rate,
        after.violation_rate,
    )
    assert after.score > before.score


def test_human_output_names_the_commits(
    in_ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["train", "--recipe", "tepa", "--unrendered", "--episodes", "10"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("tepa persona=alex episodes 0..9:")
    commits = [line.split()[0] for line in out.splitlines() if " episode " in line]
    assert commits and all(in_ws.store.rev_parse(sha) for sha in commits)
    assert main(["train", "--recipe", "tepa", "--unrendered", "--episodes", "10"]) == 0
    out, _ = capsys.readouterr()
    assert "0 memory commits" in out or "nothing to do" in out


# --- resume -----------------------------------------------------------------------------------


def _ops_history(root: Path, run_git: RunGit) -> list[tuple[str, str, str]]:
    return [
        (c["trailers"]["Evolve-Episode"], c["trailers"]["Evolve-Task"], c["trailers"]["Evolve-Ops"])
        for c in _training_commits(root, run_git)
    ]


@pytest.mark.slow
def test_rerun_resumes_after_the_last_commit_and_continues(
    workspace: Workspace, tmp_path: Path, run_git: RunGit
) -> None:
    first = train(workspace, recipe="ace", episodes=30)
    head = workspace.store.head()
    last = last_episode(workspace, first.stream)
    assert last is not None and 0 <= last < 30
    assert last == int(_training_commits(workspace.root, run_git)[-1]["trailers"]["Evolve-Episode"])

    # The same number of episodes again: it starts after the last commit and changes nothing.
    again = train(workspace, recipe="ace", episodes=30)
    assert again.start == last + 1
    assert [o.episode for o in again.outcomes] == list(range(last + 1, 30))
    assert again.commits == []
    assert workspace.store.head() == head

    # More episodes continue from there.
    more = train(workspace, recipe="ace", episodes=45)
    assert more.start == last + 1
    assert [o.episode for o in more.outcomes] == list(range(last + 1, 45))
    history = _ops_history(workspace.root, run_git)
    episodes = [int(e) for e, _, _ in history]
    assert episodes == sorted(set(episodes))
    _clean(workspace.root, run_git)

    # Stopping and resuming gives exactly the history of one uninterrupted run.
    from evolve.workspace import init_workspace

    straight = init_workspace(tmp_path / "straight")
    train(straight, recipe="ace", episodes=45)
    assert _ops_history(straight.root, run_git) == history


def test_streams_of_different_recipes_resume_separately(workspace: Workspace) -> None:
    ace = train(workspace, recipe="ace", episodes=8)
    tepa = train(workspace, recipe="tepa", episodes=8)
    assert ace.start == 0 and tepa.start == 0  # another stream: not resumed from ace's commits
    assert last_episode(workspace, ace.stream) is not None


def test_a_hand_edit_committed_between_runs_takes_effect(
    workspace: Workspace,
    run_git: RunGit,
    memories: list[tuple[int | None, str]],
) -> None:
    train(workspace, recipe="ace", episodes=10)
    units = [u for u in load_units(workspace.root) if u.status == "active"]
    assert units
    victim = units[0]
    rendered = memories[-1][1]
    memories.clear()
    # The user revokes one bullet by hand and adds a note; both are committed.
    path = workspace.root / victim.path()
    path.write_text(dump_unit(victim.with_(status="revoked")), encoding="utf-8")
    note = workspace.root / "memory/alex/from-alex.md"
    note.write_text("I am vegetarian.\n", encoding="utf-8")
    run_git(workspace.root, "add", "memory")
    run_git(workspace.root, "commit", "-q", "-m", "revoke a bullet by hand")

    report = train(workspace, recipe="ace", episodes=14)
    assert report.outcomes
    first_memory = memories[0][1]
    assert memories[0][0] == report.start
    assert f"[{victim.id}]" not in first_memory
    assert "I am vegetarian." in first_memory
    assert victim.text in rendered or f"[{victim.id}]" in rendered  # it was rendered before
    _clean(workspace.root, run_git)


def test_the_first_episode_sees_no_memory_and_later_ones_see_what_was_committed(
    workspace: Workspace, memories: list[tuple[int | None, str]]
) -> None:
    report = train(workspace, recipe="tepa", episodes=12)
    assert memories[0] == (0, "")
    first_commit = next(o.episode for o in report.outcomes if o.commit)
    after = [m for k, m in memories if k is not None and k > first_commit]
    assert after and all(m for m in after)


# --- refusals ---------------------------------------------------------------------------------


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def test_an_unknown_recipe_is_one_clear_sentence(
    in_ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    head = in_ws.store.head()
    code = main(["train", "--recipe", "nosuch", "--episodes", "3"])
    out, err = capsys.readouterr()
    assert code != 0
    assert out == ""
    errors = [line for line in _error_lines(err) if "error" in line.lower()]
    assert len(errors) == 1, err
    assert "nosuch" in errors[0] and all(name in errors[0] for name in RECIPES)
    assert in_ws.store.head() == head


def test_an_unknown_recipe_in_the_config_is_one_clear_sentence(
    in_ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    config = in_ws.root / "evolve.yaml"
    config.write_text(config.read_text("utf-8").replace("recipe: ace", "recipe: nosuch"), "utf-8")
    run_git(in_ws.root, "commit", "-q", "-am", "set an unknown recipe")
    code = main(["train", "--episodes", "3"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    (line,) = _error_lines(err)
    assert line.startswith("error: unknown recipe 'nosuch'") and "ace" in line
    with pytest.raises(UnknownName):
        train(Workspace(in_ws.root), episodes=3)


def test_uncommitted_changes_in_memory_are_refused_with_the_file_listed(
    in_ws: Workspace, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    train(in_ws, recipe="ace", episodes=4)
    head = in_ws.store.head()
    unit = next(iter(load_units(in_ws.root)))
    edited = in_ws.root / unit.path()
    edited.write_text(dump_unit(unit.with_(text="My edit in progress.")), "utf-8")
    draft = in_ws.root / "memory/alex/draft.md"
    draft.write_text("A note I have not committed.\n", encoding="utf-8")
    with pytest.raises(EvolveError) as info:
        train(in_ws, recipe="ace", episodes=10)
    assert str(unit.path()) in str(info.value) and "memory/alex/draft.md" in str(info.value)
    code = main(["train", "--recipe", "ace", "--episodes", "10"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    (line,) = _error_lines(err)
    assert "memory/alex/draft.md" in line and "uncommitted" in line and "commit" in line
    # Nothing was committed and the person's files are as they left them.
    assert in_ws.store.head() == head
    assert draft.read_text("utf-8") == "A note I have not committed.\n"
    assert "My edit in progress." in edited.read_text("utf-8")


def test_changes_outside_memory_do_not_block_training(
    workspace: Workspace, run_git: RunGit
) -> None:
    (workspace.root / "scratch.txt").write_text("notes\n", encoding="utf-8")
    report = train(workspace, recipe="ace", episodes=5)
    assert report.commits
    changed = run_git(workspace.root, "show", "--name-only", "--format=", report.commits[0]).split()
    assert "scratch.txt" not in changed


# --- review -----------------------------------------------------------------------------------


def test_review_writes_new_units_as_pending_and_none_is_rendered(
    in_ws: Workspace,
    run_git: RunGit,
    capsys: pytest.CaptureFixture[str],
    memories: list[tuple[int | None, str]],
) -> None:
    code = main(["train", "--recipe", "ace", "--episodes", "12", "--review", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["commits"]
    units = load_units(in_ws.root)
    assert units and all(u.status == "pending" for u in units)
    # Each pending statement is written once, however often it was proposed again.
    texts = [u.text for u in units]
    assert len(texts) == len(set(texts))
    env = open_env(in_ws)
    assert agent_memory(in_ws, env, "alex", "recipe") == ""
    assert all(memory == "" for _, memory in memories)  # no episode saw a pending unit
    _clean(in_ws.root, run_git)


def test_review_leaves_active_memory_rendered(workspace: Workspace, run_git: RunGit) -> None:
    train(workspace, recipe="ace", episodes=6)
    active = {u.id for u in load_units(workspace.root) if u.status == "active"}
    assert active
    train(workspace, recipe="ace", episodes=20, review=True)
    units = {u.id: u for u in load_units(workspace.root)}
    assert active <= set(units)
    # Nothing a person has not seen took anything away from the agent.
    assert all(units[i].status == "active" for i in active)
    new = [u for i, u in units.items() if i not in active]
    assert all(u.status == "pending" for u in new)
    rendered = agent_memory(workspace, open_env(workspace), "alex", "recipe")
    for unit in new:
        assert unit.id not in rendered
    _clean(workspace.root, run_git)
