"""`evolve harness`: the active variant of each module, and switching one (a commit)."""

from __future__ import annotations

from pathlib import Path

import click

from evolve.cli._common import emit_json, json_option, open_workspace, stdout, workspace_option


@click.group("harness")
def harness_group() -> None:
    """The agent's five modules (tools, context, skills, memory, workflow): which variant of
    each is active (prompts/harness.yaml) and which built-ins exist (docs/harness.md)."""


@harness_group.command("show")
@json_option
@workspace_option
def harness_show(as_json: bool, workspace: Path | None) -> None:
    """The active variant of each module, the built-in variants with their mechanisms, and
    the workspace's variant files (harness/<module>/<name>.py) with their review state: a
    model-written file runs only once a person approved its text."""
    from rich.markup import escape

    from evolve.harness import BUILTINS, DEFAULTS, MODULES
    from evolve.harness._config import load_choice, variant_files

    ws = open_workspace(workspace)
    choice = load_choice(ws.root)
    files = variant_files(ws.root)
    active = {m: choice.get(m, (DEFAULTS[m], {})) for m in MODULES}
    if as_json:
        emit_json(
            {
                module: {
                    "active": active[module][0],
                    "parameters": dict(active[module][1]),
                    "builtins": {
                        name: {
                            "mechanism": v.mechanism,
                            "parameters": {k: p.default for k, p in v.params.items()},
                        }
                        for name, v in BUILTINS[module].items()
                    },
                    "files": {name: {"approved": ok} for name, ok in files.get(module, {}).items()},
                }
                for module in MODULES
            }
        )
        return
    for module in MODULES:
        name, params = active[module]
        shown = name + "".join(f" {k}={v}" for k, v in sorted(params.items()))
        if name not in BUILTINS[module] and not files.get(module, {}).get(name, False):
            shown += " (awaits review: it does not run until a person approves it)"
        stdout.print(f"[bold]{module}[/bold]: {escape(shown)}")
        for other, variant in BUILTINS[module].items():
            mark = "*" if other == name else " "
            stdout.print(f"  {mark} {other}: {escape(variant.mechanism)}")
        for other, ok in files.get(module, {}).items():
            mark = "*" if other == name else " "
            state = (
                "approved"
                if ok
                else f"awaits review (evolve review approve-variant {module} {other})"
            )
            stdout.print(f"  {mark} {escape(other)}: workspace file, {escape(state)}")


@harness_group.command("set")
@click.argument("module")
@click.argument("variant")
@click.option(
    "--param", "params", multiple=True, metavar="NAME=N", help="A parameter of the variant."
)
@click.option("--reason", help="Why (kept in the commit's body).")
@json_option
@workspace_option
def harness_set(
    module: str,
    variant: str,
    params: tuple[str, ...],
    reason: str | None,
    as_json: bool,
    workspace: Path | None,
) -> None:
    """Make VARIANT the active variant of MODULE: one commit of prompts/harness.yaml, which
    `evolve revert` takes back."""
    from evolve.errors import EvolveError
    from evolve.generations._harness import switch_harness

    value: object = variant
    if params:
        entry: dict[str, object] = {"variant": variant}
        for item in params:
            name, eq, number = item.partition("=")
            if not eq or not number.strip().lstrip("-").isdigit():
                raise EvolveError(f"--param {item!r} must be NAME=N (a whole number).")
            entry[name.strip()] = int(number)
        value = entry
    done = switch_harness(open_workspace(workspace), {module: value}, reason=reason)
    if as_json:
        emit_json({"commit": done.commit, "module": module, "variant": variant})
    elif done.commit is None:
        stdout.print(f"{module} is already {variant}; nothing to commit.")
    else:
        stdout.print(f"{module} -> {variant} in {done.commit[:10]}")
