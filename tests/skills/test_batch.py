"""One commit per batch (real git), its revert, an interrupted batch, and the readers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import cli_json, run_cli
from evolve.applier import MemoryApplier
from evolve.history import revert
from evolve.memory import dump_unit, load_units, load_units_at, parse_unit, without_counters
from evolve.ops import Op
from evolve.skills import BATCH_KIND, live_skills
from evolve.store import GitStore, parse_ops
from evolve.train import train
from evolve.workspace import Workspace

VERBS = {"add", "merge", "revise", "skip", "refused", "promote"}


def _batch_commits(store: GitStore) -> list[str]:
    out = store.git("log", "--reverse", "--format=%H", "HEAD")
    return [
        sha
        for sha in out.split()
        if store.commit_info(sha).trailers.get("Evolve-Kind") == BATCH_KIND
    ]


def _shelves(units: list) -> dict[str, tuple[str | None, str]]:  # type: ignore[type-arg]
    return {u.id: (u.topic, u.text) for u in live_skills(units).values()}


# The stream's seed: one whose last batch adds a skill (the revert test needs a batch that
# taught something). The sim's skills roles draw from their prompt's text, so a reworded
# prompt moves the draws: with the prompts of issue 22, seed 0's last batch only merges into
# skills whose lesson it keeps and re-promotes a general skill (it teaches nothing); seed 1's
# adds one.
SEED = 1


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace trained with the skills recipe (sim) for 12 episodes: 3 batches of 4."""
    from evolve.workspace import init_workspace

    ws = init_workspace(tmp_path_factory.mktemp("skills") / "ws")
    report = train(ws, recipe="skills", episodes=12, seed=SEED)
    assert len(report.outcomes) == 12
    return ws.root


def _copy(trained: Path, tmp_path: Path) -> Workspace:
    import shutil

    shutil.copytree(trained, tmp_path / "ws", symlinks=True)
    return Workspace(tmp_path / "ws")


def test_one_commit_per_batch_with_the_verdict_trailers(trained: Path) -> None:
    ws = Workspace(trained)
    store = ws.store
    commits = _batch_commits(store)
    assert 1 <= len(commits) <= 3
    every = store.git("log", "--format=%H", "HEAD").split()
    assert len(every) == len(commits) + 1  # init + the batch commits: no per-episode commits
    seen_batches = set()
    for sha in commits:
        info = store.commit_info(sha)
        t = info.trailers
        episodes = [int(e) for e in t["Evolve-Episodes"].split()]
        assert len(episodes) == 4 and episodes == list(range(episodes[0], episodes[0] + 4))
        assert int(t["Evolve-Episode"]) == episodes[-1]
        assert int(t["Evolve-Batch"]) == episodes[0] // 4
        seen_batches.add(t["Evolve-Batch"])
        assert t["Evolve-Recipe"] == "skills" and t["Evolve-Persona"] == "alex"
        assert t["Evolve-Stream"] == f"alex/skills/{SEED}/instance"
        ops = parse_ops(t["Evolve-Ops"])
        assert ops and {op for op, _ in ops} <= VERBS
        body = info.body
        assert "Candidates:" in body
        refs = [op_ref for op, op_ref in ops if op in ("skip", "refused")]
        for ref in refs:
            assert f"- {ref} (episode " in body
        for line in body.splitlines():
            if line.startswith("- c") and "(episode " in line:
                assert any(f": {v}" in line for v in ("ADD", "MERGE", "REVISE", "SKIP", "REFUSED"))
        # the subject counts the verdicts
        assert info.subject.startswith(f"skills · alex · batch {t['Evolve-Batch']} (episodes ")
    assert len(seen_batches) == len(commits)
    # the files are skill units on their shelves
    for unit in live_skills(load_units(ws.root)).values():
        path = ws.root / str(unit.path())
        # the file holds what the skill says; its scoreboard counters are in the sidecar
        assert parse_unit(str(unit.path()), path.read_text(encoding="utf-8")) == without_counters(
            unit
        )
        assert str(unit.path()).startswith(("memory/skills/general/", "memory/skills/topics/"))


def test_revert_of_a_batch_commit_restores_the_shelves_and_tombstones_its_lessons(
    trained: Path, tmp_path: Path
) -> None:
    ws = _copy(trained, tmp_path)
    store = ws.store
    sha = _batch_commits(store)[-1]
    before = _shelves(load_units_at(store, f"{sha}^"))
    taught = {
        u.id: u.text
        for u in live_skills(load_units_at(store, sha)).values()
        if before.get(u.id, (None, None))[1] != u.text
    }
    assert taught, "the last batch taught nothing; pick a seed whose batch adds or merges"
    result = revert(ws, sha)
    units = load_units(ws.root)
    assert _shelves(units) == before
    assert store.read("HEAD", "memory/skills/_staging.yaml") == store.read(
        f"{sha}^", "memory/skills/_staging.yaml"
    )
    stones = [u for u in units if u.status == "tombstoned"]
    assert {s.text for s in stones} >= set(taught.values())
    assert all(str(s.path()).startswith("memory/skills/") for s in stones)
    assert result.tombstones
    # a tombstoned lesson proposed again is refused by the applier
    text = next(iter(taught.values()))
    again = next(u for u in load_units_at(store, sha) if u.text == text).with_(id="skill-again")
    applied = MemoryApplier(ws, "global").apply(
        [Op(op="add", unit=again.with_(status="active"))], units
    )
    assert not applied.applied and "tombstoned" in applied.refused[0].reason


def test_an_interrupted_batch_leaves_no_half_written_files(
    trained: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _copy(trained, tmp_path)
    head = ws.store.head()

    class Killed(BaseException):
        pass

    def die(*args: object, **kwargs: object) -> str:
        raise Killed

    monkeypatch.setattr(GitStore, "commit", die)
    with pytest.raises(Killed):
        train(ws, recipe="skills", episodes=24, seed=SEED)
    monkeypatch.undo()
    written = ws.store.dirty_paths(["memory"])
    assert written, "the batch should have written files before the (failed) commit"
    report = train(
        Workspace(ws.root), recipe="skills", episodes=24, seed=SEED
    )  # recovers, then resumes
    assert report.start == 12
    assert ws.store.git("rev-parse", "HEAD~0") != head
    assert not ws.store.dirty_paths(["memory"])


def test_skill_files_are_read_by_memory_show_and_log(
    trained: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ws = _copy(trained, tmp_path)
    monkeypatch.chdir(ws.root)
    monkeypatch.delenv("EVOLVE_WORKSPACE", raising=False)
    unit = next(iter(live_skills(load_units(ws.root)).values()))
    shown = cli_json(capsys, "show", unit.id)
    assert json.dumps(shown).count(unit.id) >= 1
    log = cli_json(capsys, "log")
    batches = [e for e in log["entries"] if e["trailers"].get("Evolve-Kind") == BATCH_KIND]
    assert batches and all(e["recipe"] == "skills" and e["ops"] for e in batches)
    code, out, err = run_cli(capsys, "memory")
    assert code == 0, err
    assert unit.text not in out  # skills are injected in <skills>, not rendered as memory


def test_hand_written_skills_are_units_on_their_shelves(workspace: Workspace) -> None:
    folder = workspace.root / "memory/skills/topics/venmo"
    folder.mkdir(parents=True)
    (folder / "check-audience.md").write_text(
        "Confirm who can see a payment before sending it.\n", encoding="utf-8"
    )
    general = parse_unit(
        "memory/skills/general/verify.md",
        "---\nid: verify\nrecipe: hand\nkind: skill\nshelf: general\ntrigger: any task that writes\n---\nRead it back.\n",
    )
    (workspace.root / "memory/skills/general").mkdir()
    (workspace.root / "memory/skills/general/verify.md").write_text(
        dump_unit(general), encoding="utf-8"
    )
    units = {u.id: u for u in load_units(workspace.root)}
    plain = units["check-audience"]
    assert (plain.recipe, plain.kind, plain.shelf, plain.topic) == (
        "hand",
        "skill",
        "topic",
        "venmo",
    )
    assert units["verify"].trigger == "any task that writes" and units["verify"].is_hand_written
    assert set(live_skills(list(units.values()))) == {"check-audience", "verify"}


def test_revert_of_an_older_batch_does_not_conflict_on_the_staging_area(
    trained: Path, tmp_path: Path
) -> None:
    from evolve.skills._staging import take_back

    ws = _copy(trained, tmp_path)
    store = ws.store
    first = _batch_commits(store)[0]
    path = "memory/skills/_staging.yaml"
    expected = take_back(
        store.read(f"{first}^", path), store.read(first, path), store.read("HEAD", path)
    )
    revert(ws, first)
    assert store.read("HEAD", path) == expected


def test_train_reports_each_batch_commit_with_its_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evolve train` lists a skills batch's commit as its subject does (it said
    `episode 3 pay_back-2: ` with nothing after the colon), `--json` with the batch."""
    from evolve.workspace import init_workspace

    ws = init_workspace(tmp_path / "ws", skills=True)
    code, out, err = run_cli(capsys, "train", "--episodes", "8", "--workspace", str(ws.root))
    assert code == 0, err
    store = ws.store
    commits = _batch_commits(store)
    assert commits
    for sha in commits:
        subject = store.commit_info(sha).subject
        verdicts = subject.split("): ", 1)[1]
        shown = subject.split(" · ")[2]  # "batch N (episodes a-b): add 1, ..."
        assert f"  {sha[:10]} {shown}\n" in out and verdicts != "no changes"
    report = cli_json(capsys, "train", "--episodes", "12", "--workspace", str(ws.root))
    ended = [o for o in report["outcomes"] if o["commit"]]
    assert ended and all(o["batch"] == o["episode"] // 4 for o in ended)
    assert all(
        o["batch_episodes"] == list(range(o["episode"] - 3, o["episode"] + 1)) for o in ended
    )
    assert all(o["ops"] and set(o["ops"]) <= VERBS | {"count"} for o in ended)
