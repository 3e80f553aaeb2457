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
    """The active variant of each module and the built-in variants, with their mechanisms."""
    from rich.markup import escape

    from evolve.harness import BUILTINS, MODULES, load_harness

    ws = open_workspace(workspace)
    harness = load_harness(ws.root)
    if as_json:
        emit_json(
            {
                module: {
                    "active": harness.choice[module][0],
                    "parameters": dict(harness.choice[module][1]),
                    "builtins": {
                        name: {
                            "mechanism": v.mechanism,
                            "parameters": {k: p.default for k, p in v.params.items()},
                        }
                        for name, v in BUILTINS[module].items()
                    },
                }
                for module in MODULES
            }
        )
        return
    for module in MODULES:
        name, params = harness.choice[module]
        shown = name + "".join(f" {k}={v}" for k, v in sorted(params.items()))
        stdout.print(f"[bold]{module}[/bold]: {escape(shown)}")
        for other, variant in BUILTINS[module].items():
            mark = "*" if other == name else " "
            stdout.print(f"  {mark} {other}: {escape(variant.mechanism)}")


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
