"""The task and split models of the evalset's files (validation only: see `_evalset`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evolve.envs._protocol import Split


class _TaskSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    family: str
    params: dict[str, Any]


class _ProcedureSpec(_TaskSpec):
    split: Split


class _Splits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    train: tuple[str, ...]
    dev: tuple[str, ...]
    holdout: tuple[str, ...]
