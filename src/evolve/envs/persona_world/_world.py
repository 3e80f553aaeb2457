"""The apps of `persona_world`, with AppWorld-shaped `app__api` tool names.

API documentation is generated from these methods (signature and docstring), and every call
is recorded, including failed ones. The world is fresh for each episode and deterministic.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Union, get_args, get_origin, get_type_hints

import msgspec

from evolve._io import sha256_hex
from evolve.envs._protocol import ApiCall

VISIBILITIES = ("private", "friends", "public")


class ApiError(Exception):
    """An API refused the call; the message is what the agent sees."""


@dataclass(frozen=True)
class Contact:
    key: str
    name: str
    phone_number: str
    email: str
    relationship: str

    @property
    def first_name(self) -> str:
        return self.name.split()[0]


CONTACTS: tuple[Contact, ...] = (
    Contact("sam", "Sam Lee", "+1-555-0101", "sam.lee@example.com", "friend"),
    Contact("jordan", "Jordan Park", "+1-555-0102", "jordan.park@example.com", "friend"),
    Contact("riley", "Riley Chen", "+1-555-0103", "riley.chen@example.com", "coworker"),
    Contact("morgan", "Morgan Diaz", "+1-555-0104", "morgan.diaz@example.com", "family"),
    Contact("taylor", "Taylor Brooks", "+1-555-0105", "taylor.brooks@example.com", "friend"),
    Contact("jamie", "Jamie Fox", "+1-555-0106", "jamie.fox@example.com", "coworker"),
    Contact("priya", "Priya Nair", "+1-555-0107", "priya.nair@example.com", "family"),
    Contact("omar", "Omar Haddad", "+1-555-0108", "omar.haddad@example.com", "friend"),
)
CONTACTS_BY_KEY = {c.key: c for c in CONTACTS}


@dataclass(frozen=True)
class Card:
    payment_card_id: int
    name: str

    @property
    def last4(self) -> str:
        return self.name[-4:]


@dataclass(frozen=True)
class Payment:
    """A payment in the user's history (before or during a training stream)."""

    contact: str
    amount: float
    card: int


@dataclass(frozen=True)
class Profile:
    first_name: str
    last_name: str
    email: str
    phone_number: str
    venmo_password: str

    @property
    def initials(self) -> str:
        return (self.first_name[:1] + self.last_name[:1]).upper()


class _Api(msgspec.Struct):
    app: str
    name: str
    func: Callable[..., Any]


_REGISTRY: dict[str, _Api] = {}


def api(app: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a method of :class:`PersonaWorldState` as the tool `app__<method name>`."""

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        name = func.__name__
        _REGISTRY[f"{app}__{name}"] = _Api(app, name, func)
        return func

    return wrap


@dataclass
class PersonaWorldState:
    """The state of one episode's world and its API implementations."""

    profile: Profile
    cards: tuple[Card, ...]
    history: tuple[Payment, ...]
    texts: list[dict[str, Any]] = field(default_factory=list)
    payments: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    emails: list[dict[str, Any]] = field(default_factory=list)
    completed: bool = False

    @property
    def _token(self) -> str:
        return "venmo-" + sha256_hex(self.profile.email + self.profile.venmo_password)[:16]

    def _auth(self, access_token: str) -> None:
        if access_token != self._token:
            raise ApiError("invalid access_token; call venmo__login first.")

    # supervisor ---------------------------------------------------------------------
    @api("supervisor")
    def show_profile(self) -> dict[str, str]:
        """Show the profile of the user you work for: first_name, last_name, email, phone_number."""
        p = self.profile
        return {
            "first_name": p.first_name,
            "last_name": p.last_name,
            "email": p.email,
            "phone_number": p.phone_number,
        }

    @api("supervisor")
    def show_account_passwords(self) -> list[dict[str, str]]:
        """Show the user's app account names and passwords."""
        return [{"account_name": "venmo", "password": self.profile.venmo_password}]

    @api("supervisor")
    def complete_task(self, answer: str | None = None) -> dict[str, str]:
        """Mark the task as done. Call this last, once the task is complete."""
        self.completed = True
        return {"status": "completed"}

    # phone --------------------------------------------------------------------------
    @api("phone")
    def search_contacts(self, query: str) -> list[dict[str, str]]:
        """Search the user's contacts by name; returns name, phone_number, email, relationship."""
        q = query.strip().lower()
        if not q:
            raise ApiError("query must not be empty.")
        return [
            {
                "name": c.name,
                "phone_number": c.phone_number,
                "email": c.email,
                "relationship": c.relationship,
            }
            for c in CONTACTS
            if q in c.name.lower()
        ]

    @api("phone")
    def send_text_message(self, phone_number: str, message: str) -> dict[str, int]:
        """Send a text message (SMS) to a phone number."""
        if phone_number not in {c.phone_number for c in CONTACTS}:
            raise ApiError(f"no contact has the phone number {phone_number!r}.")
        if not message.strip():
            raise ApiError("message must not be empty.")
        self.texts.append({"phone_number": phone_number, "message": message})
        return {"message_id": len(self.texts)}

    # venmo --------------------------------------------------------------------------
    @api("venmo")
    def login(self, username: str, password: str) -> dict[str, str]:
        """Log in to Venmo with the user's email and password; returns an access_token."""
        if username != self.profile.email or password != self.profile.venmo_password:
            raise ApiError("wrong username or password.")
        return {"access_token": self._token}

    @api("venmo")
    def show_payment_cards(self, access_token: str) -> list[dict[str, Any]]:
        """List the user's payment cards: payment_card_id and name."""
        self._auth(access_token)
        return [{"payment_card_id": c.payment_card_id, "name": c.name} for c in self.cards]

    @api("venmo")
    def show_transactions(self, access_token: str) -> list[dict[str, Any]]:
        """List the user's past payments, oldest first: receiver, amount, payment_card_id."""
        self._auth(access_token)
        out = []
        for p in self.history:
            contact = CONTACTS_BY_KEY[p.contact]
            out.append(
                {
                    "receiver_name": contact.name,
                    "receiver_email": contact.email,
                    "amount": p.amount,
                    "payment_card_id": p.card,
                }
            )
        return out

    @api("venmo")
    def send_payment(
        self,
        access_token: str,
        receiver_email: str,
        amount: float,
        note: str,
        visibility: str = "public",
        payment_card_id: int | None = None,
    ) -> dict[str, int]:
        """Send money. visibility is one of private, friends, public (default public);
        payment_card_id defaults to the user's first card."""
        self._auth(access_token)
        if receiver_email not in {c.email for c in CONTACTS}:
            raise ApiError(f"no Venmo user has the email {receiver_email!r}.")
        if (
            not isinstance(amount, int | float)
            or isinstance(amount, bool)
            or not math.isfinite(amount)
            or amount <= 0
        ):
            raise ApiError("amount must be a positive number.")
        if visibility not in VISIBILITIES:
            raise ApiError(f"visibility must be one of {', '.join(VISIBILITIES)}.")
        card = self.cards[0].payment_card_id if payment_card_id is None else payment_card_id
        if card not in {c.payment_card_id for c in self.cards}:
            raise ApiError(f"no payment card has id {payment_card_id!r}.")
        self.payments.append(
            {
                "receiver_email": receiver_email,
                "amount": float(amount),
                "note": note,
                "visibility": visibility,
                "payment_card_id": card,
            }
        )
        return {"payment_id": len(self.payments)}

    # simple_note --------------------------------------------------------------------
    @api("simple_note")
    def create_note(self, title: str, content: str) -> dict[str, int]:
        """Create a private note with a title and content (plain text, one item per line)."""
        if not title.strip():
            raise ApiError("title must not be empty.")
        self.notes.append({"title": title, "content": content})
        return {"note_id": len(self.notes)}

    # gmail --------------------------------------------------------------------------
    @api("gmail")
    def send_email(
        self, to: str, subject: str, body: str, cc: list[str] | None = None
    ) -> dict[str, int]:
        """Send an email. cc is an optional list of email addresses to copy."""
        if "@" not in to:
            raise ApiError(f"{to!r} is not an email address.")
        if cc is not None and (
            not isinstance(cc, list) or not all(isinstance(a, str) and "@" in a for a in cc)
        ):
            raise ApiError("cc must be a list of email addresses.")
        self.emails.append({"to": to, "subject": subject, "body": body, "cc": list(cc or [])})
        return {"email_id": len(self.emails)}


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("NoneType", "None")


def api_docs() -> str:
    """Documentation of every API, generated from the code."""
    lines = []
    for tool, entry in sorted(_REGISTRY.items()):
        sig = inspect.signature(entry.func)
        hints = get_type_hints(entry.func)
        params = []
        for pname, param in sig.parameters.items():
            if pname == "self":
                continue
            text = f"{pname}: {_type_name(hints.get(pname, Any))}"
            if param.default is not inspect.Parameter.empty:
                text += f" = {param.default!r}"
            params.append(text)
        doc = " ".join((entry.func.__doc__ or "").split())
        lines.append(f"- {tool}({', '.join(params)}): {doc}")
    return "\n".join(lines)


_TYPE_WORDS = {str: "text", int: "an integer", float: "a number", list: "a list", dict: "an object"}


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    for kind, word in _TYPE_WORDS.items():
        if isinstance(value, kind):
            return word
    return type(value).__name__


def _fits(value: Any, annotation: Any) -> bool:
    """Whether a JSON value fits a parameter annotation (str, int, float, list[str], X | None)."""
    if annotation is Any:
        return True
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return any(_fits(value, arm) for arm in get_args(annotation))
    if annotation is type(None):
        return value is None
    if isinstance(value, bool):
        return annotation is bool
    if annotation is float:
        return isinstance(value, int | float)
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return isinstance(value, list) and all(_fits(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    return isinstance(annotation, type) and isinstance(value, annotation)


def _expected(annotation: Any) -> str:
    arms = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else ()
    if arms:
        return " or ".join(_expected(a) for a in arms)
    if annotation is type(None):
        return "null"
    origin = get_origin(annotation)
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return f"a list of {_expected(item)}" if item is not Any else "a list"
    return _TYPE_WORDS.get(annotation, getattr(annotation, "__name__", str(annotation)))


@cache
def _hints(tool: str) -> dict[str, Any]:
    entry = _REGISTRY[tool]
    hints = get_type_hints(entry.func)
    hints.pop("return", None)
    return hints


def check_arguments(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """None if every argument has its parameter's type, else what is wrong (one clause)."""
    hints = _hints(tool)
    for name, value in arguments.items():
        annotation = hints.get(name, Any)
        if not _fits(value, annotation):
            return f"{name!r} must be {_expected(annotation)}, not {_describe(value)}"
    return None


def tool_names() -> list[str]:
    return sorted(_REGISTRY)


class PersonaWorld:
    """A world for one episode; implements the :class:`evolve.envs.World` protocol."""

    def __init__(self, state: PersonaWorldState) -> None:
        self.state = state
        self._calls: list[ApiCall] = []

    @property
    def calls(self) -> Sequence[ApiCall]:
        return tuple(self._calls)

    @property
    def completed(self) -> bool:
        return self.state.completed

    def call(self, tool: str, args: Mapping[str, Any]) -> ApiCall:
        app, _, name = tool.partition("__")
        entry = _REGISTRY.get(tool)
        if entry is None:
            record = ApiCall(app, name, dict(args), False, error=f"there is no API named {tool!r}.")
            self._calls.append(record)
            return record
        try:
            bound = inspect.signature(entry.func).bind(self.state, **dict(args))
        except TypeError as exc:
            record = ApiCall(
                app, name, dict(args), False, error=f"bad arguments for {tool}: {exc}."
            )
            self._calls.append(record)
            return record
        wrong = check_arguments(tool, bound.arguments)
        if wrong is not None:
            record = ApiCall(
                app, name, dict(args), False, error=f"bad arguments for {tool}: {wrong}."
            )
            self._calls.append(record)
            return record
        try:
            result = entry.func(*bound.args, **bound.kwargs)
        except ApiError as exc:
            record = ApiCall(app, name, dict(args), False, error=str(exc))
        else:
            record = ApiCall(app, name, dict(args), True, result=result)
        self._calls.append(record)
        return record
