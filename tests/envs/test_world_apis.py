"""Every API of `persona_world`: one success and the refusals, all recorded; generated docs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from evolve.envs import ApiCall
from evolve.envs.persona_world import (
    CONTACTS_BY_KEY,
    History,
    PersonaWorld,
    PersonaWorldEnv,
    api_docs,
    tool_names,
)

REPO = Path(__file__).resolve().parents[2]
PERSONA = "alex"
EMAIL = "alex.kim@example.com"
PASSWORD = "fern-lamp-42"
SAM = CONTACTS_BY_KEY["sam"]

# The API surface, written out here on purpose: the docs must show exactly these parameters.
EXPECTED_PARAMS: dict[str, list[str]] = {
    "supervisor__show_profile": [],
    "supervisor__show_account_passwords": [],
    "supervisor__complete_task": ["answer"],
    "phone__search_contacts": ["query"],
    "phone__send_text_message": ["phone_number", "message"],
    "venmo__login": ["username", "password"],
    "venmo__show_payment_cards": ["access_token"],
    "venmo__show_transactions": ["access_token"],
    "venmo__send_payment": [
        "access_token",
        "receiver_email",
        "amount",
        "note",
        "visibility",
        "payment_card_id",
    ],
    "simple_note__create_note": ["title", "content"],
    "gmail__send_email": ["to", "subject", "body", "cc"],
    # read-back APIs of the procedure tasks (issue 13, envs/persona_world/_procedures.py)
    "phone__show_text_messages": [],
    "venmo__show_sent_payments": ["access_token"],
    "simple_note__show_notes": [],
    "gmail__show_sent_emails": [],
}


@pytest.fixture(scope="module")
def env() -> PersonaWorldEnv:
    return PersonaWorldEnv(REPO / "evalset")


@pytest.fixture
def world(env: PersonaWorldEnv) -> PersonaWorld:
    task = env.tasks("train")[0]
    return env.new_world(task, PERSONA, env.initial_history(PERSONA))


def _token(world: PersonaWorld) -> str:
    call = world.call("venmo__login", {"username": EMAIL, "password": PASSWORD})
    assert call.ok, call.error
    token = call.result["access_token"]
    assert isinstance(token, str) and token
    return token


def _refused(world: PersonaWorld, tool: str, args: dict[str, Any], needle: str) -> ApiCall:
    before = len(world.calls)
    call = world.call(tool, args)
    assert not call.ok
    assert call.result is None
    assert call.error is not None and needle in call.error
    assert len(world.calls) == before + 1 and world.calls[-1] == call
    return call


def _pay_args(token: str, **over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "access_token": token,
        "receiver_email": SAM.email,
        "amount": 12.5,
        "note": "Lunch",
    }
    args.update(over)
    return args


# --- supervisor ------------------------------------------------------------------------


def test_show_profile_success_hides_the_password(world: PersonaWorld) -> None:
    call = world.call("supervisor__show_profile", {})
    assert call.ok and call.tool == "supervisor__show_profile"
    assert call.result == {
        "first_name": "Alex",
        "last_name": "Kim",
        "email": EMAIL,
        "phone_number": "+1-555-0100",
    }
    assert PASSWORD not in str(call.result)


def test_show_profile_refuses_an_unexpected_argument(world: PersonaWorld) -> None:
    _refused(world, "supervisor__show_profile", {"user": "alex"}, "bad arguments")


def test_show_account_passwords_success(world: PersonaWorld) -> None:
    call = world.call("supervisor__show_account_passwords", {})
    assert call.ok
    assert call.result == [{"account_name": "venmo", "password": PASSWORD}]


def test_show_account_passwords_refuses_arguments(world: PersonaWorld) -> None:
    _refused(world, "supervisor__show_account_passwords", {"app": "venmo"}, "bad arguments")


def test_complete_task_marks_the_world_completed(world: PersonaWorld) -> None:
    assert not world.completed
    call = world.call("supervisor__complete_task", {"answer": "done"})
    assert call.ok and call.result == {"status": "completed"}
    assert world.completed


def test_complete_task_refuses_unknown_argument(world: PersonaWorld) -> None:
    _refused(world, "supervisor__complete_task", {"status": "done"}, "bad arguments")
    assert not world.completed


# --- phone -----------------------------------------------------------------------------


def test_search_contacts_success_is_case_insensitive(world: PersonaWorld) -> None:
    call = world.call("phone__search_contacts", {"query": "  sAM "})
    assert call.ok
    assert call.result == [
        {
            "name": "Sam Lee",
            "phone_number": SAM.phone_number,
            "email": SAM.email,
            "relationship": "friend",
        }
    ]
    assert world.call("phone__search_contacts", {"query": "nobody"}).result == []


def test_search_contacts_refuses_an_empty_query(world: PersonaWorld) -> None:
    _refused(world, "phone__search_contacts", {"query": "   "}, "must not be empty")


def test_send_text_message_success(world: PersonaWorld) -> None:
    call = world.call(
        "phone__send_text_message", {"phone_number": SAM.phone_number, "message": "Hi"}
    )
    assert call.ok and call.result == {"message_id": 1}
    assert world.state.texts == [{"phone_number": SAM.phone_number, "message": "Hi"}]


def test_send_text_message_refuses_an_unknown_number(world: PersonaWorld) -> None:
    _refused(
        world,
        "phone__send_text_message",
        {"phone_number": "+1-555-9999", "message": "Hi"},
        "no contact has the phone number",
    )
    assert world.state.texts == []


def test_send_text_message_refuses_an_empty_message(world: PersonaWorld) -> None:
    _refused(
        world,
        "phone__send_text_message",
        {"phone_number": SAM.phone_number, "message": " \n"},
        "must not be empty",
    )
    assert world.state.texts == []


# --- venmo -----------------------------------------------------------------------------


def test_login_success_returns_a_token(world: PersonaWorld) -> None:
    token = _token(world)
    assert PASSWORD not in token


@pytest.mark.parametrize(
    ("username", "password"),
    [(EMAIL, "wrong-password"), ("someone@example.com", PASSWORD), (EMAIL, "")],
)
def test_login_refuses_wrong_credentials(world: PersonaWorld, username: str, password: str) -> None:
    _refused(
        world,
        "venmo__login",
        {"username": username, "password": password},
        "wrong username or password",
    )


def test_show_payment_cards_success(world: PersonaWorld) -> None:
    call = world.call("venmo__show_payment_cards", {"access_token": _token(world)})
    assert call.ok
    assert [c["payment_card_id"] for c in call.result] == [1001, 1002, 1003]
    assert call.result[1]["name"] == "Amex ending 1005"


def test_show_payment_cards_refuses_a_bad_token(world: PersonaWorld) -> None:
    _refused(
        world, "venmo__show_payment_cards", {"access_token": "venmo-forged"}, "invalid access_token"
    )


def test_show_transactions_success_oldest_first(world: PersonaWorld) -> None:
    call = world.call("venmo__show_transactions", {"access_token": _token(world)})
    assert call.ok
    assert len(call.result) == 7
    assert call.result[0] == {
        "receiver_name": "Sam Lee",
        "receiver_email": SAM.email,
        "amount": 20.0,
        "payment_card_id": 1002,
    }
    assert call.result[-1]["receiver_name"] == "Omar Haddad"


def test_show_transactions_refuses_a_bad_token(world: PersonaWorld) -> None:
    _refused(world, "venmo__show_transactions", {"access_token": ""}, "invalid access_token")


def test_token_of_another_user_is_refused(env: PersonaWorldEnv) -> None:
    task = env.tasks("train")[0]
    other = env.new_world(task, "blair", env.initial_history("blair"))
    login = other.call(
        "venmo__login", {"username": "blair.okafor@example.com", "password": "quill-sun-17"}
    )
    assert login.ok
    mine = env.new_world(task, PERSONA, env.initial_history(PERSONA))
    _refused(
        mine, "venmo__show_payment_cards", {"access_token": login.result["access_token"]}, "invalid"
    )


def test_send_payment_success_uses_the_documented_defaults(world: PersonaWorld) -> None:
    call = world.call("venmo__send_payment", _pay_args(_token(world)))
    assert call.ok and call.result == {"payment_id": 1}
    assert world.state.payments == [
        {
            "receiver_email": SAM.email,
            "amount": 12.5,
            "note": "Lunch",
            "visibility": "public",
            "payment_card_id": 1001,
        }
    ]


def test_send_payment_success_with_explicit_visibility_and_card(world: PersonaWorld) -> None:
    call = world.call(
        "venmo__send_payment", _pay_args(_token(world), visibility="friends", payment_card_id=1003)
    )
    assert call.ok
    assert world.state.payments[-1]["visibility"] == "friends"
    assert world.state.payments[-1]["payment_card_id"] == 1003


@pytest.mark.parametrize(
    ("over", "needle"),
    [
        ({"visibility": "secret"}, "visibility must be one of"),
        ({"visibility": "Private"}, "visibility must be one of"),
        ({"payment_card_id": 9999}, "no payment card has id"),
        ({"payment_card_id": 2001}, "no payment card has id"),  # another persona's card
        ({"receiver_email": "stranger@example.com"}, "no Venmo user has the email"),
        ({"amount": 0}, "positive number"),
        ({"amount": -5.0}, "positive number"),
        ({"amount": True}, "'amount' must be a number, not true/false"),
        ({"amount": "12.50"}, "'amount' must be a number, not text"),
        ({"amount": float("nan")}, "positive number"),
        ({"amount": float("inf")}, "positive number"),
    ],
)
def test_send_payment_refusals(world: PersonaWorld, over: dict[str, Any], needle: str) -> None:
    _refused(world, "venmo__send_payment", _pay_args(_token(world), **over), needle)
    assert world.state.payments == []


def test_send_payment_refuses_a_bad_token(world: PersonaWorld) -> None:
    _refused(world, "venmo__send_payment", _pay_args("not-a-token"), "invalid access_token")
    assert world.state.payments == []


# --- simple_note -----------------------------------------------------------------------


def test_create_note_success(world: PersonaWorld) -> None:
    call = world.call("simple_note__create_note", {"title": "Groceries", "content": "milk\neggs"})
    assert call.ok and call.result == {"note_id": 1}
    assert world.state.notes == [{"title": "Groceries", "content": "milk\neggs"}]


def test_create_note_refuses_an_empty_title(world: PersonaWorld) -> None:
    _refused(world, "simple_note__create_note", {"title": "  ", "content": "milk"}, "title")
    assert world.state.notes == []


# --- gmail -----------------------------------------------------------------------------


def test_send_email_success_with_and_without_cc(world: PersonaWorld) -> None:
    call = world.call(
        "gmail__send_email",
        {"to": SAM.email, "subject": "Hello", "body": "Hi Sam", "cc": [EMAIL]},
    )
    assert call.ok and call.result == {"email_id": 1}
    plain = world.call("gmail__send_email", {"to": SAM.email, "subject": "S", "body": "B"})
    assert plain.ok
    assert world.state.emails[0]["cc"] == [EMAIL]
    assert world.state.emails[1]["cc"] == []


@pytest.mark.parametrize(
    ("cc", "needle"),
    [
        (EMAIL, "'cc' must be a list of text or null, not text"),
        ([EMAIL, "not-an-address"], "cc must be a list of email addresses"),
        ([1], "'cc' must be a list of text or null, not a list"),
        ({"a": EMAIL}, "'cc' must be a list of text or null, not an object"),
    ],
)
def test_send_email_refuses_a_cc_that_is_not_a_list_of_addresses(
    world: PersonaWorld, cc: Any, needle: str
) -> None:
    _refused(
        world,
        "gmail__send_email",
        {"to": SAM.email, "subject": "S", "body": "B", "cc": cc},
        needle,
    )
    assert world.state.emails == []


def test_send_email_refuses_a_bad_recipient(world: PersonaWorld) -> None:
    _refused(
        world, "gmail__send_email", {"to": "Sam Lee", "subject": "S", "body": "B"}, "not an email"
    )


# --- unknown tools and bad arguments ---------------------------------------------------


@pytest.mark.parametrize("tool", ["venmo__delete_account", "nonsense", "phone__", "__login"])
def test_unknown_tool_is_a_recorded_failed_call(world: PersonaWorld, tool: str) -> None:
    call = _refused(world, tool, {"x": 1}, "there is no API named")
    assert call.args == {"x": 1}


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("phone__send_text_message", {"phone_number": SAM.phone_number}),  # missing message
        ("phone__search_contacts", {"query": "sam", "limit": 3}),  # unexpected argument
        ("venmo__login", {}),
        ("simple_note__create_note", {"name": "x", "content": "y"}),
    ],
)
def test_bad_arguments_are_a_recorded_failed_call(
    world: PersonaWorld, tool: str, args: dict[str, Any]
) -> None:
    _refused(world, tool, args, f"bad arguments for {tool}")


def test_every_call_is_recorded_in_order(world: PersonaWorld) -> None:
    world.call("supervisor__show_profile", {})
    world.call("nope__nope", {})
    world.call("phone__search_contacts", {"query": ""})
    world.call("supervisor__complete_task", {})
    assert [(c.tool, c.ok) for c in world.calls] == [
        ("supervisor__show_profile", True),
        ("nope__nope", False),
        ("phone__search_contacts", False),
        ("supervisor__complete_task", True),
    ]


def test_recorded_args_are_a_copy(world: PersonaWorld) -> None:
    args = {"query": "sam"}
    call = world.call("phone__search_contacts", args)
    args["query"] = "changed"
    assert call.args == {"query": "sam"}


def test_each_episode_gets_a_fresh_world(env: PersonaWorldEnv) -> None:
    task = env.tasks("train")[0]
    history: History = env.initial_history(PERSONA)
    first = env.new_world(task, PERSONA, history)
    first.call("simple_note__create_note", {"title": "T", "content": "c"})
    first.call("supervisor__complete_task", {})
    second = env.new_world(task, PERSONA, history)
    assert second.calls == () and not second.completed and second.state.notes == []


# --- docs ------------------------------------------------------------------------------


_DOC_LINE = re.compile(r"^- (?P<tool>\w+)\((?P<params>.*?)\): (?P<doc>.+)$")


def test_tool_names_are_the_expected_api_surface(env: PersonaWorldEnv) -> None:
    assert tool_names() == sorted(EXPECTED_PARAMS)
    assert env.tools() == sorted(EXPECTED_PARAMS)


def test_api_docs_list_every_tool_with_its_parameters(env: PersonaWorldEnv) -> None:
    docs = env.api_docs()
    assert docs == api_docs()
    seen: dict[str, list[str]] = {}
    for line in docs.splitlines():
        match = _DOC_LINE.match(line)
        assert match, f"undocumented or malformed line: {line!r}"
        params = [p.split(":")[0].strip() for p in match["params"].split(", ") if p]
        seen[match["tool"]] = params
        assert match["doc"].strip()
    assert seen == EXPECTED_PARAMS


def test_api_docs_show_types_and_defaults() -> None:
    docs = api_docs()
    assert "visibility: str = 'public'" in docs
    assert "payment_card_id: int | None = None" in docs
    assert "cc: list[str] | None = None" in docs
    assert "amount: float" in docs


@pytest.mark.parametrize(
    ("tool", "args", "needle"),
    [
        ("phone__search_contacts", {"query": 5}, "'query' must be text, not an integer"),
        ("phone__search_contacts", {"query": None}, "'query' must be text, not null"),
        ("phone__search_contacts", {"query": ["Sam"]}, "'query' must be text, not a list"),
        (
            "phone__send_text_message",
            {"phone_number": {}, "message": "hi"},
            "'phone_number' must be text, not an object",
        ),
        (
            "phone__send_text_message",
            {"phone_number": SAM.phone_number, "message": 7},
            "'message' must be text, not an integer",
        ),
        ("simple_note__create_note", {"title": True, "content": "x"}, "'title' must be text"),
        ("supervisor__complete_task", {"answer": {"a": 1}}, "'answer' must be text or null"),
        ("venmo__show_payment_cards", {"access_token": 12345}, "'access_token' must be text"),
    ],
)
def test_wrong_typed_arguments_are_a_recorded_failed_call(
    world: PersonaWorld, tool: str, args: dict[str, Any], needle: str
) -> None:
    call = _refused(world, tool, args, needle)
    assert call.error is not None and call.error.startswith(f"bad arguments for {tool}: ")
    assert not world.completed


def test_wrong_typed_payment_fields_are_refused(world: PersonaWorld) -> None:
    token = _token(world)
    for over, needle in (
        ({"receiver_email": {}}, "'receiver_email' must be text"),
        ({"payment_card_id": [1]}, "'payment_card_id' must be an integer or null"),
        ({"payment_card_id": 1.5}, "'payment_card_id' must be an integer or null"),
        ({"note": 3}, "'note' must be text"),
    ):
        _refused(world, "venmo__send_payment", _pay_args(token, **over), needle)
    assert world.state.payments == []
