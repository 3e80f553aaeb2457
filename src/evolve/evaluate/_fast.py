"""`evolve run` on its fast path: the same scoring, without click, rich, pydantic or PyYAML.

`evolve run --split dev` with the `sim` model spent most of its CPU on start-up: click, rich,
the pydantic configuration, evalset and memory models, PyYAML, the update recipes. This path
scores with the very same code (`score_tasks`, `run_episode`, the environment, the sim,
`write_log`) and builds what the full command builds from files that were validated once and
remembered in `.git/`: the settings of `evolve.yaml` (:mod:`evolve.evaluate._settings`), the
evalset (:mod:`evolve.envs.persona_world._evalset`), the rendered memory (read, on a miss, by
the reading commands' unit reader and renderers, :mod:`evolve.quick`) and what the sim parsed
of the prompt. It prints what the click command prints: the JSON document, or the text report
that rich lays out on a stream that is not a terminal. It answers the common case only; for
anything else (a model other than the plain `sim`, an agent other than evolve's own, a request cache, an executor other than
serial, skills, an enforcing recipe's units, the `fixed` injection, a terminal, a generation
journal to recover, an invalid file, any error before the run log is written) it raises
:class:`Unhandled` before writing anything, and the click command runs instead. Tests compare
the two paths' output, run log included, byte for byte.
"""

from __future__ import annotations

import os
import sys

from evolve._format._cache import EVALSET_CACHE, MEMORY_CACHE, SIM_CACHE
from evolve.quick._git import Repo, Unhandled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evolve.envs import Environment
    from evolve.evaluate._settings import Settings
    from evolve.quick._commands import Output
    from evolve.quick._git import Finished, Run

# Recipes whose `verify` can fail an attempt (and so retry it): a run whose memory holds
# their active units goes the full way. A test checks this against every recipe's `verify`.
ENFORCING = frozenset({"trace"})
# Environment variables that change what the full command does here: the model roles and the
# request cache (flags' fallbacks), and a terminal forced for rich's progress bar.
_DEFERRED_ENV = (
    "EVOLVE_MODEL",
    "EVOLVE_UPDATER_MODEL",
    "EVOLVE_REFLECTOR_MODEL",
    "EVOLVE_CACHE",
    "FORCE_COLOR",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
)


def _dirty(raw: bytes) -> list[str]:
    """`GitStore.dirty_paths` of `git status --porcelain=v1 -z` output."""
    from evolve._format._git import status_paths

    return status_paths(raw.decode("utf-8", "surrogateescape"))


def run(
    workspace: str | None,
    split: str,
    *,
    runs: int | None,
    seed: int | None,
    concurrency: int | None,
    persona: str | None,
    inject: str | None,
    as_json: bool,
) -> Output:
    """What `evolve run` writes, stream by stream, with the run log written.

    Raises:
        Unhandled: a case the full command answers (nothing has been written then).
    """
    if any(name in os.environ for name in _DEFERRED_ENV):
        raise Unhandled("a model, cache or terminal set in the environment")
    if not as_json and "COLUMNS" in os.environ:
        raise Unhandled("a width for rich's table")
    try:
        if sys.stderr.isatty() or (not as_json and sys.stdout.isatty()):
            raise Unhandled("a terminal: rich draws the progress bar and the report")
    except (AttributeError, ValueError) as exc:
        raise Unhandled("an unusual stream") from exc
    repo = Repo.find(workspace)  # Unhandled for a journal to recover, an unusual repository
    from evolve.evaluate._settings import Invalid, load

    try:
        settings = load(repo.root, repo.git_dir)
    except Invalid as exc:
        raise Unhandled("evolve.yaml or parameters.yaml is invalid") from exc
    if (
        settings["agent"].strip() != "sim"
        or settings["agent_command"]
        or settings["agent_name"] != "model"
        or settings["cache"] != "off"
        or settings["agent_priced"]
        or settings["environment"] != "persona_world"
    ):
        raise Unhandled("not the plain sim (or an agent command) on persona_world")
    mode = inject or settings["inject"]
    if mode == "fixed" or (mode == "recipe" and settings["skills"]):
        raise Unhandled("the fixed block, or skills")
    status = repo.start(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "memory", "prompts"
    )
    try:
        return _score(
            repo, settings, split, runs, seed, concurrency, persona, mode, status, as_json
        )
    finally:
        status.kill()


def _score(
    repo: Repo,
    settings: Settings,
    split: str,
    runs: int | None,
    seed: int | None,
    concurrency: int | None,
    persona: str | None,
    mode: str,
    status: Run | Finished,
    as_json: bool,
) -> Output:
    import time
    from pathlib import Path

    from evolve._confine import check_tree
    from evolve._format._views import report_text
    from evolve.agent._prompt import read_prompt_files
    from evolve.envs.persona_world import PersonaWorldEnv
    from evolve.episode._run import EpisodeSetup
    from evolve.errors import EvolveError
    from evolve.evaluate._report import SplitReport
    from evolve.evaluate._run import check_persona, score_tasks, write_log
    from evolve.executors import choose_executor
    from evolve.llm._registry import make_llm
    from evolve.quick._commands import emit_json
    from evolve.redact import Redactor

    root = Path(repo.root)
    if os.path.lexists(os.path.join(repo.root, "prompts", "harness.yaml")):
        raise Unhandled("a harness file")  # the full command reads it (evolve.harness)
    persona = persona or settings["persona"]
    runs = runs or settings["runs"]
    concurrency = concurrency or settings["concurrency"]
    base_seed = settings["seed"] if seed is None else seed
    if choose_executor("auto", "sim", concurrency, can_spawn=True) != "serial":
        raise Unhandled("not the serial executor")
    try:
        # make_env's environment, with the validated evalset remembered in .git/; a link out
        # in evalset/ refused first, as `open_env` refuses it (evolve._confine).
        check_tree(repo.root, "evalset")
        env = PersonaWorldEnv(root / "evalset", remember=os.path.join(repo.git_dir, EVALSET_CACHE))
        check_persona(env, persona)
        tasks = env.tasks(split)  # type: ignore[arg-type]
        llm = make_llm("sim", env=env)
        setup = EpisodeSetup(
            prompt_files=tuple(read_prompt_files(root / "prompts")),
            memory=_memory(repo, env, persona, mode, settings["rendered"]),
            persona=persona,
            stats=settings["stats"],
            max_turns=settings["max_turns"],
            redactor=Redactor.from_settings(settings["redact_values"], settings["redact_env"]),
        )
        from evolve.sim._agent import remember_directives

        started = time.perf_counter()
        remember_directives(os.path.join(repo.git_dir, SIM_CACHE))
        try:
            records = score_tasks(
                env, llm, tasks, setup, runs=runs, base_seed=base_seed, concurrency=concurrency
            )
        finally:
            remember_directives(None)
        report = SplitReport(split, persona, llm.name, runs, records, time.perf_counter() - started)
        report.seed = base_seed
    except (EvolveError, OSError) as exc:  # the full command says it in its own words
        raise Unhandled("an error") from exc
    dirty = _dirty(status.wait())
    if any("\x1b" in path for path in dirty):
        raise Unhandled("an escape sequence click would strip")
    text = None if as_json else report_text(report)  # before the log: no fallback after it
    if not as_json and text is None:
        raise Unhandled("a report rich would lay out otherwise")
    err = ""
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        err = (
            f"warning: memory/ or prompts/ has uncommitted changes ({shown}); this run scores "
            "the working tree, not HEAD. Commit them to make the result reproducible.\n"
        )
    # A stream that cannot carry the text as it is (an ASCII or Latin-1 one): rich draws its
    # table in ASCII there, click encodes what it echoes in its own way.
    if not _utf(sys.stderr, err) or (text is not None and not _utf(sys.stdout, text)):
        raise Unhandled("a stream that is not UTF-8")
    write_log(root, report)
    # No progress bar on a stderr that is not a terminal, as the full command draws none.
    if text is None:
        out = emit_json({**report.to_json(), "uncommitted": dirty})
    else:
        out = text + (f"episode logs: {report.log_dir}\n" if report.log_dir else "")
    return [(sys.stderr, err), (sys.stdout, out)]


def _utf(stream: object, text: str) -> bool:
    """Whether `stream` takes `text` as it is: ASCII text, or a UTF encoding (rich's test for
    its Unicode boxes)."""
    encoding = str(getattr(stream, "encoding", None) or "utf-8").lower()
    return text.isascii() or encoding.startswith("utf")


RACY_NS = 2_000_000_000  # as evolve.quick._read: a file this recent is never remembered


def _remembered(value: object) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) == 3
        and isinstance(value[0], str)
        and isinstance(value[1], bool)
        and isinstance(value[2], bool)
    )


def _memory(
    repo: Repo, env: Environment, persona: str, mode: str, rendered: tuple[str, ...]
) -> str:
    """`evolve.evaluate.agent_memory` for the modes this path answers.

    The text of `recipe` mode is remembered in `.git/evolve-memory.cache`, keyed by the scope,
    the rendered recipes and a digest of every entry under `memory/` (path, type, mtime,
    ctime, size, inode: no edit leaves them all unchanged), and by the code that read and
    rendered it, so an unchanged memory of a thousand units is not read and parsed again on
    every run.
    """
    if mode == "none":
        return ""
    if mode == "oracle":
        return "\n".join(f"- {s}" for s in env.oracle_statements(persona, None))
    from evolve._format._cache import DiskCache

    scope = f"user:{persona}"
    key, racy = _memory_key(repo.root, scope, rendered)
    cache = DiskCache(os.path.join(repo.git_dir, MEMORY_CACHE), valid=_remembered)
    known = cache.get(key)
    if isinstance(known, tuple):
        if known[1]:
            raise Unhandled("an enforcing recipe's units: the verifier retries attempts")
        if known[2]:
            raise Unhandled("units the agent does not see: the full command says so")
        return str(known[0])
    from evolve._format._render import render_memory, unseen
    from evolve.quick._read import load_worktree
    from evolve.quick._render import renderers_for

    units = load_worktree(repo.root, repo.git_dir)
    enforcing = ENFORCING.intersection(rendered)
    enforced = any(
        u.recipe in enforcing and u.status == "active" and u.scope in (scope, "global")
        for u in units
    )
    text = "" if enforced else render_memory(units, scope, renderers_for(rendered))
    hidden = bool(unseen(units, scope, rendered))
    if not racy and _memory_key(repo.root, scope, rendered) == (key, racy):
        cache.put(key, (text, enforced, hidden))
    if enforced:
        raise Unhandled("an enforcing recipe's units: the verifier retries attempts")
    if hidden:
        raise Unhandled("units the agent does not see: the full command says so")
    return text


def _memory_key(root: str, scope: str, rendered: tuple[str, ...]) -> tuple[bytes, bool]:
    """(digest of the scope, the recipes and every entry under `root/memory/`, whether an
    entry changed too recently to be remembered)."""
    import hashlib
    import time

    stats: list[tuple[str, int, int, int, int, int]] = []
    latest = 0
    folder = os.path.join(root, "memory")
    todo = [folder] if os.path.isdir(folder) else []
    while todo:
        here = todo.pop()
        with os.scandir(here) as found:
            for entry in found:
                st = entry.stat(follow_symlinks=False)
                stats.append(
                    (entry.path, st.st_mode, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
                )
                latest = max(latest, st.st_mtime_ns, st.st_ctime_ns)
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
    import marshal

    stats.sort()
    digest = hashlib.blake2b(marshal.dumps((scope, rendered, stats)), digest_size=20).digest()
    return digest, latest >= time.time_ns() - RACY_NS
