"""What the secrets grep test plants (tests/e2e/test_secrets_grep.py): an environment whose
task instructions carry a secret, and a model that plays `sim` but echoes every secret in its
replies and records every request it is sent.

Named from evolve.yaml by import path (`environment: _secret_plants:SecretWorld`, `models:
{updater: "_secret_plants:echo_sim"}`), so the commands run exactly as a user's would.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evolve.envs import Environment
from evolve.envs.persona_world import PersonaWorldEnv
from evolve.llm import Completion, JsonSchema, Message, make_llm

# None of these has a built-in secret shape (short, no prefix, no `password=`), so only
# redaction by value can hide them.
IN_VALUES = "quokka-Vault-7713"  # listed in redact.values
IN_ENV = "wombat-Depot-5519"  # the value of SECRET_PLANT_TOKEN, named in redact.env
IN_OPENAI = "numbat-Relay-8823"  # the value of OPENAI_API_KEY
IN_TASK = "dingo-Harbor-4041"  # in every task's instruction; listed in redact.values too
IN_NOTE = "bilby-Ledger-6062"  # in a hand note; listed in redact.values too
SECRETS = (IN_VALUES, IN_ENV, IN_OPENAI, IN_TASK, IN_NOTE)
ENV_NAME = "SECRET_PLANT_TOKEN"
CAPTURE = "SECRET_PLANT_CAPTURE"  # the JSONL file every request is appended to


class SecretWorld(PersonaWorldEnv):
    """persona_world, with a secret account reference in every task's instruction."""

    name = "persona_world"

    def __init__(self, evalset: Path, **kwargs: Any) -> None:
        super().__init__(evalset, **kwargs)
        self._tasks = {
            k: dataclasses.replace(t, instruction=f"{t.instruction} (account ref {IN_TASK})")
            for k, t in self._tasks.items()
        }
        self._by_instruction = {t.instruction: t for t in self._tasks.values()}


def _echo(value: Any) -> Any:
    """`value` with every secret appended to each sentence-like string (ids, ops and enums,
    which have no space, are left as they are so the reply still parses)."""
    if isinstance(value, str):
        return f"{value} {' '.join(SECRETS)}" if " " in value and len(value) > 12 else value
    if isinstance(value, dict):
        return {k: _echo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_echo(v) for v in value]
    return value


class EchoSim:
    """`sim`, with each secret echoed in the reply and each request recorded."""

    def __init__(self, env: Environment | None) -> None:
        self.inner = make_llm("sim", env=env)
        self.name = "echo-sim"

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        schema = json_schema.name if json_schema is not None else "text"
        with open(os.environ[CAPTURE], "a", encoding="utf-8") as out:
            record = {"schema": schema, "messages": [[m.role, m.content] for m in messages]}
            out.write(json.dumps(record) + "\n")
        done = self.inner.complete(
            messages,
            json_schema=json_schema,
            temperature=temperature,
            seed=seed,
            max_tokens=max_tokens,
        )
        try:
            payload = json.loads(done.text)
        except ValueError:
            return done
        return dataclasses.replace(done, text=json.dumps(_echo(payload)), model=self.name)


def echo_sim(model: str, /, *, env: Environment | None = None, **options: Any) -> EchoSim:
    return EchoSim(env)
