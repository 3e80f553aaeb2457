"""Run the evolve CLI in a process of its own with a scripted `mock` model (for the AppWorld
end-to-end tests): `python cli_runner.py SCRIPT ARGS...`, SCRIPT one of `text` (log in, send
the text, complete), `idle` (complete without doing the task) or `obedient` (like `text`, and
it greets and signs off as the persona wants once its prompt or memory says so).
Every role is scripted: the agent by SCRIPT, the updater (its reflection is the sign-off rule)
and the reflector (its guidance is the sign-off and the greeting rule), wherever the CLI builds
them (`run`, `train`, `evolve`).

The process exits like `evolve` does, so the test can check the AppWorld worker is gone.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from evolve.llm import JsonSchema, Message, MockLLM

FRIEND_PHONE = "5550100002"
REFLECTION = "Sign off every text message with a last line of a dash and my first name."
GREETING = "Start every text message with 'Hi <their first name>,'."


def _results(messages: Sequence[Message]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for m in messages:
        if m.role == "user" and m.content.startswith("Result of "):
            head, _, body = m.content.partition(":\n")
            out.append((head.removeprefix("Result of "), json.loads(body)))
    return out


def _action(tool: str, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def agent_text(messages: Sequence[Message], sign_off: bool = False, greet: bool = False) -> str:
    done = _results(messages)
    tools = [t for t, _ in done]
    if "supervisor__show_account_passwords" not in tools:
        return _action("supervisor__show_account_passwords")
    if "supervisor__show_profile" not in tools:
        return _action("supervisor__show_profile")
    if "phone__login" not in tools:
        passwords = dict(done[tools.index("supervisor__show_account_passwords")][1][0].items())
        profile = done[tools.index("supervisor__show_profile")][1]
        return _action(
            "phone__login", username=profile["phone_number"], password=passwords["password"]
        )
    if "phone__search_contacts" not in tools:
        token = done[tools.index("phone__login")][1]["access_token"]
        return _action("phone__search_contacts", access_token=token, query="Sam")
    if "phone__send_text_message" not in tools:
        token = done[tools.index("phone__login")][1]["access_token"]
        message = "Dinner is at 7."
        if greet:
            message = f"Hi Sam, {message}"
        if sign_off:
            message += f"\n- {done[tools.index('supervisor__show_profile')][1]['first_name']}"
        return _action(
            "phone__send_text_message",
            phone_number=FRIEND_PHONE,
            message=message,
            access_token=token,
        )
    return _action("supervisor__complete_task")


def agent_idle(messages: Sequence[Message]) -> str:
    return _action("supervisor__complete_task")


def agent_obedient(messages: Sequence[Message]) -> str:
    said = "\n".join(m.content for m in messages if not m.content.startswith("Result of "))
    return agent_text(messages, sign_off=REFLECTION in said, greet=GREETING in said)


def main(argv: list[str]) -> int:
    script, args = argv[0], argv[1:]
    agent = {"text": agent_text, "idle": agent_idle, "obedient": agent_obedient}[script]

    def responder(messages: Sequence[Message], schema: JsonSchema | None) -> str:
        if schema is not None and schema.name == "agent_action":
            return agent(messages)
        if schema is not None and schema.name == "reflector_edits":
            return json.dumps({"guidance": [REFLECTION, GREETING]})
        return json.dumps({"reflection": REFLECTION})

    def make_role_llm(config: Any, role: str, **_: Any) -> MockLLM:
        return MockLLM(responder)

    import evolve.evaluate._run as run_module
    import evolve.generations._loop as loop_module
    import evolve.train._train as train_module
    from evolve.cli._group import run

    # Each module that builds role models imported `make_role_llm` by name: patch each copy.
    for module in (run_module, train_module, loop_module):
        setattr(module, "make_role_llm", make_role_llm)  # noqa: B010 - a test seam, not an API
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
