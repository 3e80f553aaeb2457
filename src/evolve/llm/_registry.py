"""Model backends selected by name.

- ``mock``: scripted replies (tests pass a :class:`MockLLM` directly);
- ``sim``: the offline simulator of `evolve.sim` (needs the environment);
- ``openai/<model>``: any OpenAI-compatible server (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
- ``anthropic/<model>``: the Anthropic Messages API (``ANTHROPIC_API_KEY``).

Optional SDKs are imported only when their backend is selected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evolve.errors import UnknownName
from evolve.llm._mock import MockLLM
from evolve.llm._types import LLM

if TYPE_CHECKING:
    from evolve.envs import Environment

KNOWN = ("sim", "mock", "openai/<model>", "anthropic/<model>")


def make_llm(name: str, *, env: Environment | None = None, **options: Any) -> LLM:
    """Build the backend `name`.

    Raises:
        UnknownName: for a name no backend answers to.
        ModelError: when the backend cannot be set up (a missing API key, say).
    """
    name = name.strip()
    if name == "sim" or name.startswith("sim:"):
        from evolve.sim import SimLLM

        if env is None:
            raise UnknownName("the sim model needs an environment; run it inside a workspace.")
        return SimLLM(env, **options)
    if name == "mock":
        return MockLLM(**options)
    provider, sep, model = name.partition("/")
    if sep and model:
        if provider == "openai":
            from evolve.llm._openai import OpenAIChat

            return OpenAIChat(model, **options)
        if provider == "anthropic":
            from evolve.llm._anthropic import AnthropicMessages

            return AnthropicMessages(model, **options)
    raise UnknownName(f"unknown model {name!r}; choose one of {', '.join(KNOWN)}.")
