"""`evolve.open(path)`: a workspace from Python, for an agent evolve does not run itself.

Three things a program does with it:

- :meth:`Workspace.sections`: what to put in its own agent's prompt for a task: the memory
  as evolve's agent would see it and the skills picked for the task;
- :meth:`Workspace.record`: an episode its agent played and what the user said, learned by
  the workspace's recipe with one commit (the applier writes, the store commits, under the
  writer lock), as `evolve train` learns;
- :meth:`Workspace.score`: a split scored with any callable agent, judged by the workspace's
  environment, as `evolve run` scores.

A handle is safe to share between threads: records are committed one at a time (each its
own commit, none lost), and what an episode reads of memory is read whole, never in the
middle of a record's write. Another evolve process writing the same workspace is refused
with the writer lock's sentence (:class:`evolve.errors.LockHeld`), as for the CLI.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evolve.agent import Agent, build_system_prompt
from evolve.api._agents import AgentFunction, as_agent
from evolve.envs import ApiCall, Environment, Split, Task
from evolve.errors import UnknownName
from evolve.workspace import Workspace as _Root

if TYPE_CHECKING:
    from evolve.episode import EpisodeSetup
    from evolve.evaluate import SplitReport
    from evolve.llm import LLM

# One lock per workspace in this process: the writer lock is a flock, which a second
# thread of the same process cannot take while the first holds it.
_LOCKS: dict[Path, threading.RLock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(root: Path) -> threading.RLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(root, threading.RLock())


@dataclass(frozen=True)
class Sections:
    """The prompt sections evolve gives an agent for one task, to place in any prompt.

    Attributes:
        memory: the rendered memory (one line per active unit of the persona's scope and the
            rendered recipes), as evolve's own agent sees it in `<memory>`; "" when empty.
        skills: the skills picked for this task, as the `<skills>` section holds them.
        skill_ids: the ids of those skills.
        prompt_files: the workspace's prompt files (`prompts/*.md`), joined.
        api_docs: the environment's tool documentation.
        system_prompt: the whole system prompt evolve's own agent would get.
    """

    memory: str
    skills: str
    skill_ids: tuple[str, ...]
    prompt_files: str
    api_docs: str
    system_prompt: str

    def blocks(self) -> str:
        """The `<memory>` section, and the `<skills>` one when skills were picked, as
        evolve's own prompt writes them: the text to paste into another agent's prompt."""
        prompt = build_system_prompt((), api_docs="", memory=self.memory, skills=self.skills)
        return prompt[prompt.index("<memory>") :]


@dataclass(frozen=True)
class Recorded:
    """What :meth:`Workspace.record` did with one episode.

    Attributes:
        episode: its number in the persona's stream of recorded episodes.
        stream: that stream's id (``<persona>/<recipe>/recorded/user``).
        learned: whether the recipe was asked (the episode failed, or the user complained).
        commit: the memory commit it made, or None (nothing learned, or all of it refused).
        ops: the operations committed, counted by kind (``{"add": 1}``).
        refused: the proposals the recipe or the applier refused, one line each.
        failed: why the updater's model failed on every try, or None.
    """

    episode: int
    stream: str
    learned: bool
    commit: str | None = None
    ops: Mapping[str, int] = field(default_factory=dict)
    refused: tuple[str, ...] = ()
    failed: str | None = None


class Workspace:
    """An evolve workspace opened from Python (see :func:`open`).

    Attributes:
        root: the workspace's root folder (where `evolve.yaml` is).
    """

    def __init__(self, ws: _Root, *, models: Mapping[str, LLM] | None = None) -> None:
        """Wrap an opened workspace; use :func:`open` instead.

        Args:
            ws: the workspace (root and validated configuration).
            models: model objects by role, in place of the ones evolve.yaml names.
        """
        self._ws = ws
        self.root: Path = ws.root
        self._lock = _lock_for(ws.root)
        self._env: Environment | None = None
        self._models: dict[str, LLM] = dict(models or {})

    def __repr__(self) -> str:
        return f"evolve.Workspace({str(self.root)!r})"

    @property
    def persona(self) -> str:
        """The persona (user) the workspace learns for: `persona` in evolve.yaml."""
        return self._ws.config.persona

    @property
    def recipe(self) -> str:
        """The recipe that learns from recorded episodes: `train.recipe` in evolve.yaml."""
        return self._ws.config.train.recipe

    # --- what evolve holds -----------------------------------------------------------

    def environment(self) -> Environment:
        """The workspace's environment (`environment:` in evolve.yaml), opened once."""
        with self._lock:
            if self._env is None:
                from evolve.evaluate import open_env

                self._env = open_env(self._ws)
            return self._env

    def tasks(self, split: Split) -> list[Task]:
        """The tasks of `split` (``train``, ``dev`` or ``holdout``)."""
        return self.environment().tasks(split)

    def _model(self, role: str) -> LLM:
        with self._lock:
            if role not in self._models:
                from evolve.llm import make_role_llm

                self._models[role] = make_role_llm(
                    self._ws.config,
                    role,  # type: ignore[arg-type]
                    env=self.environment(),
                )
            return self._models[role]

    def _setup(self, persona: str) -> EpisodeSetup:
        """What evolve gives an episode now (prompt files, memory, skills), read under the
        lock so that no record's write is half-seen."""
        from evolve.evaluate import episode_setup
        from evolve.evaluate._run import check_persona

        env = self.environment()
        check_persona(env, persona)
        with self._lock:
            return episode_setup(self._ws, env, persona)

    def sections(self, task: str | Task, *, persona: str | None = None, seed: int = 0) -> Sections:
        """The prompt sections for `task` (a task, or its instruction) and `persona`'s scope.

        Args:
            task: the task, or the instruction text skills are picked for.
            persona: whose memory (default: the workspace's `persona`).
            seed: the seed of the skills pick (it matters only for a model selector).

        Raises:
            UnknownName: an unknown persona.
        """
        instruction = task.instruction if isinstance(task, Task) else task
        setup = self._setup(persona or self.persona)
        picked = setup.skills.pick(instruction, seed) if setup.skills is not None else None
        skills = picked.section if picked is not None else ""
        api_docs = self.environment().api_docs()
        return Sections(
            memory=setup.memory,
            skills=skills,
            skill_ids=tuple(picked.injected) if picked is not None else (),
            prompt_files="\n\n".join(f.text.strip() for f in setup.prompt_files if f.text.strip()),
            api_docs=api_docs,
            system_prompt=build_system_prompt(
                setup.prompt_files, api_docs=api_docs, memory=setup.memory, skills=skills
            ),
        )

    # --- learning from an episode ----------------------------------------------------

    def record(
        self,
        *,
        task_id: str,
        instruction: str,
        success: bool,
        complaint: str = "",
        violations: Mapping[str, str] | None = None,
        calls: Sequence[ApiCall] = (),
        transcript: str = "",
        persona: str | None = None,
        agent: str = "recorded",
    ) -> Recorded:
        """Learn from an episode your own agent played, as `evolve train` learns from one.

        An episode that succeeded with no complaint and no violation teaches nothing (it is
        numbered, nothing is committed). Otherwise its complaint (then each violation's
        sentence) goes to the workspace's recipe (`train.recipe`) with the transcript; the
        applier writes what the recipe proposes, and one commit records it with the usual
        trailers (`evolve log` shows it, `evolve revert` undoes it). Secrets listed under
        `redact:` are hidden first. Safe to call from several threads at once.

        Args:
            task_id: the task's id (a trailer of the commit: `Evolve-Task`).
            instruction: what the agent was asked.
            success: whether the task was done.
            complaint: what the user said about the episode, in their words.
            violations: named rules the episode broke, each with its sentence.
            calls: the tool calls the agent made, if they were recorded as `ApiCall`s.
            transcript: what the agent did, as text (a chat transcript, a log).
            persona: whose memory learns (default: the workspace's `persona`).
            agent: a name for the agent, kept in the episode's record.

        Raises:
            EvolveError: `memory/` or `prompts/` has uncommitted changes, or the recipe is
                `skills` (it learns in batches, through `evolve train`).
            LockHeld: another evolve process is writing the workspace.
        """
        from evolve import txn
        from evolve.train._recorded import RecordedEpisode, learn_recorded

        episode = RecordedEpisode(
            task_id=task_id,
            instruction=instruction,
            success=success,
            complaint=complaint,
            violations=dict(violations or {}),
            calls=tuple(calls),
            transcript=transcript,
            persona=persona or self.persona,
            model=agent,
        )
        env = self.environment()
        if episode.persona not in env.personas():
            raise UnknownName(
                f"unknown persona {episode.persona!r}; choose one of {', '.join(env.personas())}."
            )
        updater = self._model("updater")
        with self._lock, txn.writer(self._ws, "evolve.record") as tx:
            out = learn_recorded(
                tx,
                episode,
                recipe=self.recipe,
                updater=updater,
                review=self._ws.config.train.review,
                tools=tuple(env.tools()),
            )
        return Recorded(
            episode=out.episode,
            stream=out.stream,
            learned=out.learned,
            commit=out.commit,
            ops=dict(out.ops),
            refused=tuple(out.refused),
            failed=out.failed,
        )

    # --- scoring ---------------------------------------------------------------------

    def agent(self) -> Agent:
        """The agent the workspace names (`agent.name`; `model`: evolve's own over the agent
        model), as `evolve run` and the gate play it."""
        from evolve.agent import ModelAgent, workspace_agent

        llm = self._model("agent")
        return workspace_agent(self._ws.config.agent.agent_name, llm, self.root) or ModelAgent(llm)

    def score(
        self,
        split: Split = "dev",
        *,
        agent: Agent | AgentFunction | None = None,
        runs: int | None = None,
        persona: str | None = None,
        seed: int | None = None,
        concurrency: int = 1,
        log: bool = True,
    ) -> SplitReport:
        """Score `split` with `agent`, judged by the workspace's environment as `evolve run`
        judges; the episode logs go to `generations/runs/` (unless `log` is False).

        Args:
            split: ``train``, ``dev`` or ``holdout``.
            agent: an :class:`~evolve.agent.Agent`, or a function ``(request, world) ->
                Trace | str`` (see :class:`~evolve.agent.AgentRequest` for what a request
                holds); default: the agent the workspace names.
            runs: runs per task (default `run.runs`).
            persona: whose preferences judge (default: the workspace's `persona`).
            seed: the evaluation seed (default `run.seed`).
            concurrency: episodes played at once, on threads (the agent must allow it).
            log: write the episode logs.

        Returns:
            The report: `score` (accepted share), `task_success_rate`, `violation_rate`,
            `episodes` (one record each).

        Raises:
            UnknownName: an unknown split or persona.
        """
        from evolve.evaluate import SplitReport, score_tasks, write_run_log

        cfg = self._ws.config
        persona = persona or self.persona
        setup = self._setup(persona)
        player = self.agent() if agent is None else as_agent(agent)
        setup = replace(setup, agent=player)
        env = self.environment()
        tasks = env.tasks(split)
        runs = runs or cfg.run.runs
        base_seed = cfg.run.seed if seed is None else seed
        started = time.perf_counter()
        records = score_tasks(
            env,
            self._model("agent"),
            tasks,
            setup,
            runs=runs,
            base_seed=base_seed,
            concurrency=concurrency,
            executor="serial" if concurrency <= 1 else "threads",
        )
        report = SplitReport(
            split, persona, player.name, runs, records, time.perf_counter() - started
        )
        report.seed = base_seed
        if log:
            with self._lock:
                write_run_log(self._ws, report)
        return report


def open(  # noqa: A001 - evolve.open, as io.open
    path: str | Path | None = None, *, models: Mapping[str, LLM] | None = None
) -> Workspace:
    """Open the evolve workspace at `path` (or the one holding it; default: the current
    folder's).

    Args:
        path: a folder in the workspace.
        models: model objects for roles (``{"updater": llm}``), in place of the ones
            `models:` in evolve.yaml names (any object with evolve's `LLM.complete`).

    Raises:
        NotAWorkspace: no folder from `path` up holds an `evolve.yaml`.
        ConfigError: its `evolve.yaml` is not valid.
    """
    return Workspace(_Root.find(Path(path) if path is not None else None), models=models)
