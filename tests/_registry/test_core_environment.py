"""An installed package whose environment implements only the core protocol (no personas,
no drift, no stats, no oracle, no rule names) runs `evolve train` and `evolve evolve
--dry-run` with no change to evolve. The package is a wheel built here, installed by pip
(offline) into a new virtual environment that sees this evolve; it also brings the model that
plays its tasks and the recipe that learns from them, through entry points."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from factories import evolve_with, plugin_wheel, venv_with_plugin

pytestmark = pytest.mark.slow


# Only the core protocol: name, tasks, task, api_docs, tools, new_world, judge, feedback.
# The model follows its memory: it signs a reply off once the rendered memory says so.
PACKAGE = '''
"""An environment, a model and a recipe from outside evolve (core protocol only)."""

import json

from evolve.envs import ApiCall, Feedback, Judgement, Task, Violation
from evolve.llm import Completion, Usage
from evolve.ops import Op
from evolve.updaters import Update
from evolve.workspace import RecipeCaps

SPLIT_OF = {"train": range(0, 8), "dev": range(8, 12), "holdout": range(12, 14)}
SIGN_OFF = "-- Greeter"


class World:
    def __init__(self):
        self.calls = []
        self.completed = False
        self.answer = None

    def call(self, tool, args):
        if tool == "desk__reply" and isinstance(args.get("text"), str):
            self.answer, self.completed = args["text"], True
            done = ApiCall("desk", "reply", dict(args), True, result="sent")
        else:
            done = ApiCall("desk", tool, dict(args), False, error="unknown tool")
        self.calls.append(done)
        return done


class Greeter:
    name = "greeter"

    def __init__(self, evalset):
        self._tasks = {}
        for split, numbers in SPLIT_OF.items():
            for n in numbers:
                task = Task(f"g{n}", f"{split}-{n}", "greet", split, f"Greet customer {n}.")
                self._tasks[task.id] = task

    def tasks(self, split):
        return [t for t in self._tasks.values() if t.split == split]

    def task(self, task_id):
        return self._tasks[task_id]

    def api_docs(self):
        return "desk__reply(text): send the reply"

    def tools(self):
        return ["desk__reply"]

    def new_world(self, task, persona, history):
        assert history is None  # no drift: the harness passes none
        return World()

    def judge(self, task, persona, world, history, episode):
        answer = world.answer or ""
        done = world.completed and "customer" in answer
        broken = () if answer.endswith(SIGN_OFF) else (
            Violation("sign_off", "You did not sign off.", f"End every reply with {SIGN_OFF}."),
        )
        return Judgement(done, None if done else "No reply.", ("sign_off",), broken)

    def feedback(self, task, judgement, tier):
        lines = [(judgement.failure, "task")] if judgement.failure else []
        lines += [(v.instance if tier == "instance" else v.corrective, v.rule)
                  for v in judgement.violations]
        return Feedback("\\n".join(t for t, _ in lines), tuple(lines))


class Bot:
    """Replies to a greet task; signs off when its memory says so; proposes no prompt edit."""

    name = "greetbot"

    def complete(self, messages, *, json_schema=None, temperature=0.0, seed=None,
                 max_tokens=None):
        name = json_schema.name if json_schema is not None else "text"
        if name == "agent_action":
            system = messages[0].content
            text = "Hello customer"
            if SIGN_OFF in system:
                text += " " + SIGN_OFF
            payload = {"tool": "desk__reply", "arguments": {"text": text}}
        else:
            payload = {"guidance": [], "edits": []}
        return Completion(text=json.dumps(payload), usage=Usage(10, 10), model=self.name)


def greetbot(variant, /, *, env=None, **options):
    return Bot()


class Corrective:
    """Writes the complaint's corrective line as a note."""

    name = "corrective"

    def default_caps(self, config):
        return RecipeCaps(units=5, chars=200)

    def render(self, units):
        return "\\n".join(f"[{u.id}] {u.text}" for u in units if u.status == "active")

    def verify(self, units, calls):
        return []

    def observe(self, ctx):
        update = Update()
        lines = [ln.strip("-* ").strip() for ln in ctx.episode.complaint.splitlines()]
        first = next((ln for ln in lines if ln), "")
        known = {u.text for u in ctx.mine(self.name) if u.status == "active"}
        if first and first[:200] not in known:
            update.ops = [Op(op="add", unit=ctx.new_unit(self.name, "note", first[:200]))]
        return update
'''

ENTRY_POINTS = """\
[evolve.environments]
greeter = evolve_greeter:Greeter

[evolve.models]
greetbot = evolve_greeter:greetbot

[evolve.recipes]
corrective = evolve_greeter:Corrective
"""


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a new venv that sees this evolve, with `evolve_greeter` installed offline."""
    root = tmp_path_factory.mktemp("core_env")
    return venv_with_plugin(root, plugin_wheel(root, "evolve_greeter", PACKAGE, ENTRY_POINTS))


_evolve = evolve_with


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def test_a_core_only_environment_trains_and_evolves(python: Path, tmp_path: Path) -> None:
    done = _evolve(python, tmp_path, "init", "ws")
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "ws"
    config = ws / "evolve.yaml"
    text = config.read_text("utf-8").replace("environment: persona_world", "environment: greeter")
    for role in ("agent", "updater", "reflector"):
        text = text.replace(f"  {role}: sim", f"  {role}: greetbot")
    config.write_text(text.replace("  recipe: ace", "  recipe: corrective"), "utf-8")
    _git(ws, "commit", "-q", "-am", "the third-party environment, model and recipe")

    listed = json.loads(_evolve(python, ws, "plugins", "--json").stdout)
    entry = next(e for e in listed["environments"] if e["name"] == "greeter")
    assert entry["source"] == "entry point" and entry["distribution"] == "evolve-greeter 0.1"

    done = _evolve(python, ws, "run", "--split", "dev", "--json")
    assert done.returncode == 0, done.stderr
    before = json.loads(done.stdout)

    # persona `alex` (evolve.yaml's) is the one implicit user: no persona list to be in.
    done = _evolve(python, ws, "train", "--episodes", "3", "--feedback", "corrective", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["recipe"] == "corrective" and report["commits"]
    units = sorted((ws / "memory").rglob("corrective-*.md"))
    assert units and "End every reply with -- Greeter." in units[0].read_text("utf-8")
    assert _git(ws, "status", "--porcelain") == ""

    done = _evolve(python, ws, "run", "--split", "dev", "--json")
    assert done.returncode == 0, done.stderr
    after = json.loads(done.stdout)
    assert _violations(before) > 0 and _violations(after) == 0, (before, after)

    head = _git(ws, "rev-parse", "HEAD")
    done = _evolve(python, ws, "evolve", "--dry-run", "--generations", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert _git(ws, "rev-parse", "HEAD") == head  # a dry run leaves the workspace as it was
    assert _git(ws, "status", "--porcelain") == ""


def test_a_core_only_environment_refuses_the_oracle_in_one_sentence(
    python: Path, tmp_path: Path
) -> None:
    done = _evolve(python, tmp_path, "init", "ws")
    assert done.returncode == 0, done.stderr
    ws = tmp_path / "ws"
    config = ws / "evolve.yaml"
    text = config.read_text("utf-8").replace("environment: persona_world", "environment: greeter")
    text = text.replace("  agent: sim", "  agent: greetbot")
    config.write_text(text.replace("  inject: recipe", "  inject: oracle"), "utf-8")
    _git(ws, "commit", "-q", "-am", "oracle on an environment that states none")
    done = _evolve(python, ws, "run", "--split", "dev")
    assert done.returncode != 0
    assert "the environment 'greeter' states no user preferences (no oracle)" in done.stderr
    assert "Traceback" not in done.stderr


def _violations(summary: dict[str, object]) -> float:
    rates = summary.get("violation_rate")
    assert isinstance(rates, (int, float)), summary
    return float(rates)
