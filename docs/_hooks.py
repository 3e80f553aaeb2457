"""mkdocs hooks: pages generated from the code, so the reference cannot drift from it.

`<!-- evolve:config-reference -->` becomes the table of every `evolve.yaml` key, read from the
pydantic model that validates the file (`evolve.workspace.EvolveConfig`).
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

MARKER = "<!-- evolve:config-reference -->"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from evolve.workspace._config import EvolveConfig

    return markdown.replace(MARKER, "\n".join(_model(EvolveConfig, "")))


def _section(annotation: Any) -> type[BaseModel] | None:
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _model(model: type[BaseModel], prefix: str) -> list[str]:
    rows, nested = [], []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        section = _section(field.annotation)
        if section is not None:
            nested.append((key, section))
            continue
        rows.append(
            f"| `{key}` | {_type(field.annotation)} | {_default(field)} | {_limits(field)} | "
            f"{_doc(field)} |"
        )
    out: list[str] = []
    if rows:
        title = prefix.rstrip(".") or "top level"
        out += [f"## `{title}`" if prefix else "## Top level", ""]
        own = model.__dict__.get("__doc__") if prefix else None  # not BaseModel's own
        if own:
            out += [" ".join(inspect.cleandoc(own).split()), ""]
        out += ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|", *rows, ""]
    for key, section in nested:
        out += _model(section, f"{key}.")
    return out


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


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined:
        if field.default_factory is not None:
            value = field.default_factory()  # type: ignore[call-arg]
            return f"`{value!r}`"[:80]
        return "(required)"
    if isinstance(field.default, BaseModel):
        return "(section)"
    return f"`{field.default!r}`"


def _limits(field: FieldInfo) -> str:
    parts = []
    for item in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None:
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


def _doc(field: FieldInfo) -> str:
    return (field.description or "").replace("\n", " ").replace("|", "\\|")
