"""A key given twice in a hand-editable YAML file is refused, never silently the last one.

Every reader of such a file (`evolve._yaml.load`): the skills' `_strata.yaml`, `_staging.yaml`,
`_failed_tasks.yaml`, the counters sidecars, unit front matter, `evolve.yaml`,
`prompts/parameters.yaml`, evalset files and experiment files; the stdlib fast readers
(`evolve.quick`) agree; and the commands say so in one sentence with nothing written.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conftest import GitRunner, one_sentence, run_cli, workspace_state
from evolve._yaml import DuplicateKey, load
from evolve.errors import ConfigError, EvolveError
from evolve.memory import MalformedUnit, parse_counters, parse_unit
from evolve.quick._read import parse_counters_or_full, parse_or_full
from evolve.skills._failed import FAILED_PATH, parse_failed
from evolve.skills._staging import STAGING_PATH, parse_staging
from evolve.skills._strata import STRATA_PATH, parse_strata
from evolve.workspace import Workspace, load_parameters
from evolve.workspace._config import parse_config

_SAYS = "gives the key {key!r} twice (lines {a} and {b}); keep one of them and retry."


def _says(source: str, key: str, a: int, b: int) -> str:
    return f"{source} " + _SAYS.format(key=key, a=a, b=b)


# --- the loader ------------------------------------------------------------------------------


def test_a_key_twice_at_any_depth_names_the_file_the_key_and_both_lines() -> None:
    text = "top:\n  - name: a\n    deep:\n      x: 1\n      y: 2\n      x: 3\n"
    with pytest.raises(DuplicateKey) as info:
        load(text, "f.yaml")
    assert str(info.value) == _says("f.yaml", "x", 4, 6)
    assert (info.value.key, info.value.first, info.value.second) == ("x", 4, 6)
    with pytest.raises(DuplicateKey, match=r"'a' twice \(both on line 1\)"):
        load("{a: 1, a: 2}\n", "f.yaml")
    with pytest.raises(DuplicateKey, match=r"'top' twice \(lines 1 and 2\)"):
        load("top: 1\ntop: 2\n", "f.yaml")


def test_a_merge_and_the_keys_that_override_it_are_not_duplicates() -> None:
    text = "base: &b {a: 1, b: 2}\nmine:\n  <<: *b\n  a: 9\n"
    assert load(text, "f.yaml") == {"base": {"a": 1, "b": 2}, "mine": {"a": 9, "b": 2}}


def test_the_caller_chooses_the_error_type_and_a_line_offset() -> None:
    with pytest.raises(ConfigError, match=r"^g.yaml gives the key 'k' twice \(lines 3 and 4\)"):
        load("k: 1\nk: 2\n", "g.yaml", error=ConfigError, line_offset=2)


def test_invalid_yaml_is_left_to_the_caller() -> None:
    with pytest.raises(yaml.YAMLError):
        load("a: [1\n", "f.yaml")


# --- every file kind ---------------------------------------------------------------------------


def test_strata_refuses_a_skill_given_twice() -> None:
    raw = "s1:\n  t1: [1, 1, 0, 0]\ns1:\n  t2: [2, 2, 0, 0]\n"
    with pytest.raises(EvolveError) as info:
        parse_strata(raw)
    assert str(info.value) == _says(STRATA_PATH, "s1", 1, 3)


def test_strata_refuses_a_task_given_twice_under_one_skill() -> None:
    raw = "s1:\n  t1: [1, 1, 0, 0]\n  t1: [5, 0, 5, 5]\n"
    with pytest.raises(EvolveError, match=r"gives the key 't1' twice \(lines 2 and 3\)"):
        parse_strata(raw)


def test_staging_refuses_a_shape_or_a_topic_given_twice() -> None:
    shape = "verify:\n  topics: {gmail: 1}\n  evidence: []\n"
    with pytest.raises(EvolveError) as info:
        parse_staging(shape + shape)
    assert str(info.value) == _says(STAGING_PATH, "verify", 1, 4)
    with pytest.raises(EvolveError, match="'gmail' twice"):
        parse_staging("verify:\n  topics:\n    gmail: 1\n    gmail: 4\n  evidence: []\n")


def test_failed_tasks_refuses_a_mapping_with_a_key_twice() -> None:
    with pytest.raises(EvolveError) as info:
        parse_failed("t1: x\nt1: y\n")
    assert str(info.value) == _says(FAILED_PATH, "t1", 1, 2)


def test_a_counters_sidecar_refuses_a_unit_or_a_counter_given_twice() -> None:
    rel = "memory/alex/_counters.yaml"
    with pytest.raises(MalformedUnit) as info:
        parse_counters(rel, "u1:\n  helpful: 2\n  harmful: 0\n  helpful: 7\n")
    assert str(info.value) == _says(rel, "helpful", 2, 4)
    with pytest.raises(MalformedUnit, match="'u1' twice"):
        parse_counters(rel, "u1:\n  helpful: 2\nu1:\n  helpful: 3\n")


_UNIT = "---\nid: n1\nrecipe: ace\nkind: note\nscope: user:alex\nkind: note\n---\nSign as Alex.\n"


def test_unit_front_matter_refuses_a_field_given_twice_with_the_files_lines() -> None:
    with pytest.raises(MalformedUnit) as info:
        parse_unit("memory/alex/n1.md", _UNIT)
    # The front matter starts on the file's second line: the lines are the file's.
    assert str(info.value) == _says("memory/alex/n1.md", "kind", 4, 6)


def test_the_fast_readers_agree_with_the_full_ones() -> None:
    """`evolve.quick` reads canonical files without YAML; a key given twice is not canonical,
    so it leaves the file to the strict reader and says the same sentence."""
    with pytest.raises(MalformedUnit) as fast:
        parse_or_full("memory/alex/n1.md", _UNIT)
    with pytest.raises(MalformedUnit) as full:
        parse_unit("memory/alex/n1.md", _UNIT)
    assert str(fast.value) == str(full.value)
    rel, raw = "memory/alex/_counters.yaml", "u1:\n  helpful: 2\n  helpful: 7\n"
    with pytest.raises(MalformedUnit) as fast:
        parse_counters_or_full(rel, raw)
    with pytest.raises(MalformedUnit) as full:
        parse_counters(rel, raw)
    assert str(fast.value) == str(full.value) == _says(rel, "helpful", 2, 3)


def test_evolve_yaml_refuses_a_key_given_twice() -> None:
    text = "version: 1\ncaps:\n  ace: {units: 3}\n  ace: {units: 30}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="evolve.yaml")
    assert str(info.value) == _says("evolve.yaml", "ace", 3, 4)


def test_parameters_yaml_refuses_a_parameter_given_twice(workspace: Workspace) -> None:
    path = workspace.root / "prompts" / "parameters.yaml"
    path.write_text("agent.max_turns: 5\nagent.max_turns: 9\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_parameters(workspace.root, workspace.config)
    assert str(info.value) == _says("prompts/parameters.yaml", "agent.max_turns", 1, 2)


def test_evalset_files_refuse_a_key_given_twice(tmp_path: Path) -> None:
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.envs.persona_world._evalset import read_yaml
    from evolve.workspace import init_workspace

    evalset = tmp_path / "evalset"  # the evalset a new workspace gets
    shutil.copytree(init_workspace(tmp_path / "ws").root / "evalset", evalset)
    splits = evalset / "splits.yaml"
    splits.write_text(splits.read_text(encoding="utf-8") + "dev: []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"splits.yaml gives the key 'dev' twice \(lines \d+ and"):
        read_yaml(splits)
    with pytest.raises(ConfigError, match="gives the key 'dev' twice"):
        PersonaWorldEnv(evalset)


def test_the_procedures_file_refuses_a_key_given_twice(tmp_path: Path) -> None:
    from evolve.envs.persona_world._procedures import PROCEDURES_FILE, load_procedure_specs

    (tmp_path / PROCEDURES_FILE).write_text(
        "- id: verify-1\n  family: verify\n  id: verify-2\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        load_procedure_specs(tmp_path)
    assert str(info.value) == _says(str(tmp_path / PROCEDURES_FILE), "id", 1, 3)


def test_a_procedures_file_that_is_not_a_list_is_refused_not_ignored(tmp_path: Path) -> None:
    from evolve.envs.persona_world._procedures import PROCEDURES_FILE, load_procedure_specs

    assert load_procedure_specs(tmp_path) == []  # no file: no procedure tasks
    (tmp_path / PROCEDURES_FILE).write_text("# nothing yet\n", encoding="utf-8")
    assert load_procedure_specs(tmp_path) == []
    (tmp_path / PROCEDURES_FILE).write_text("id: verify-1\nfamily: verify\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="must be a list of tasks, not dict"):
        load_procedure_specs(tmp_path)


# --- the commands -------------------------------------------------------------------------------


@pytest.fixture
def trained(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> Workspace:
    """A workspace where the skills recipe has written its records (strata, staging)."""
    code, _, err = run_cli(
        capsys, "train", "--recipe", "skills", "--unrendered", "--episodes", "12"
    )
    assert code == 0, err
    assert (ws.root / STRATA_PATH).is_file() and (ws.root / STAGING_PATH).is_file()
    return ws


def _hand_edit(ws: Workspace, run_git: GitRunner, rel: str, edit: Callable[[str], str]) -> None:
    path = ws.root / rel
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    run_git(ws.root, "commit", "-qam", f"hand edit of {rel}")


def _refused(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str], *args: str
) -> str:
    before = (*workspace_state(ws.root, run_git), _train_ref(ws, run_git))
    code, _, err = run_cli(capsys, *args)
    assert code == 1, err
    assert "Traceback" not in err
    assert (*workspace_state(ws.root, run_git), _train_ref(ws, run_git)) == before
    return one_sentence(err)


def _train_ref(ws: Workspace, run_git: GitRunner) -> str:
    return run_git(ws.root, "for-each-ref", "refs/evolve")


def _twice_first_key(text: str) -> str:
    """`text` with its first top-level entry given again at the end."""
    lines = text.splitlines(keepends=True)
    end = next(i for i in range(1, len(lines)) if not lines[i].startswith(" "))
    return text + "".join(lines[:end])


def test_skills_and_train_refuse_a_strata_record_with_a_skill_twice(
    trained: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _hand_edit(trained, run_git, STRATA_PATH, _twice_first_key)
    for args in (("skills",), ("skills", "--json"), ("train", "--recipe", "skills",
                                                      "--unrendered", "--episodes", "16")):  # fmt: skip
        line = _refused(trained, run_git, capsys, *args)
        assert f"{STRATA_PATH} gives the key" in line and "twice (lines 1 and" in line


def test_train_refuses_a_staging_area_with_a_shape_twice(
    trained: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _hand_edit(trained, run_git, STAGING_PATH, _twice_first_key)
    line = _refused(
        trained, run_git, capsys, "train", "--recipe", "skills", "--unrendered", "--episodes", "16"
    )
    assert f"{STAGING_PATH} gives the key" in line and "twice (lines 1 and" in line


def test_train_refuses_a_failed_tasks_record_that_is_a_mapping_with_a_key_twice(
    trained: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    (trained.root / FAILED_PATH).write_text("t1: a\nt1: b\n", encoding="utf-8")
    run_git(trained.root, "add", "-A")
    run_git(trained.root, "commit", "-qm", "hand edit")
    line = _refused(
        trained, run_git, capsys, "train", "--recipe", "skills", "--unrendered", "--episodes", "16"
    )
    assert line == "error: " + _says(FAILED_PATH, "t1", 1, 2)


def _dup_trigger(text: str) -> str:
    return text.replace("\ntrigger:", "\ntrigger: a second trigger\ntrigger:", 1)


def test_every_command_refuses_a_skill_file_with_a_field_twice(
    trained: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    skill = sorted((trained.root / "memory" / "skills").rglob("*.md"))[0]
    rel = skill.relative_to(trained.root).as_posix()
    _hand_edit(trained, run_git, rel, _dup_trigger)
    for args in (
        ("skills",),
        ("run", "--split", "dev"),
        ("run", "--split", "dev", "--json"),
        ("memory",),
        ("train", "--recipe", "skills", "--unrendered", "--episodes", "16"),
    ):
        line = _refused(trained, run_git, capsys, *args)
        assert f"error: {rel} gives the key 'trigger' twice (lines" in line, (args, line)


@pytest.mark.parametrize(
    "rel, text, key",
    [
        ("memory/alex/n1.md", _UNIT, "kind"),
        ("prompts/parameters.yaml", "agent.max_turns: 5\nagent.max_turns: 9\n", "agent.max_turns"),
    ],
)
def test_run_refuses_a_file_with_a_key_twice_on_the_fast_path_too(
    ws: Workspace,
    run_git: GitRunner,
    capsys: pytest.CaptureFixture[str],
    rel: str,
    text: str,
    key: str,
) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    run_git(ws.root, "add", "-A")
    run_git(ws.root, "commit", "-qm", "hand edit")
    for args in (("run", "--split", "dev"), ("run", "--split", "dev", "--json")):
        line = _refused(ws, run_git, capsys, *args)
        assert f"gives the key {key!r} twice" in line and rel in line


def test_every_command_refuses_an_evolve_yaml_with_a_key_twice(
    ws: Workspace, run_git: GitRunner, capsys: pytest.CaptureFixture[str]
) -> None:
    _hand_edit(ws, run_git, "evolve.yaml", lambda t: t + "persona: blair\n")
    for args in (("run", "--split", "dev"), ("skills",), ("memory",), ("train", "--episodes", "1")):
        line = _refused(ws, run_git, capsys, *args)
        assert "evolve.yaml gives the key 'persona' twice" in line, (args, line)
