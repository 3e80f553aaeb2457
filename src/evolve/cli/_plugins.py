"""`evolve plugins`: every name each extension point answers to, and where it comes from.

Also :class:`Registered`, the option type of a name the registries resolve (`--recipe`,
`--executor`): any registered, installed or import-path name passes, and an unknown one is
refused with the registry's sentence, as a usage error.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evolve._registry import Entry, Registry, is_import_path
from evolve.cli._common import emit_json, json_option, workspace_option
from evolve.errors import NotAWorkspace, UnknownName

if TYPE_CHECKING:
    from evolve.workspace import EvolveConfig

# Each extension point: the module that declares its registry, and the registry's name there
# (imported when asked: listing loads every built-in).
GROUPS: dict[str, tuple[str, str]] = {
    "models": ("evolve.llm._registry", "models"),
    "recipes": ("evolve.updaters._base", "recipes"),
    "environments": ("evolve.envs._registry", "environments"),
    "executors": ("evolve.executors._base", "executors"),
    "agents": ("evolve.agent._registry", "agents"),
}


def registry(group: str) -> Registry[Any]:
    """The registry of `group` (a key of :data:`GROUPS`)."""
    module, name = GROUPS[group]
    found: Registry[Any] = getattr(importlib.import_module(module), name)
    return found


def configured_names(config: EvolveConfig) -> dict[str, list[str]]:
    """The names a workspace's evolve.yaml gives each extension point."""
    m = config.models
    return {
        "models": [m.agent, m.updater, m.reflector, m.evolver, m.selector],
        "recipes": [config.train.recipe, *config.render.recipes],
        "environments": [config.environment],
        "executors": [],
        "agents": [config.agent.agent_name],
    }


def installed(config: EvolveConfig | None = None) -> dict[str, list[Entry]]:
    """Each extension point's entries: built-ins, installed entry points and, given a
    workspace's `config`, the import paths it names (imported now).

    Raises:
        UnknownName: an import path in `config`, or an entry point, cannot be imported.
    """
    named = configured_names(config) if config is not None else {}
    out: dict[str, list[Entry]] = {}
    for group in GROUPS:
        found = registry(group)
        for name in named.get(group, []):
            if is_import_path(name):
                found.lookup(name)
        out[group] = found.entries()
    return out


def _config(workspace: Path | None) -> EvolveConfig | None:
    from evolve.workspace import Workspace

    try:
        return Workspace.find(workspace).config
    except NotAWorkspace:
        if workspace is not None:
            raise
        return None  # outside a workspace: what is installed, without its import paths


@click.command("plugins")
@json_option
@workspace_option
def plugins_cmd(as_json: bool, workspace: Path | None) -> None:
    """List the models, recipes, environments, executors and agents evolve knows, and where each
    comes from: built-in, an installed package's entry point, or an import path that the
    workspace's evolve.yaml names (module:Object)."""
    groups = installed(_config(workspace))
    if as_json:
        emit_json(
            {
                group: [
                    {
                        "name": e.name,
                        "source": e.source,
                        "where": e.where,
                        "distribution": e.distribution,
                    }
                    for e in entries
                ]
                for group, entries in groups.items()
            }
        )
        return
    for group, entries in groups.items():
        click.echo(f"{group}:")
        width = max((len(e.name) for e in entries), default=0)
        for e in entries:
            source = f"{e.source} ({e.distribution})" if e.distribution else e.source
            click.echo(f"  {e.name.ljust(width)}  {source}: {e.where}")


class Registered(click.ParamType[str, str]):
    """A name that the registry of `group` resolves; `also` names pass as they are (`auto`)."""

    name = "name"

    def __init__(self, group: str, *, also: tuple[str, ...] = ()) -> None:
        self.group = group
        self.also = also

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in self.also:
            return value
        try:
            registry(self.group).lookup(value)
        except UnknownName as exc:
            self.fail(str(exc), param, ctx)
        return value
