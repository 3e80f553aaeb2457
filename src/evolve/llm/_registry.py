"""Model backends selected by name, through the `evolve.models` registry.

- ``mock``: scripted replies (tests pass a :class:`MockLLM` directly);
- ``sim``, ``sim:<variant>``: the offline simulator, registered by `evolve.sim` (it needs the
  environment);
- ``openai/<model>``: any OpenAI-compatible server (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
- ``anthropic/<model>``: the Anthropic Messages API (``ANTHROPIC_API_KEY``);
- an installed package's ``evolve.models`` entry point, keyed by a name or a provider prefix
  (``myprovider/``), or an import path ``module:Factory``.

A backend is a :class:`ModelFactory`: called with the rest of the name after its prefix
(``gpt-4o`` of ``openai/gpt-4o``; "" for a plain name), the environment, and the role's options.
Optional SDKs are imported only when their backend is selected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from evolve._registry import Registry
from evolve.llm._types import LLM

if TYPE_CHECKING:
    from evolve.envs import Environment


class ModelFactory(Protocol):
    """Builds a backend: `model` is the name after its prefix ("" for a plain name)."""

    def __call__(self, model: str, /, *, env: Environment | None = None, **options: Any) -> LLM: ...


models: Registry[ModelFactory] = Registry("model", "evolve.models")


@models.register("mock")
def mock_model(model: str, /, *, env: Environment | None = None, **options: Any) -> LLM:
    from evolve.llm._mock import MockLLM  # scripted replies: only where `mock` is chosen

    return MockLLM(**options)


@models.register("openai/")
def openai_model(model: str, /, *, env: Environment | None = None, **options: Any) -> LLM:
    from evolve.llm._openai import OpenAIChat

    return OpenAIChat(model, **options)


@models.register("anthropic/")
def anthropic_model(model: str, /, *, env: Environment | None = None, **options: Any) -> LLM:
    from evolve.llm._anthropic import AnthropicMessages

    return AnthropicMessages(model, **options)


def make_llm(name: str, *, env: Environment | None = None, **options: Any) -> LLM:
    """Build the backend `name`.

    Raises:
        UnknownName: for a name no backend answers to (one sentence listing the choices).
        ModelError: when the backend cannot be set up (a missing API key, say).
    """
    factory, model = models.resolve(name)
    return factory(model, env=env, **options)
