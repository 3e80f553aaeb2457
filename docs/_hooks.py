"""mkdocs hooks: pages generated from the code, so the reference cannot drift from it.

`<!-- evolve:config-reference -->` becomes the table of every `evolve.yaml` key, read from the
sections that validate the file (`evolve.workspace.EvolveConfig` and its msgspec Structs:
each field's type, default, `msgspec.Meta` bounds and description).
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

import msgspec

MARKER = "<!-- evolve:config-reference -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from evolve.workspace._config import EvolveConfig

    return markdown.replace(MARKER, "\n".join(_model(EvolveConfig, "")))


def _section(annotation: Any) -> type[msgspec.Struct] | None:
    if inspect.isclass(annotation) and issubclass(annotation, msgspec.Struct):
        return annotation
    return None


def _model(model: type[msgspec.Struct], prefix: str) -> list[str]:
    rows, nested = [], []
    for field in msgspec.structs.fields(model):
        key = f"{prefix}{field.encode_name}"
        section = _section(field.type)
        if section is not None:
            nested.append((key, section))
            continue
        metas = _metas(field.type)
        rows.append(
            f"| `{key}` | {_type(field.type)} | {_default(field)} | {_limits(metas)} | "
            f"{_doc(metas)} |"
        )
    out: list[str] = []
    if rows:
        title = prefix.rstrip(".") or "top level"
        out += [f"## `{title}`" if prefix else "## Top level", ""]
        own = model.__dict__.get("__doc__") if prefix else None  # not the base section's
        if own:
            out += [" ".join(inspect.cleandoc(own).split()), ""]
        out += ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|", *rows, ""]
    for key, section in nested:
        out += _model(section, f"{key}.")
    return out


def _metas(annotation: Any) -> list[msgspec.Meta]:
    """The `Meta` of a field's type: its own, or its non-null member's (`X | None`)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return [m for m in typing.get_args(annotation)[1:] if isinstance(m, msgspec.Meta)]
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _metas(arg)]
    return []


def _type(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:  # a checked str (a name, a path): its base type
        return _type(typing.get_args(annotation)[0])
    if origin is tuple and typing.get_args(annotation)[1:] == (Ellipsis,):
        return f"list of {_type(typing.get_args(annotation)[0])}"
    if origin in (list, set, frozenset):
        return f"list of {_type(typing.get_args(annotation)[0])}"
    if origin is dict:
        key, value = typing.get_args(annotation)
        return f"map of {_type(key)} to {_type(value)}"
    if origin is typing.Literal:
        return " \\| ".join(f"`{v!r}`" for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if _section(annotation) is not None:
        return f"`{annotation.__name__}` (a mapping)"
    if annotation is type(None):
        return "null"
    return f"{getattr(annotation, '__name__', str(annotation))}".replace("|", "\\|")


def _default(field: msgspec.structs.FieldInfo) -> str:
    if field.default is not msgspec.NODEFAULT:
        value = field.default
    elif field.default_factory is not msgspec.NODEFAULT:
        value = field.default_factory()
    else:
        return "(required)"
    if isinstance(value, msgspec.Struct):
        return "(section)"
    shown = f"`{value!r}`"
    return shown if field.default_factory is msgspec.NODEFAULT else shown[:80]


def _limits(metas: list[msgspec.Meta]) -> str:
    parts = []
    for meta in metas:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


def _doc(metas: list[msgspec.Meta]) -> str:
    text = next((m.description for m in metas if m.description), "")
    return text.replace("\n", " ").replace("|", "\\|")
