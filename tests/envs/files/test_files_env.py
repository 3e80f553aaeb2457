"""The `files` environment: tasks, checkers and tools from evalset files, and bad files
refused in one sentence naming the file and the line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.envs import Environment, Filled, Judgement, capabilities, make_env, personas_of
from evolve.envs.files import SUBMIT, FilesEnv
from evolve.errors import ConfigError

TASKS = [
    {"id": "t1", "split": "train", "instruction": "Say hi.", "inputs": {"name": "Ana"},
     "expected": "hi"},
    {"id": "t2", "split": "dev", "instruction": "Say hi.", "inputs": {"name": "Ben"},
     "expected": "hi"},
    {"id": "t3", "split": "holdout", "instruction": "Say bye.", "expected": "bye"},
]  # fmt: skip

CHECKS = """
def check(task, answer):
    if task.expected not in str(answer):
        return "You did not answer."


def rule_names_me(task, answer):
    name = task.inputs.get("name")
    if name is None:
        return None
    return True if name in str(answer) else ("You forgot me.", f"Call me {name}.")


def rule_short(answer, calls):
    return len(str(answer)) < 40 or "Too long."
"""

TOOLS = '''
PEOPLE = {"Ana": "a friend"}


def who(name, task):
    """Who a person is."""
    assert task.id
    return PEOPLE[name]
'''


def _evalset(
    tmp_path: Path, *, tasks: str | None = None, checks: str = CHECKS, tools: str | None = TOOLS
) -> Path:
    evalset = tmp_path / "evalset"
    evalset.mkdir(exist_ok=True)
    lines = tasks if tasks is not None else "\n".join(json.dumps(t) for t in TASKS) + "\n"
    (evalset / "tasks.jsonl").write_text(lines, "utf-8")
    (evalset / "checks.py").write_text(checks, "utf-8")
    if tools is not None:
        (evalset / "tools.py").write_text(tools, "utf-8")
    return evalset


def _play(env: Environment, task_id: str, *calls: tuple[str, dict[str, object]]) -> Judgement:
    task = env.task(task_id)
    world = env.new_world(task, "user", env.initial_history("user"))
    for tool, args in calls:
        world.call(tool, args)
    return env.judge(task, "user", world, None, None)


def test_tasks_by_split_with_inputs_shown_and_expected_kept_from_the_agent(
    tmp_path: Path,
) -> None:
    env = make_env("files", _evalset(tmp_path))
    assert [t.id for t in env.tasks("train")] == ["t1"]
    assert [t.id for t in env.tasks("holdout")] == ["t3"]
    task = env.task("t2")
    assert '"name": "Ben"' in task.instruction and "hi" not in task.instruction.split("\n")[-1]
    assert "expected" not in task.params
    assert env.tools() == ["tools__who", SUBMIT]
    assert "tools__who(name): Who a person is." in env.api_docs()


def test_the_files_environment_declares_rule_names_only(tmp_path: Path) -> None:
    env = make_env("files", _evalset(tmp_path))
    assert isinstance(env, Filled) and isinstance(env.inner, FilesEnv)
    assert capabilities(env) == {"rule_names"}
    assert personas_of(env) is None  # one implicit user
    assert env.personas() == [] and env.initial_history("anyone") is None
    assert env.stats(env.task("t1"), "anyone", None) == []
    assert env.rule_names() == ["names_me", "short"]
    with pytest.raises(ConfigError, match="states no user preferences"):
        env.oracle_statements("anyone", None)


def test_persona_world_declares_every_capability_and_is_not_wrapped() -> None:
    env = make_env("persona_world", Path(__file__).parents[3] / "evalset")
    assert not isinstance(env, Filled) and isinstance(env, Environment)
    assert capabilities(env) == {"personas", "drift", "stats", "oracle", "rule_names"}
    assert personas_of(env) == env.personas()


def test_judge_task_success_rules_and_both_tiers(tmp_path: Path) -> None:
    env = make_env("files", _evalset(tmp_path))
    good = _play(env, "t1", ("tools__who", {"name": "Ana"}), (SUBMIT, {"answer": "hi Ana"}))
    assert good.task_success and good.accepted and good.applicable == ("names_me", "short")
    bad = _play(env, "t1", (SUBMIT, {"answer": "hi there " * 6}))
    assert bad.task_success and not bad.accepted
    assert [v.rule for v in bad.violations] == ["names_me", "short"]
    fb = env.feedback(env.task("t1"), bad, "instance")
    assert fb.text == "You forgot me.\nToo long."
    assert env.feedback(env.task("t1"), bad, "corrective").text == "Call me Ana.\nToo long."
    wrong = _play(env, "t3", (SUBMIT, {"answer": "hello"}))
    assert not wrong.task_success and wrong.failure == "You did not answer."
    assert wrong.applicable == ("short",)  # names_me does not apply: no name
    silent = _play(env, "t3")
    assert silent.failure == "You never gave me an answer."


def test_tool_calls_are_recorded_and_a_tool_error_is_the_agents_to_see(tmp_path: Path) -> None:
    env = make_env("files", _evalset(tmp_path))
    world = env.new_world(env.task("t1"), "user", None)
    ok = world.call("tools__who", {"name": "Ana"})
    assert ok.ok and ok.result == "a friend"
    missing = world.call("tools__who", {"name": "Zed"})
    assert not missing.ok and missing.error is not None and "KeyError" in missing.error
    sneaky = world.call("tools__who", {"name": "Ana", "task": "x"})
    assert not sneaky.ok  # `task` is the environment's to give, never the agent's
    assert not world.call("tools__nosuch", {}).ok
    assert not world.call(SUBMIT, {"text": "hi"}).ok
    assert [c.tool for c in world.calls] == ["tools__who"] * 3 + ["tools__nosuch", SUBMIT]
    assert not world.completed


@pytest.mark.parametrize(
    ("tasks", "checks", "tools", "said"),
    [
        ('{"id": "a", "split": "train", "instruction": "x"}\n{"id": "b"', CHECKS, None,
         "evalset/tasks.jsonl line 2 is not valid JSON"),
        ('{"id": "a", "split": "train", "instruction": "x"}\n\n[1]\n', CHECKS, None,
         "evalset/tasks.jsonl line 3 is not a JSON object"),
        ('{"id": "a", "split": "test", "instruction": "x"}\n', CHECKS, None,
         "evalset/tasks.jsonl line 1: split 'test' is not one of train, dev, holdout."),
        ('{"id": "a", "split": "dev", "instruction": "x", "answer": 1}\n', CHECKS, None,
         "evalset/tasks.jsonl line 1: unknown key 'answer'"),
        ('{"id": "a b", "split": "dev", "instruction": "x"}\n', CHECKS, None,
         "evalset/tasks.jsonl line 1: id 'a b' must be"),
        ('{"id": "a", "split": "dev", "instruction": "x"}\n' * 2, CHECKS, None,
         "evalset/tasks.jsonl line 2: task id 'a' is taken by line 1"),
        ('{"split": "dev", "instruction": "x"}\n', CHECKS, None,
         "evalset/tasks.jsonl line 1: the task has no 'id'."),
        ("\n", CHECKS, None, "evalset/tasks.jsonl holds no task"),
        (None, "def check(answer):\n    return (\n", None,
         "evalset/checks.py line 2: "),
        (None, "x = 1\n\nraise RuntimeError('boom')\n", None,
         "evalset/checks.py line 3: running it raised RuntimeError: boom"),
        (None, "x = 1\n\n\ndef check(reply):\n    return True\n", None,
         "evalset/checks.py line 4: check takes 'reply'; a checker takes any of task, answer,"),
        (None, "def helper(answer):\n    return True\n", None,
         "evalset/checks.py defines no checker"),
        (None, CHECKS, "def submit(answer):\n    return 1\n",
         "evalset/tools.py line 1: 'submit' is evolve's own tool"),
        (None, CHECKS, "import nosuchmodule_x\n",
         "evalset/tools.py line 1: running it raised ModuleNotFoundError"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_sentence_naming_file_and_line(
    tmp_path: Path, tasks: str | None, checks: str, tools: str | None, said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        FilesEnv(_evalset(tmp_path, tasks=tasks, checks=checks, tools=tools))
    message = str(caught.value)
    assert message.startswith(said), message
    assert "\n" not in message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    evalset = _evalset(tmp_path)
    (evalset / "checks.py").unlink()
    with pytest.raises(ConfigError, match=r"^evalset/checks.py is missing"):
        FilesEnv(evalset)
    (evalset / "tasks.jsonl").unlink()
    with pytest.raises(ConfigError, match=r"^evalset/tasks.jsonl is missing"):
        FilesEnv(evalset)


def test_a_checker_that_raises_or_returns_nonsense_names_its_line(tmp_path: Path) -> None:
    checks = (
        "def check(answer):\n    return answer.upper()\n\n\ndef rule_x(answer):\n    return 3\n"
    )
    env = make_env("files", _evalset(tmp_path, checks=checks))
    with pytest.raises(
        ConfigError, match=r"^evalset/checks.py line 2: check raised AttributeError"
    ):
        _play(env, "t1", (SUBMIT, {"answer": None}))
    with pytest.raises(ConfigError, match=r"^evalset/checks.py line 5: rule_x returned int"):
        _play(env, "t1", (SUBMIT, {"answer": "hi"}))


def test_a_link_out_of_the_evalset_is_refused(tmp_path: Path) -> None:
    evalset = _evalset(tmp_path)
    outside = tmp_path / "elsewhere.py"
    outside.write_text(CHECKS, "utf-8")
    (evalset / "checks.py").unlink()
    (evalset / "checks.py").symlink_to(outside)
    with pytest.raises(Exception, match="link"):
        FilesEnv(evalset)


def test_evolve_init_env_files_scaffolds_a_workspace_its_own_health_probes_pass(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "init", "--env", "files", str(tmp_path / "ws")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "ws"
    assert "environment: files" in (ws / "evolve.yaml").read_text("utf-8")
    assert sorted(p.name for p in (ws / "evalset").iterdir()) == [
        "checks.py", "tasks.jsonl", "tools.py",
    ]  # fmt: skip
    env = make_env("files", ws / "evalset")
    assert all(env.tasks(s) for s in ("train", "dev", "holdout"))
    task = env.tasks("dev")[0]
    world = env.new_world(task, "user", None)
    hours = world.call("tools__opening_hours", {"day": "saturday"})
    world.call(SUBMIT, {"answer": f"Hi Cleo, we open at {hours.result['opens']}."})
    assert env.judge(task, "user", world, None, None).accepted
    probes = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/health"],
        cwd=ws, capture_output=True, text=True,
    )  # fmt: skip
    assert probes.returncode == 0, probes.stdout + probes.stderr


def test_a_bad_tasks_file_stops_evolve_run_with_one_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    subprocess.run(
        [sys.executable, "-m", "evolve", "init", "--env", "files", str(ws)],
        capture_output=True, check=True,
    )  # fmt: skip
    with (ws / "evalset" / "tasks.jsonl").open("a", encoding="utf-8") as out:
        out.write('{"id": "x", "split": "dev"\n')
    subprocess.run(["git", "commit", "-qam", "a bad line"], cwd=ws, check=True)
    done = subprocess.run(
        [sys.executable, "-m", "evolve", "run", "--split", "dev"],
        cwd=ws, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0
    assert "evalset/tasks.jsonl line 5 is not valid JSON" in done.stderr
    assert "Traceback" not in done.stderr
