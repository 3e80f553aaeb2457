"""`evolve run --json` on its fast path (`evolve.evaluate._fast`) writes exactly what the click
command writes: the same JSON on stdout, the same stderr, the same run log (episode timings
aside, which no two runs share), with and without memory, remembered settings and memory
included; every case it does not answer goes to the click command with nothing written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.cli import _fast
from evolve.cli._group import run as run_click
from evolve.cli._main import main
from evolve.errors import ConfigError
from evolve.evaluate import _fast as fast_run
from evolve.evaluate._settings import RUN_CACHE
from evolve.memory import MemoryUnit, dump_unit
from evolve.workspace import Workspace

_TIMING = re.compile(r'("duration_s": ?)[0-9.e-]+')
_TEXT_TIMING = re.compile(r"  time [0-9.]+s$", re.MULTILINE)


def _timeless(text: str) -> str:
    return _TEXT_TIMING.sub("  time 0s", _TIMING.sub(r"\g<1>0", text))


def _logs(root: Path) -> set[Path]:
    runs = root / "generations" / "runs"
    return set(runs.iterdir()) if runs.is_dir() else set()


def _one(
    ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str], *, fast: bool
) -> tuple[str, str, dict[str, str]]:
    """(stdout, stderr, run-log files) of one run, timings zeroed and the log folder named
    the same, by the fast path (which must answer) or by the click command."""
    before = _logs(ws.root)
    capsys.readouterr()
    rc = _fast.run(argv) if fast else run_click(argv)
    assert rc == 0
    out, err = capsys.readouterr()
    (folder,) = _logs(ws.root) - before
    files = {p.name: _timeless(p.read_text(encoding="utf-8")) for p in sorted(folder.iterdir())}
    out = _timeless(out).replace(folder.name, "LOG")
    files = {name: text.replace(folder.name, "LOG") for name, text in files.items()}
    return out, err, files


def _same(ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """The fast path's stdout, checked against the click command's (and the log's)."""
    return _both(ws, capsys, argv)[0]


def _both(
    ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> tuple[str, str, dict[str, str]]:
    fast = _one(ws, capsys, argv, fast=True)
    again = _one(ws, capsys, argv, fast=True)  # remembered settings, memory and parse
    slow = _one(ws, capsys, argv, fast=False)
    assert fast == slow
    assert again == slow
    return fast


def _put(ws: Workspace, unit: MemoryUnit) -> str:
    rel = unit.path().as_posix()
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_unit(unit), encoding="utf-8")
    return rel


def _with_memory(ws: Workspace) -> None:
    """Committed units the persona world reads (and one it does not), plus an uncommitted one."""
    texts = ["Payments should be private.", "Sign texts with '- Alex'.", "Buy milk on Fridays."]
    paths = [
        _put(
            ws,
            MemoryUnit(
                id=f"ace-0000000{i}",
                recipe="ace",
                kind="bullet",
                scope="user:alex",
                created_episode=i,
                updated_episode=i,
                text=text,
            ),
        )  # fmt: skip
        for i, text in enumerate(texts)
    ]
    ws.store.commit(paths, "ace: three", trailers=[("Evolve-Episode", "1")])
    _put(
        ws,
        MemoryUnit(
            id="ace-00000009", recipe="ace", kind="bullet", scope="user:alex",
            created_episode=9, updated_episode=9, text="Start e-mails with 'Hi'.",
        ),
    )  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--split", "dev", "--json"],
        ["run", "--json", "--split=holdout", "--runs", "2", "--seed", "7"],
        ["run", "--split", "dev", "--json", "--inject", "none", "--concurrency", "4"],
        ["run", "--split", "dev", "--json", "--inject", "oracle", "--persona", "alex"],
        ["run", "--split", "dev"],
        ["run", "--split", "train", "--runs", "3", "--persona", "blair"],
    ],
    ids=" ".join,
)
def test_fast_run_writes_what_the_click_command_writes(
    ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    out = _same(ws, capsys, argv)
    if "--json" in argv:
        assert json.loads(out)["uncommitted"] == []
    else:
        assert "\u2503 rule " in out and out.endswith("episode logs: generations/runs/LOG\n")


def test_with_memory_and_uncommitted_changes(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_memory(ws)
    out = _same(ws, capsys, ["run", "--split", "dev", "--json"])
    assert json.loads(out)["uncommitted"] == ["memory/alex/ace-00000009.md"]
    fast = _one(ws, capsys, ["run", "--split", "dev", "--json"], fast=True)
    assert fast[1].startswith("warning: memory/ or prompts/ has uncommitted changes")


def test_a_changed_unit_config_or_parameter_is_read_again(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_memory(ws)
    argv = ["run", "--split", "dev", "--json"]
    first = _both(ws, capsys, argv)[2]["episodes.jsonl"]
    path = ws.root / "memory/alex/ace-00000009.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("Start e-mails with 'Hi'.", "Pay privately."),
        encoding="utf-8",
    )
    second = _both(ws, capsys, argv)[2]["episodes.jsonl"]
    assert second != first  # the prompt is shorter by the changed unit
    config = ws.root / "evolve.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("  runs: 1", "  runs: 2"), encoding="utf-8"
    )
    third = _same(ws, capsys, argv)
    assert json.loads(third)["runs"] == 2
    (ws.root / "prompts" / "parameters.yaml").write_text("agent.max_turns: 4\n", encoding="utf-8")
    assert _same(ws, capsys, argv) != third  # four turns finish fewer tasks
    assert (ws.store.git_dir / RUN_CACHE).is_file()


def test_an_invalid_configuration_is_refused_in_one_sentence(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--split", "dev", "--json"]
    assert main(argv) == 0  # remembered settings for the valid file
    config = ws.root / "evolve.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "bogus: 1\n", encoding="utf-8")
    before = _logs(ws.root)
    capsys.readouterr()
    assert _fast.run(argv) is None
    assert capsys.readouterr() == ("", "")
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "unknown key 'bogus'" in err
    (ws.root / "prompts" / "parameters.yaml").write_text("agent.max_turns: 99\n", "utf-8")
    config.write_text(config.read_text(encoding="utf-8").replace("bogus: 1\n", ""), "utf-8")
    assert _fast.run(argv) is None
    assert main(argv) == 1
    assert "outside its range" in capsys.readouterr().err
    assert _logs(ws.root) == before


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--split", "dev", "--json", "--model", "sim"],
        ["run", "--split", "dev", "--json", "--executor", "serial"],
        ["run", "--split", "dev", "--json", "--inject", "fixed"],
        ["run", "--split", "dev", "--json", "--runs", "0"],
        ["run", "--split", "dev", "--json", "--runs", "51"],
        ["run", "--split", "Dev", "--json"],
        ["run", "--split", "dev", "--json", "--persona", "nobody"],
        ["run", "--split", "dev", "--json", "extra"],
        ["run", "--json"],
        ["run", "--split", "dev", "--json", "--help"],
    ],
    ids=" ".join,
)
def test_other_forms_are_left_to_click(
    ws: Workspace, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    before = _logs(ws.root)
    capsys.readouterr()
    assert _fast.run(argv) is None
    assert capsys.readouterr() == ("", "")
    assert _logs(ws.root) == before


@pytest.mark.parametrize("name", ["EVOLVE_MODEL", "EVOLVE_CACHE", "FORCE_COLOR", "COLUMNS"])
def test_the_environment_that_changes_the_full_command_is_left_to_click(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, "sim" if name == "EVOLVE_MODEL" else "1")
    argv = ["run", "--split", "dev"] + ([] if name == "COLUMNS" else ["--json"])
    assert _fast.run(argv) is None


@pytest.mark.parametrize("rules", [1, 3, 12])
@pytest.mark.parametrize("counts", [(0, 1), (7, 9), (123, 4567)])
def test_the_text_report_is_what_rich_prints(rules: int, counts: tuple[int, int]) -> None:
    import io

    from rich.console import Console
    from rich.table import Table

    from evolve._format._views import report_lines, report_rows, report_text
    from evolve.cli import _run as cli_run
    from evolve.episode import EpisodeRecord
    from evolve.evaluate import SplitReport

    names = ["email_signoff", "a", "private_note_format_rule_x"] * 4
    record = EpisodeRecord(
        task_id="t", family="f", split="dev", persona="alex", run=0, seed=0, model="sim",
        turns=[], hit_turn_limit=False, final_state={}, task_success=True, failure=None,
        applicable_rules=[f"{names[i]}_{i}" for i in range(rules)],
        violations={f"{names[0]}_0": "x"}, accepted=False, input_tokens=counts[1],
        output_tokens=counts[0], prompt_chars=1, duration_s=0.5,
    )  # fmt: skip
    report = SplitReport("dev", "alex", "sim", 2, [record] * counts[0], 1.25, "generations/x")
    report.seed = counts[1]
    # The table as rich lays it out (what `print_report` printed before it drew plain
    # streams itself), on a stream that is not a terminal.
    drawn = io.StringIO()
    rich = Console(file=drawn, highlight=False, soft_wrap=True)
    head, scores = report_lines(report)
    rich.print(head)
    rich.print(scores)
    table = Table(show_header=True, header_style="bold")
    table.add_column("rule")
    for column in ("violations", "applicable", "rate"):
        table.add_column(column, justify="right")
    for row in report_rows(report):
        table.add_row(*row)
    rich.print(table)
    text = report_text(report)
    if counts[0] == 0:
        assert text is None  # no rows: left to rich
    else:
        assert text == drawn.getvalue()
    # `evolve run` prints the same, and the log folder after it.
    buffer = io.StringIO()
    real = vars(cli_run).get("stdout")
    cli_run.stdout = Console(file=buffer, highlight=False, soft_wrap=True)  # type: ignore[attr-defined]
    try:
        cli_run.print_report(report)
    finally:
        if real is not None:
            cli_run.stdout = real  # type: ignore[attr-defined]
    assert buffer.getvalue() == drawn.getvalue() + "episode logs: generations/x\n"


def test_enforcing_units_and_a_journal_are_left_to_click(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ws.root / "evolve.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("recipe: ace", "recipe: trace"), "utf-8"
    )
    argv = ["run", "--split", "dev", "--json"]
    _same(ws, capsys, argv)  # no trace unit yet: answered
    unit = MemoryUnit(
        id="trace-0000000001", recipe="trace", kind="check", scope="user:alex",
        created_episode=1, updated_episode=1, api="venmo__create_transaction",
        argument="private", predicate="equals", value="true", text="Payments are private.",
    )  # fmt: skip
    _put(ws, unit)
    assert _fast.run(argv) is None
    assert _fast.run(argv) is None  # also once the answer is remembered
    (ws.root / "memory/alex" / f"{unit.id}.md").unlink()
    (ws.store.git_dir / "evolve-generation.json").write_text("{}", encoding="utf-8")
    assert _fast.run(argv) is None


def test_enforcing_lists_every_recipe_whose_verify_can_fail() -> None:
    from evolve.updaters import RECIPES

    def accepts(self: object, units: object, calls: object) -> list[str]:
        return []

    verifies = {name: vars(cls)["verify"] for name, cls in RECIPES.items()}  # each defines one
    enforcing = {
        name for name, v in verifies.items() if v.__code__.co_code != accepts.__code__.co_code
    }
    assert enforcing == fast_run.ENFORCING


def test_the_fast_parser_knows_the_run_commands_options() -> None:
    """Every option of the click command is read by the fast parser or left to click by name
    (a new option is never ignored: the parser sends what it does not know to click)."""
    import click

    from evolve.cli._group import cli
    from evolve.envs import SPLITS
    from evolve.evaluate import INJECT_MODES, _run
    from evolve.workspace import RUNS

    command = cli.get_command(click.Context(cli), "run")
    assert command is not None
    flags, options, short = _fast.SPEC["run"]
    left = {"--model", "--updater-model", "--reflector-model", "--cache", "--help"}
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        (name,) = [o for o in param.opts if o.startswith("--")]
        assert name in flags | options | left, name
        assert all(short.get(s) == name for s in param.opts if not s.startswith("--"))
    assert _fast.SPLITS == SPLITS and _fast.INJECT_MODES == INJECT_MODES
    assert _run.RUNS == RUNS


def _loaded(root: Path, argv: list[str]) -> list[str]:
    code = (
        "import sys\n"
        "from evolve.cli._main import main\n"
        f"rc = main({argv!r})\n"
        "print('LOADED:' + ' '.join(sorted(sys.modules)))\n"
        "sys.exit(rc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rsplit("LOADED:", 1)[1].split()


NEVER = (
    "click", "rich", "git", "httpx", "pydantic", "pydantic_core", "yaml", "evolve.workspace",
    "evolve.store", "evolve.memory", "evolve.envs.persona_world._specs",
    "evolve.updaters", "evolve.applier", "evolve.skills", "evolve.review", "evolve.txn",
    "evolve.sim._roles", "evolve.evaluate._setup", "concurrent.futures", "logging",
    "evolve.sim._updater",
)  # fmt: skip


def test_run_imports_no_click_rich_gitpython_pydantic_or_yaml(workspace: Workspace) -> None:
    """Deterministic (`sys.modules`, not time). The first run validates evolve.yaml and the
    evalset with their models (pydantic, PyYAML) and remembers them in `.git/`; later runs
    import neither while the files are unchanged."""
    _with_memory(workspace)
    argv = ["run", "--split", "dev", "--json"]
    _loaded(workspace.root, argv)  # the first run validates evolve.yaml with the model, once
    loaded = _loaded(workspace.root, argv)
    heavy = [m for m in loaded if m.split(".")[0] in NEVER or m.startswith(NEVER)]
    assert heavy == [], heavy


def test_sim_roles_load_on_first_use() -> None:
    code = (
        "import sys\n"
        "import evolve.sim\n"
        "from evolve.sim._model import ROLES\n"
        "assert 'ace_deltas' not in ROLES and 'evolve.sim._roles' not in sys.modules\n"
        "assert {'ace_deltas', 'skill_selection', 'skill_evolve'} <= set(evolve.sim.ROLES)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_sims_parse_is_remembered_across_processes(tmp_path: Path) -> None:
    from evolve.sim import _agent

    store = str(tmp_path / "sim.cache")
    prompt = "<memory>\n- Payments should be private.\n- Sign texts with '- Alex'.\n</memory>"
    expected = _agent._parse_directives(prompt)
    try:
        _agent.remember_directives(store)
        _agent.PROMPTS.clear()
        assert _agent.read_directives(prompt) == dict(expected)
        assert _agent.STORE is not None and _agent.STORE.parsed == 1
        _agent.remember_directives(store)  # as a new process: an empty store object
        _agent.PROMPTS.clear()
        assert _agent.read_directives(prompt) == dict(expected)
        assert _agent.STORE is not None and _agent.STORE.parsed == 0  # read back, not parsed
        Path(store).write_bytes(b"not marshal")
        _agent.remember_directives(store)
        _agent.PROMPTS.clear()
        assert _agent.read_directives(prompt) == dict(expected)
        assert _agent.STORE is not None and _agent.STORE.parsed == 1
    finally:
        _agent.remember_directives(None)
        _agent.PROMPTS.clear()


def test_the_remembered_evalset_is_what_validation_gives(tmp_path: Path) -> None:
    import shutil

    from evolve.envs.persona_world import PersonaWorldEnv

    evalset = tmp_path / "evalset"
    shutil.copytree(Path(__file__).resolve().parents[2] / "evalset", evalset)
    cache = str(tmp_path / "evalset.cache")
    plain = PersonaWorldEnv(evalset)
    first = PersonaWorldEnv(evalset, remember=cache)  # validates, then remembers
    assert Path(cache).is_file()
    again = PersonaWorldEnv(evalset, remember=cache)  # read back
    for env in (first, again):
        assert env.personas() == plain.personas()
        for split in ("train", "dev", "holdout"):
            assert env.tasks(split) == plain.tasks(split)
        for name in plain.personas():
            assert env.persona(name) == plain.persona(name)
            assert env.oracle_statements(name, None) == plain.oracle_statements(name, None)
    persona = evalset / "personas" / "alex.yaml"
    persona.write_text(persona.read_text(encoding="utf-8") + "bogus: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a valid persona"):
        PersonaWorldEnv(evalset, remember=cache)  # an edit is validated again
