"""The specific model failures a caller may want to tell apart; all are `ModelError`s."""

from __future__ import annotations

from evolve.errors import ModelError


class ShapeRefused(ModelError):
    """The server refused the request's shape (its `response_format`, schema or tools).

    Never retried as transient: the caller moves down the structured-output ladder instead.
    """

    def __init__(self, message: str, *, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class ReplyCut(ModelError):
    """The reply was cut short (by `max_tokens`) before its structure was complete; not used."""


class ReplyMalformed(ModelError):
    """The provider's answer cannot be used as a reply: its body is not JSON (or nests too
    deep to parse) or not the API's shape, a usage count is not a finite non-negative integer, or its text cannot be
    encoded (a lone surrogate). Nothing of it enters a conversation; the agent records the
    turn as a failed one with this sentence (`evolve.agent.run_agent`)."""


class ReplyRefused(ModelError):
    """The model declined to answer (Anthropic `stop_reason: refusal`, OpenAI `refusal`)."""


class TurnPaused(ModelError):
    """The provider paused a long-running turn (Anthropic `stop_reason: pause_turn`)."""


class ReplayMiss(ModelError):
    """`--cache replay` met a request that is not in the cache."""


class BudgetSpent(ModelError):
    """The run's total time budget for model requests is spent."""


class KeyMissing(ModelError):
    """An HTTP backend's API key is not set. The sentence offers `--model` (the agent's
    flag); `evolve.llm._roles.make_role_llm` says it again with the setting of the role the
    model was built for (`--updater-model`, `models.selector` in evolve.yaml, ...)."""

    def __init__(self, key_env: str, instead: str = "choose another --model such as sim") -> None:
        super().__init__(f"{key_env} is not set; export it, or {instead}.")
        self.key_env = key_env


class RequestFailed(ModelError):
    """A request failed in a way that may pass another time (it timed out, the connection
    was lost, the server answered 429 or 5xx) on every try the role's retry budget allowed
    (`models.retry` in evolve.yaml).

    Not a mistake in the setup: the episode that made the request is recorded as failed,
    with this sentence, and the run goes on (`evolve.agent.run_agent`); what the run did is
    kept and it says how many episodes failed."""


class ContextTooSmall(ModelError):
    """The request cannot fit the model's context window, even with what may be cut cut
    (`evolve.llm._window`); refused before anything is sent, in one sentence naming the
    setting to change. A mistake in the setup: the command stops."""
