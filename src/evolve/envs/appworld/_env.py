"""The `appworld` environment: AppWorld's engine behind evolve's `Environment` protocol.

Tasks are AppWorld task ids named by the workspace's `evalset/splits.yaml`; each episode opens
one world in the AppWorld worker (`_client.py`), the agent's `app__api` calls run there, the
episode is scored by AppWorld's own evaluator AND the persona's preference checkers (the rules
of `persona_world`, over AppWorld's calls mapped into the shape they read, `_personas.py`).
Nothing of AppWorld is written into the workspace: docs and instructions are read at run time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from evolve.envs._protocol import SPLITS, ApiCall, Feedback, Judgement, Split, Task, Tier
from evolve.envs.appworld._client import (
    CALL_TIMEOUT_S,
    START_TIMEOUT_S,
    AppWorldError,
    WorkerClient,
    give_back,
    stop_all,
    take_idle,
)
from evolve.envs.appworld._paths import data_root
from evolve.envs.appworld._personas import check_persona, episode_payment
from evolve.envs.persona_world._evalset import personas_of, read_files
from evolve.envs.persona_world._personas import Persona, load_personas
from evolve.envs.persona_world._rules import RULES_BY_NAME
from evolve.envs.persona_world._world import Payment
from evolve.envs.persona_world._yaml import load_yaml
from evolve.errors import ConfigError, UnknownName

DEFAULT_APPS = ("supervisor", "phone", "venmo", "simple_note", "gmail")
SPLITS_FILE = "splits.yaml"
CONFIG_FILE = "appworld.yaml"


class _Splits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    train: tuple[str, ...] = ()
    dev: tuple[str, ...] = ()
    holdout: tuple[str, ...] = ()


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    apps: tuple[str, ...] = DEFAULT_APPS


@dataclass(frozen=True)
class History:
    """Payments made in earlier training episodes of this stream (habitual card, totals)."""

    payments: tuple[Payment, ...] = ()


def family_of(task_id: str) -> str:
    """An AppWorld task id is `<scenario>_<n>`: the scenario is the family."""
    return task_id.split(":")[0].rsplit("_", 1)[0]


class AppWorldEpisode:
    """One open AppWorld world: every call goes to the worker and is recorded."""

    def __init__(self, env: AppWorldEnv, client: WorkerClient, task: Task) -> None:
        self.env = env
        self.client = client
        self.task = task
        opened = client.request(
            "open", timeout=START_TIMEOUT_S, task_id=task.id, experiment=client.experiment
        )
        self.supervisor: dict[str, str] = dict(opened.get("supervisor", {}))
        self._calls: list[ApiCall] = []
        self._completed = False
        self.closed = False

    @property
    def calls(self) -> Sequence[ApiCall]:
        return tuple(self._calls)

    @property
    def completed(self) -> bool:
        return self._completed

    def call(self, tool: str, args: Mapping[str, Any]) -> ApiCall:
        app, sep, api = tool.partition("__")
        if not sep or tool not in self.env.tool_set:
            call = ApiCall(app, api or tool, dict(args), False, error=f"there is no API {tool!r}")
        else:
            answer = self.client.request("call", app=app, api=api, args=dict(args))
            self._completed = bool(answer.get("completed", self._completed))
            if answer.get("call_ok"):
                call = ApiCall(app, api, dict(args), True, result=answer.get("result"))
            else:
                call = ApiCall(app, api, dict(args), False, error=str(answer.get("error")))
        self._calls.append(call)
        return call

    def evaluate(self) -> dict[str, Any]:
        return self.client.request("evaluate", timeout=START_TIMEOUT_S)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.client.request("close")
        finally:
            self.env._release(self.client)


class AppWorldEnv:
    """The environment over a workspace's `evalset/` (splits of AppWorld task ids, personas)."""

    name = "appworld"

    def __init__(self, evalset: Path, root: Path | None = None) -> None:
        self.evalset = evalset
        self.root = root if root is not None else data_root()
        # Each file read once, confined, and exactly those bytes parsed (`read_files`).
        files = read_files(evalset, (SPLITS_FILE, CONFIG_FILE))
        splits = self._load(evalset / SPLITS_FILE, files[SPLITS_FILE], _Splits)
        options = files[CONFIG_FILE]
        self.options = (
            self._load(evalset / CONFIG_FILE, options, _Options)
            if options is not None
            else _Options()
        )
        self._split_of: dict[str, Split] = {}
        for split in SPLITS:
            for task_id in getattr(splits, split):
                if task_id in self._split_of:
                    raise ConfigError(
                        f"task {task_id} is in both {self._split_of[task_id]} and {split}."
                    )
                self._split_of[task_id] = split
        self._personas: dict[str, Persona] = load_personas(evalset / "personas", personas_of(files))
        self._tasks: dict[str, Task] | None = None
        self._docs: list[dict[str, Any]] | None = None

    @staticmethod
    def _load(path: Path, data: bytes | None, model: type[Any]) -> Any:
        if data is None:
            raise ConfigError(f"{path} is missing; the evalset is incomplete.")
        try:
            return model.model_validate(load_yaml(path, data) or {})
        except (yaml.YAMLError, ValidationError, TypeError) as exc:
            raise ConfigError(f"{path} is malformed: {str(exc).splitlines()[0]}.") from exc

    # --- the worker pool (one live world per worker process) --------------------------

    def _acquire(self) -> WorkerClient:
        if self.root is None:
            raise AppWorldError(
                "no AppWorld data root is set; set APPWORLD_ROOT or run "
                "`evolve appworld setup --root DIR` (the folder holding data/)."
            )
        idle = take_idle(self.root)
        if idle is not None:
            return idle
        client = WorkerClient(self.root)
        try:
            hello = client.request(
                "hello", timeout=START_TIMEOUT_S, need_apps=list(self.options.apps)
            )
        except BaseException:
            client.stop()
            raise
        missing = hello.get("missing_apps") or []
        if missing:
            client.stop()
            raise AppWorldError(
                f"the AppWorld install lacks the app(s) {', '.join(missing)}; "
                "run `evolve appworld setup` to unpack them."
            )
        return client

    def _release(self, client: WorkerClient) -> None:
        give_back(client)

    def close(self) -> None:
        """Stop the AppWorld workers of this process (also done when the process exits)."""
        stop_all()

    def _with_client(self, op: str, **fields: Any) -> dict[str, Any]:
        client = self._acquire()
        try:
            return client.request(op, timeout=START_TIMEOUT_S, **fields)
        finally:
            self._release(client)

    # --- tasks and personas -------------------------------------------------------------

    def _load_tasks(self) -> dict[str, Task]:
        if self._tasks is None:
            installed = self._with_client("tasks")["tasks"]
            missing = [t for t in self._split_of if t not in installed]
            if missing:
                raise ConfigError(
                    f"the evalset names AppWorld task(s) not installed under {self.root}: "
                    f"{', '.join(missing[:3])}; run `evolve appworld splits` or install the data."
                )
            self._tasks = {
                task_id: Task(
                    id=task_id,
                    family=family_of(task_id),
                    kind="appworld",
                    split=split,
                    instruction=str(installed[task_id]["instruction"]),
                    params={"date": str(installed[task_id].get("datetime", ""))[:10]},
                )
                for task_id, split in self._split_of.items()
            }
        return self._tasks

    def tasks(self, split: Split) -> list[Task]:
        if split not in SPLITS:
            raise UnknownName(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}.")
        return [t for t in self._load_tasks().values() if t.split == split]

    def task(self, task_id: str) -> Task:
        try:
            return self._load_tasks()[task_id]
        except KeyError:
            raise UnknownName(f"unknown task {task_id!r}.") from None

    def personas(self) -> list[str]:
        return sorted(self._personas)

    def persona(self, name: str) -> Persona:
        try:
            return self._personas[name]
        except KeyError:
            raise UnknownName(
                f"unknown persona {name!r}; choose one of {', '.join(self.personas())}."
            ) from None

    def rule_names(self) -> list[str]:
        return sorted({p.rule for persona in self._personas.values() for p in persona.preferences})

    # --- docs and tools (read from AppWorld at run time, never written) ----------------

    def _load_docs(self) -> list[dict[str, Any]]:
        if self._docs is None:
            self._docs = list(self._with_client("docs", apps=list(self.options.apps))["docs"])
        return self._docs

    def api_docs(self) -> str:
        lines = []
        for doc in self._load_docs():
            params = ", ".join(
                f"{p['name']}: {p['type']}{'' if p['required'] else ' (optional)'}"
                for p in doc["parameters"]
            )
            lines.append(f"{doc['app']}__{doc['api']}({params}): {doc['description']}")
        return "\n".join(lines)

    def tools(self) -> list[str]:
        return [f"{d['app']}__{d['api']}" for d in self._load_docs()]

    @property
    def tool_set(self) -> frozenset[str]:
        return frozenset(self.tools())

    # --- episodes -----------------------------------------------------------------------

    def initial_history(self, persona: str) -> History:
        self.persona(persona)
        return History()

    def advance_history(self, history: History, task: Task, persona: str, episode: int) -> History:
        """Unchanged: an AppWorld payment is what the agent did, not what the task fixes.

        Training keeps the history with `history_record` / `history_with` instead (the env is a
        `evolve.train._histref.RecordsHistory`): one record per episode on `refs/evolve/train`,
        so a stream resumed in a new process replays the same history.
        """
        return history

    def history_record(self, task: Task, persona: str, calls: Sequence[ApiCall]) -> dict[str, Any]:
        """What one episode adds to the user's history, as JSON: its payment or null."""
        payment = episode_payment(calls)
        return {
            "task": task.id,
            "payment": None
            if payment is None
            else {"contact": payment.contact, "amount": payment.amount, "card": payment.card},
        }

    def history_with(self, history: History, record: Mapping[str, Any]) -> History:
        """`history` with the payment of one episode's record (from `history_record`)."""
        paid = record.get("payment")
        if not isinstance(paid, Mapping):
            return history
        try:
            payment = Payment(str(paid["contact"]), float(paid["amount"]), int(paid["card"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"a recorded AppWorld payment is malformed: {dict(paid)!r}."
            ) from None
        return History((*history.payments, payment))

    def new_world(self, task: Task, persona: str, history: History) -> AppWorldEpisode:
        self.persona(persona)
        client = self._acquire()
        try:
            return AppWorldEpisode(self, client, task)
        except BaseException:
            self._release(client)
            raise

    def judge(
        self, task: Task, persona: str, world: Any, history: History, episode: int | None
    ) -> Judgement:
        """AppWorld's own evaluation AND the persona's checkers; closes the world."""
        assert isinstance(world, AppWorldEpisode)
        try:
            result = world.evaluate()
        finally:
            world.close()
        failure: str | None = None
        if not result.get("success"):
            failed = len(result.get("failures", []))
            total = int(result.get("num_tests") or failed)
            done = "" if world.completed else " and the task was not marked complete"
            # AppWorld's requirement texts are its data: the complaint gives only counts.
            failure = f"AppWorld's evaluation failed {failed} of {total} checks{done}."
        applicable, violations = check_persona(
            self.persona(persona), task, world.calls, world.supervisor, history, episode
        )
        return Judgement(failure is None, failure, tuple(applicable), tuple(violations))

    def feedback(self, task: Task, judgement: Judgement, tier: Tier) -> Feedback:
        lines: list[tuple[str, str]] = []
        if judgement.failure:
            lines.append((judgement.failure, "task"))
        for v in judgement.violations:
            lines.append((v.instance if tier == "instance" else v.corrective, v.rule))
        return Feedback("\n".join(line for line, _ in lines), tuple(lines))

    def stats(self, task: Task, persona: str, history: History) -> list[str]:
        return []

    def oracle_statements(self, persona: str, episode: int | None) -> list[str]:
        p = self.persona(persona)
        return [
            RULES_BY_NAME[pref.rule].statement(pref.value_at(episode)) for pref in p.preferences
        ]


__all__ = ["CALL_TIMEOUT_S", "AppWorldEnv", "AppWorldEpisode", "History", "family_of"]
