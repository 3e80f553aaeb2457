"""The reading commands', `evolve run`'s and `evolve train`'s arguments, read without click
(see `evolve.quick`, `evolve.evaluate._fast` and `evolve.cli._trainer`).

:func:`run` answers `evolve log`, `show`, `memory`, `run` and `train` when their arguments are
among the common forms below, and returns None otherwise (`--help`, an unknown or malformed
option, a PATH for `log`, a value click would refuse): then the click command runs, with its
own help and error messages. The options mirror the click commands in `evolve.cli._reading`,
`evolve.cli._run` and `evolve.cli._train`; a test checks that every option of those commands
is either read here or left to click.

`train` is a writer: it is decided here before anything is written (its arguments, the
workspace, no journal left to recover), and from then on it runs the click command's body
(`evolve.cli._trainer.run_train`) and says what it raises as the click group does.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from evolve.quick._commands import Output
    from evolve.workspace import Workspace

WORKSPACE = ("-C", "--workspace")
# command -> (flags, options taking a value (long names), short name -> long name)
SPEC: dict[str, tuple[frozenset[str], frozenset[str], dict[str, str]]] = {
    "log": (frozenset({"--json", "--jsonl"}), frozenset({"--max-count", "--workspace"}),
            {"-n": "--max-count", "-C": "--workspace"}),
    "show": (frozenset({"--json"}), frozenset({"--workspace"}), {"-C": "--workspace"}),
    "memory": (frozenset({"--json"}), frozenset({"--as-of", "--scope", "--persona", "--workspace"}),
               {"-C": "--workspace"}),
    # --model, --updater-model, --reflector-model and --cache are left to click.
    "run": (frozenset({"--json"}),
            frozenset({"--split", "--runs", "--seed", "--concurrency", "--executor", "--persona",
                       "--inject", "--workspace"}),
            {"-C": "--workspace"}),
    # --recipe (a registry lookup; --unrendered goes with it), --model, --updater-model,
    # --reflector-model and --cache are left to click.
    "train": (frozenset({"--json", "--review"}),
              frozenset({"--episodes", "--feedback", "--seed", "--persona", "--workspace"}),
              {"-C": "--workspace"}),
}  # fmt: skip
# evolve.envs.SPLITS and evolve.evaluate.INJECT_MODES (a test checks they agree).
SPLITS = ("train", "dev", "holdout")
INJECT_MODES = ("none", "recipe", "oracle", "fixed")
TIERS = ("instance", "corrective")  # evolve.envs.Tier (a test checks they agree)
# What the click command reads from the environment besides the workspace: set, it answers.
CLICK_ENV = ("EVOLVE_MODEL", "EVOLVE_UPDATER_MODEL", "EVOLVE_REFLECTOR_MODEL", "EVOLVE_CACHE",
             "_EVOLVE_COMPLETE")  # fmt: skip


def _number(text: str | None, low: int, high: int | None) -> int | None:
    """`text` as click's integer option reads it, when it is plain digits within [low, high];
    raises ValueError for anything else (click answers it)."""
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()):
        raise ValueError("click says so")
    value = int(text)
    if value < low or (high is not None and value > high):
        raise ValueError("click says so")
    return value


def _run_command(values: dict[str, str], flags: set[str], positional: list[str]) -> Output:
    """`evolve run` on the fast path (raises ValueError or Unhandled for click's cases)."""
    split = values.get("--split")
    inject = values.get("--inject")
    if (
        positional
        or split not in SPLITS
        or values.get("--executor", "auto") != "auto"
        or (inject is not None and inject not in INJECT_MODES)
    ):
        raise ValueError("click says so")
    from evolve.evaluate._fast import run as run_fast

    return run_fast(
        _workspace(values),
        split,
        runs=_number(values.get("--runs"), 1, 50),
        seed=_number(values.get("--seed"), 0, None),
        concurrency=_number(values.get("--concurrency"), 1, 64),
        persona=values.get("--persona"),
        inject=inject,
        as_json="--json" in flags,
    )


def parse(command: str, args: Sequence[str]) -> tuple[set[str], dict[str, str], list[str]] | None:
    """(flags given, option values (the last one given wins, as in click), positionals), or
    None for anything click should read."""
    flags_known, options_known, short = SPEC[command]
    flags: set[str] = set()
    values: dict[str, str] = {}
    positional: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if arg == "--":
            positional += items[i:]
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if arg in flags_known:
            flags.add(arg)
            continue
        if arg[:2] in short and not arg.startswith("--"):
            name, value, eq = short[arg[:2]], arg[2:], "=" if len(arg) > 2 else ""
        if name not in options_known:
            return None
        if not eq:
            if i >= len(items):
                return None
            value = items[i]
            i += 1
        if not value or value.startswith("-"):
            return None
        values[name] = value
    return flags, values, positional


def _workspace(values: dict[str, str]) -> str | None:
    path = values.get("--workspace") or os.environ.get("EVOLVE_WORKSPACE") or None
    if path is not None and (os.path.isfile(path) or "\x00" in path):
        raise ValueError("click says so")
    return path


def run(args: Sequence[str]) -> int | None:
    """Answer a reading command or `run`; None when click should (nothing has been written
    then)."""
    if not args or args[0] not in SPEC or sys.stdout is None or sys.stderr is None:
        return None
    command = args[0]
    parsed = parse(command, args[1:])
    if parsed is None:
        return None
    flags, values, positional = parsed
    if command == "train":
        return _train(values, flags, positional)
    import gc

    from evolve.errors import EvolveError
    from evolve.quick._git import Unhandled

    # `run` allocates much and keeps little: the cyclic collector's passes over what it
    # imports cost more than the garbage they find in a process that ends with the run.
    collecting = gc.isenabled()
    if command == "run":
        gc.disable()
    try:
        outs = (
            _run_command(values, flags, positional)
            if command == "run"
            else _reading(command, values, flags, positional)
        )
        if outs is None:
            return None
    except (Unhandled, EvolveError, ValueError, OSError):
        return None  # nothing was written: the click command answers, in its own words
    except KeyboardInterrupt:  # as the click group says it (nothing is written here)
        sys.stderr.write("interrupted; nothing half-written was kept.\n")
        return 130
    finally:
        if collecting:
            gc.enable()
    from evolve.quick._commands import write

    try:
        write(outs)
    except BrokenPipeError:
        return _reader_gone()
    except (Unhandled, EvolveError, OSError) as exc:  # a streamed log cut short (git stopped)
        sys.stdout.flush()
        sys.stderr.write(f"evolve: the output stopped early ({exc}); rerun the command.\n")
        return 1
    return 0


def _train(values: dict[str, str], flags: set[str], positional: list[str]) -> int | None:
    """`evolve train` in its plain forms; None for click's cases (nothing has been written
    then)."""
    feedback = values.get("--feedback")
    try:
        episodes = _number(values.get("--episodes"), 1, 100_000)
        seed = _number(values.get("--seed"), 0, None)
        path = _workspace(values)
    except ValueError:
        return None
    if positional or (feedback is not None and feedback not in TIERS):
        return None
    if any(os.environ.get(name) for name in CLICK_ENV):
        return None
    from pathlib import Path

    from evolve.errors import EvolveError
    from evolve.workspace import Workspace
    from evolve.workspace._paths import APPLY_JOURNAL, GENERATION_JOURNAL

    try:  # as `open_workspace`; its errors, and a journal to recover, the click command says
        ws = Workspace.find(None if path is None else Path(path))
        git_dir = ws.store.git_dir
        if (git_dir / GENERATION_JOURNAL).exists() or (git_dir / APPLY_JOURNAL).exists():
            return None
    except (EvolveError, OSError):
        return None
    return _as_click_says(ws, values, flags, feedback, episodes, seed)


def _as_click_says(
    ws: Workspace,
    values: dict[str, str],
    flags: set[str],
    feedback: str | None,
    episodes: int | None,
    seed: int | None,
) -> int:
    """Run the training command's body; what it raises is said as `evolve.cli._group.run`
    says it (through click's `main`): its exit status."""
    from evolve.errors import EvolveError

    try:
        from evolve.cli._common import ModelChoice
        from evolve.cli._trainer import run_train

        run_train(
            ModelChoice().apply(ws), recipe=None, episodes=episodes,
            feedback=feedback,  # type: ignore[arg-type]  # one of TIERS
            review=True if "--review" in flags else None, seed=seed,
            persona=values.get("--persona"), as_json="--json" in flags,
        )  # fmt: skip
    except (EOFError, KeyboardInterrupt) as exc:  # click: a blank line, then Abort
        sys.stderr.write("\n")
        stopped = _interrupted(exc)
        if stopped is not None:
            return stopped
        sys.stderr.write("aborted.\n")
        return 130
    except EvolveError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except BrokenPipeError:
        return _reader_gone()
    except BaseException as exc:  # SIGTERM, SIGHUP in the writer
        stopped = _interrupted(exc)
        if stopped is None:
            raise
        return stopped
    return 0


def _interrupted(exc: BaseException) -> int | None:
    """For a writer stopped by a signal (`evolve.txn.WriteInterrupted`): say what it did with
    its write; its exit status. None for anything else."""
    from evolve.txn import WriteInterrupted

    if not isinstance(exc, WriteInterrupted):
        return None
    sys.stderr.write(f"interrupted: {exc.message}\n")
    return int(exc.exit_code)


def _reader_gone() -> int:
    """What click does when the reader of stdout went away (`evolve run ... | head`): exit 1,
    no traceback, and nothing more written (Python would complain again when it flushes the
    stream at exit, so the stream's descriptor is pointed at the null device)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # a stream without a descriptor
        pass
    return 1


def _reading(
    command: str, values: dict[str, str], flags: set[str], positional: list[str]
) -> Output | None:
    """`evolve log`, `show` or `memory` on the fast path; None for click's cases."""
    from evolve.quick._git import Repo

    repo = Repo.find(_workspace(values))
    if command == "log":
        count = values.get("--max-count")
        if count is not None and not (count.isascii() and count.isdigit()):
            return None
        from evolve.quick._commands import run_log

        return run_log(
            repo,
            None if count is None else int(count),
            "--json" in flags,
            "--jsonl" in flags,
            tuple(positional),
        )
    if command == "show":
        if len(positional) != 1:
            return None
        from evolve.quick._commands import run_show

        return run_show(repo, positional[0], "--json" in flags)
    if positional:
        return None
    from evolve.quick._commands import run_memory

    return run_memory(
        repo, values.get("--as-of"), values.get("--scope"), values.get("--persona"),
        "--json" in flags,
    )  # fmt: skip
