"""`init_workspace`: the layout, the first commit, refusals and the persona override."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from evolve.errors import ConfigError, EvolveError
from evolve.store import KIND
from evolve.workspace import CONFIG_NAME, Workspace, find_root, init_workspace, load_config

RunGit = Callable[..., str]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() if p.is_file() else b"<dir>"
        for p in sorted(folder.rglob("*"))
    }


def test_layout_of_design_section_2(workspace: Workspace) -> None:
    root = workspace.root
    assert (root / CONFIG_NAME).is_file()
    for folder in ("prompts", "memory", "evalset", "tests", "generations"):
        assert (root / folder).is_dir(), folder
    assert (root / ".git").is_dir()
    assert (root / "prompts" / "system.md").read_text(encoding="utf-8").strip()
    assert (root / "evalset" / "splits.yaml").is_file()
    assert any((root / "evalset" / "personas").glob("*.yaml"))
    assert (root / "tests" / "health" / "test_workspace_health.py").is_file()
    assert not list(root.rglob("__pycache__"))
    assert not (root / "generations" / "runs").exists()


def test_one_commit_with_init_trailer(workspace: Workspace, run_git: RunGit) -> None:
    commits = list(workspace.store.log())
    assert len(commits) == 1
    assert commits[0].trailers == {KIND: "init"}
    assert commits[0].parents == ()
    assert run_git(workspace.root, "rev-list", "--count", "HEAD").strip() == "1"
    assert run_git(workspace.root, "symbolic-ref", "--short", "HEAD").strip() == "main"
    trailers = run_git(workspace.root, "log", "-1", "--format=%(trailers:key=Evolve-Kind)")
    assert trailers.strip() == "Evolve-Kind: init"


def test_tree_is_clean_and_everything_is_tracked(workspace: Workspace, run_git: RunGit) -> None:
    assert run_git(workspace.root, "status", "--porcelain", "--untracked-files=all") == ""
    tracked = set(run_git(workspace.root, "ls-files").split())
    assert {CONFIG_NAME, ".gitignore", "prompts/system.md", "memory/.gitkeep"} <= tracked
    assert "tests/health/test_workspace_health.py" in tracked
    on_disk = {
        p.relative_to(workspace.root).as_posix()
        for p in workspace.root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(workspace.root).parts
    }
    assert on_disk == tracked
    run_git(workspace.root, "fsck", "--strict", "--no-progress")


def test_gitignore_ignores_run_logs(workspace: Workspace, run_git: RunGit) -> None:
    runs = workspace.root / "generations" / "runs" / "x"
    runs.mkdir(parents=True)
    (runs / "episodes.jsonl").write_text("{}\n", encoding="utf-8")
    (workspace.root / "memory" / "note.md").write_text("a note\n", encoding="utf-8")
    ignored = run_git(workspace.root, "check-ignore", "generations/runs/x/episodes.jsonl")
    assert ignored.strip() == "generations/runs/x/episodes.jsonl"
    assert workspace.store.dirty_paths() == ["memory/note.md"]


def test_config_is_the_shipped_one(workspace: Workspace) -> None:
    assert workspace.config == load_config(workspace.root / CONFIG_NAME)
    assert workspace.config.persona == "alex"
    assert find_root(workspace.root / "memory") == workspace.root


def test_creates_missing_parents(tmp_path: Path) -> None:
    ws = init_workspace(tmp_path / "a" / "b" / "ws")
    assert (ws.root / CONFIG_NAME).is_file()


def test_accepts_an_existing_empty_folder(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    ws = init_workspace(target)
    assert ws.root == target.resolve()
    assert len(list(ws.store.log())) == 1


def test_refuses_a_non_empty_folder_and_leaves_it_untouched(tmp_path: Path) -> None:
    target = tmp_path / "busy"
    (target / "sub").mkdir(parents=True)
    (target / "notes.txt").write_text("mine\n", encoding="utf-8")
    (target / "sub" / "x.md").write_text("x\n", encoding="utf-8")
    before = _snapshot(target)
    with pytest.raises(EvolveError) as info:
        init_workspace(target)
    message = str(info.value)
    assert "not empty" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence
    assert _snapshot(target) == before


def test_refuses_a_folder_holding_only_a_dotfile(tmp_path: Path) -> None:
    target = tmp_path / "dot"
    target.mkdir()
    (target / ".envrc").write_text("x\n", encoding="utf-8")
    with pytest.raises(EvolveError, match="not empty"):
        init_workspace(target)
    assert _snapshot(target) == {".envrc": b"x\n"}


def test_refuses_a_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x", encoding="utf-8")
    with pytest.raises(EvolveError):
        init_workspace(target)
    assert target.read_text(encoding="utf-8") == "x"


def test_refuses_an_existing_workspace_and_leaves_it_untouched(
    workspace: Workspace, run_git: RunGit
) -> None:
    head = workspace.store.head()
    before = _snapshot(workspace.root)
    with pytest.raises(EvolveError) as info:
        init_workspace(workspace.root)
    message = str(info.value)
    assert "already an evolve workspace" in message
    assert message.count(". ") == 0 and message.endswith(".")
    assert _snapshot(workspace.root) == before
    assert workspace.store.head() == head
    assert run_git(workspace.root, "status", "--porcelain") == ""


def test_persona_override_is_written_and_committed(tmp_path: Path, run_git: RunGit) -> None:
    ws = init_workspace(tmp_path / "ws", persona="blair")
    assert ws.config.persona == "blair"
    data = yaml.safe_load((ws.root / CONFIG_NAME).read_text(encoding="utf-8"))
    assert data["persona"] == "blair"
    # the rest of the file is unchanged
    assert data["environment"] == "persona_world"
    assert data["models"]["agent"] == "sim"
    assert run_git(ws.root, "status", "--porcelain") == ""
    committed = run_git(ws.root, "show", f"HEAD:{CONFIG_NAME}")
    assert yaml.safe_load(committed)["persona"] == "blair"


@pytest.mark.parametrize("env", [None, "appworld"])  # appworld: its data need not be there
def test_a_persona_the_evalset_does_not_know_is_refused_and_nothing_is_left(
    tmp_path: Path, env: str | None
) -> None:
    # Every later command would refuse it (`evolve run`: unknown persona), so init does.
    target = tmp_path / "new" / "ws"  # init would create both folders: neither is left
    with pytest.raises(EvolveError) as info:
        init_workspace(target, persona="nobody", env=env)
    message = str(info.value)
    assert "unknown persona 'nobody'" in message and "alex, blair" in message
    assert "\n" not in message and not (tmp_path / "new").exists()


@pytest.mark.parametrize("skills", [False, True])
def test_the_reserved_persona_name_skills_is_refused(tmp_path: Path, skills: bool) -> None:
    # memory/skills/ holds the skill shelves: a persona named so would share its folder.
    target = tmp_path / "ws"
    target.mkdir()
    with pytest.raises(EvolveError, match="'skills' is reserved"):
        init_workspace(target, persona="skills", skills=skills)
    assert list(target.iterdir()) == []


def test_a_known_persona_is_accepted_with_skills_and_with_appworld(tmp_path: Path) -> None:
    assert init_workspace(tmp_path / "a", persona="dana", skills=True).config.persona == "dana"
    ws = init_workspace(tmp_path / "b", persona="blair", env="appworld")
    assert ws.config.persona == "blair" and ws.config.environment == "appworld"


@pytest.mark.parametrize("persona", ["a: b", "[x", "123", "true"])
def test_persona_that_breaks_the_config_is_refused_and_rolled_back(
    tmp_path: Path, persona: str
) -> None:
    target = tmp_path / "ws"
    with pytest.raises(EvolveError):  # ConfigError for "123"/"true", a naming error otherwise
        init_workspace(target, persona=persona)
    assert not target.exists()


def test_failed_init_in_an_existing_empty_folder_empties_it_again(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    target.mkdir()
    with pytest.raises(ConfigError):
        init_workspace(target, persona="123")  # valid name, but YAML reads it as a number
    assert target.is_dir()
    assert list(target.iterdir()) == []


def test_persona_cannot_inject_other_keys(tmp_path: Path) -> None:
    target = tmp_path / "ws"
    with pytest.raises(EvolveError):
        init_workspace(target, persona="alex\nenvironment: appworld")
    assert not target.exists()


def test_skills_sets_up_skill_compilation_in_the_first_commit(
    tmp_path: Path, run_git: RunGit
) -> None:
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.skills._select import settings_of

    ws = init_workspace(tmp_path / "ws", skills=True)
    config = ws.config
    assert config.train.recipe == "skills" and settings_of(config).enabled
    text = (ws.root / CONFIG_NAME).read_text(encoding="utf-8")
    assert "# skill compilation (recipe: skills; seed 003)" in text  # comments kept
    assert text.count("recipe: skills ") == 1 and "recipes: []" in text  # render untouched
    tracked = run_git(ws.root, "ls-files").split()
    assert "evalset/procedures.yaml" in tracked and len(list(ws.store.log())) == 1
    assert run_git(ws.root, "status", "--porcelain") == ""
    train_ids = {t.id for t in PersonaWorldEnv(ws.root / "evalset").tasks("train")}
    assert any("-verify-" in t for t in train_ids) and any("-lookup-" in t for t in train_ids)
    plain = init_workspace(tmp_path / "plain")
    assert plain.config.train.recipe == "ace"
    assert not (plain.root / "evalset" / "procedures.yaml").exists()
