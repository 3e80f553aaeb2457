"""Each role's model, built from `evolve.yaml` (and the command line's overrides)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from evolve.llm._cost import PricedLLM, Rate, find_rate
from evolve.llm._errors import KeyMissing
from evolve.llm._meter import current_meter
from evolve.llm._redacting import RedactingLLM
from evolve.llm._registry import make_llm
from evolve.llm._types import LLM
from evolve.redact import Redactor

if TYPE_CHECKING:
    from evolve.envs import Environment
    from evolve.llm._budget import Budget
    from evolve.workspace import EvolveConfig

RoleName = Literal["agent", "updater", "reflector", "evolver", "selector"]
ROLES: tuple[RoleName, ...] = ("agent", "updater", "reflector")
_HTTP = ("openai/", "anthropic/")
# What to do instead of exporting a missing key, in the words of the role's own setting
# (`--model` sets only the agent).
_INSTEAD: dict[RoleName, str] = {
    "agent": "choose another --model such as sim",
    "updater": "choose another --updater-model such as sim",
    "reflector": "choose another --reflector-model such as sim",
    "evolver": "set models.evolver in evolve.yaml to sim",
    "selector": "set models.selector in evolve.yaml to lexical or sim",
}


def with_models(
    config: EvolveConfig,
    *,
    agent: str | None = None,
    updater: str | None = None,
    reflector: str | None = None,
    cache: str | None = None,
) -> EvolveConfig:
    """`config` with the roles (and the cache mode) that are given replaced; the rest kept."""
    update: dict[str, Any] = {
        key: value
        for key, value in (
            ("agent", agent),
            ("updater", updater),
            ("reflector", reflector),
            ("cache", cache),
        )
        if value
    }
    if not update:
        return config
    models = config.models.model_validate({**config.models.model_dump(), **update})
    return config.model_copy(update={"models": models})


def make_role_llm(
    config: EvolveConfig,
    role: RoleName,
    *,
    env: Environment | None = None,
    budget: Budget | None = None,
) -> LLM:
    """The model of `role` as `config` sets it up: its backend, reply bound, timeouts,
    structured-output mode, request cache and price, behind the workspace's redactor (what
    each role is sent and what its replies may hold: `evolve.llm._redacting`).

    Raises:
        UnknownName: for a model name no backend answers to.
        ModelError: when the backend cannot be set up (a missing API key, say).
    """
    m = config.models
    name: str = getattr(m, role)
    options: dict[str, Any] = {}
    if name.strip().startswith(_HTTP):
        from evolve.llm import _http  # httpx: only for the HTTP backends, not sim or mock
        from evolve.llm._budget import Budget, RetryBudget

        r = m.retry
        options = {
            "timeout": m.timeout_s,
            "max_tokens_default": getattr(m.max_tokens, role),
            "retry": _http.RetryPolicy(
                max_attempts=r.attempts,
                base_delay=r.backoff_s,
                max_delay=r.max_backoff_s,
                max_retry_after=m.max_retry_wait_s,
                budget=RetryBudget(getattr(r.budget, role)),
            ),
            "budget": budget if budget is not None else Budget(m.total_timeout_s),
        }
        if name.strip().startswith("openai/"):
            options["structured"] = m.structured
            options["context_tokens"] = m.context_tokens
    if m.cache == "replay" and name.strip().startswith(_HTTP):
        # Replay must work without the endpoint or its key; the bound keeps the keys equal.
        llm: LLM = _Unbuilt(name, options["max_tokens_default"])
    else:
        try:
            llm = make_llm(name, env=env, **options)
        except KeyMissing as exc:
            if role == "agent":
                raise
            raise KeyMissing(exc.key_env, _INSTEAD[role]) from None
    redactor = Redactor.from_config(config.redact)
    if m.cache != "off":
        from evolve.llm._cache import CachedLLM  # only where requests are cached

        llm = CachedLLM(llm, m.cache, redactor=redactor)
    prices = {key: Rate(p.input, p.output) for key, p in config.prices.items()}
    rate = find_rate(llm.name, prices)
    if rate is not None:
        llm = PricedLLM(llm, rate)
    llm = RedactingLLM(llm, redactor, role)
    meter = current_meter()  # the running command counts every role's tokens (`_meter`)
    return llm if meter is None else meter.wrap(llm, role)


class _Unbuilt:
    """Stands for an HTTP backend in replay mode: the cache answers, nothing is sent."""

    def __init__(self, name: str, max_tokens_default: int) -> None:
        self.name = name.strip()
        self.max_tokens_default = max_tokens_default

    def complete(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never reached
        raise AssertionError("replay never asks the model")
