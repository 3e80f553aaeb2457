"""A retrying JSON POST over `httpx`, shared by the HTTP model backends."""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from evolve._text import encodable, json_depth
from evolve.errors import ModelError
from evolve.executors._slots import request_slot
from evolve.llm._budget import RetryBudget
from evolve.llm._errors import ReplyMalformed, RequestFailed, ShapeRefused
from evolve.llm._transport import MAX_IDLE, plain_http_transport

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 120.0
# The longest a server's `Retry-After` (or `overloaded_error`) is honoured before giving up.
MAX_RETRY_AFTER = 60.0
DEFAULT_TIMEOUT = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)

# 529 is Anthropic's "overloaded"; the rest are the usual transient statuses.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
# Failures that may pass another time: a connection that did not open or was lost, and a
# request that timed out (its response is closed at once, so no abandoned request stays
# open at the server while the next try waits its turn). Each retry takes one from the
# role's budget (`RetryBudget`), so a server that is down does not cost every request all
# its tries.
_TRANSIENT_ERRORS = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)
_DETAIL_LIMIT = 300
# How deep a provider's answer may nest: its envelope (a few levels) around a structured reply
# (`evolve._text.MAX_DEPTH`), with room to spare. Checked before parsing, so no answer can
# raise RecursionError in the decoder or in anything that walks the value.
MAX_BODY_DEPTH = 64
# The most tokens one reply may claim to have used: more is not a count but garbage (and would
# overflow the cost once multiplied by a price).
MAX_TOKENS_COUNTED = 10**12
# A private generator, so backoff jitter never disturbs seeded uses of the global one.
_RNG = random.Random()


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry transient failures.

    Attributes:
        max_attempts: total tries, the first included.
        base_delay: seconds before the second try; doubles for each further try.
        max_delay: upper bound on a backoff wait.
        max_retry_after: upper bound on a wait a server asks for with `Retry-After`; a server
            asking for more gets exactly this long (then the next try, or the error).
        jitter: the fraction of each backoff drawn at random, so parallel workers spread out.
        sleep: how to wait; tests pass a recorder so nothing really sleeps.
        budget: the retries the role may make in all (`models.retry.budget`), shared by all
            its requests; None for no bound beyond `max_attempts`.
    """

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = MAX_RETRY_AFTER
    jitter: float = 0.25
    sleep: Callable[[float], None] = time.sleep
    budget: RetryBudget | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("RetryPolicy.max_attempts must be at least 1")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed try number `attempt` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        backoff = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return backoff * (1 - self.jitter * _RNG.random())

    def again(self, attempt: int) -> bool:
        """Whether to try once more after failed try number `attempt`: tries are left, and
        the role's budget gives one more retry (taken here)."""
        if attempt >= self.max_attempts:
            return False
        return self.budget is None or self.budget.take()


class JsonPoster:
    """POSTs JSON to one provider's API, retrying transient failures per a :class:`RetryPolicy`.

    Every failure ends as a :class:`ModelError` whose one sentence names the provider, the
    HTTP status and the provider's own message, and says what to do; `secret` (the API key)
    is scrubbed from it.

    Args:
        base_url: the API root, used to build request URLs and in messages.
        provider: the name used in messages, e.g. "OpenAI".
        key_env: the environment variable holding the key, named in advice on 401/403.
        secret: the API key, if any.
        client: an `httpx.Client` to use; one with :data:`DEFAULT_TIMEOUT` is made if omitted.
        retry: the retry policy; :class:`RetryPolicy` defaults if omitted.
        timeout: an `httpx.Timeout`, or seconds to wait for a reply (connect stays at 10 s).
    """

    def __init__(
        self,
        base_url: str,
        *,
        provider: str,
        key_env: str,
        secret: str | None = None,
        client: httpx.Client | None = None,
        retry: RetryPolicy | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self._key_env = key_env
        self._secret = secret
        self._retry = retry or RetryPolicy()
        if isinstance(timeout, int | float):
            timeout = httpx.Timeout(timeout, connect=min(CONNECT_TIMEOUT, timeout))
        if client is None:
            # A plain-HTTP server (a local one, usually) gets the lean transport; https and
            # proxied endpoints keep httpx's own. Either keeps a connection per episode in
            # flight (--concurrency goes to 64): httpx's default keeps 20.
            client = httpx.Client(
                timeout=timeout or DEFAULT_TIMEOUT,
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=MAX_IDLE),
                transport=plain_http_transport(self.base_url),
            )
        self._client = client
        self._timeout = timeout if timeout is not None else self._client.timeout
        self._urls: dict[str, httpx.URL] = {}

    def post(
        self,
        path: str,
        body: Mapping[str, Any],
        headers: Mapping[str, str],
        *,
        refused: Callable[[httpx.Response], bool] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """POST `body` to `base_url + path` and return the decoded JSON reply.

        Args:
            refused: tells a refusal of the request's shape (e.g. a body naming
                `response_format`) from a transient failure; such an answer is raised at once
                as :class:`ShapeRefused`, whatever its status, and never retried.
            timeout: seconds this request may take at most (a run's remaining budget); the
                configured timeout applies when it is shorter.

        The response is read in full or closed on any failure (a timeout, an interrupt), so
        no abandoned request stays open at the server.

        Raises:
            ShapeRefused: when `refused` recognises the answer.
            RequestFailed: once every try allowed has failed in a way that may pass (a
                timeout, a lost connection, 429 or 5xx).
            ModelError: on a non-retryable error.
        """
        url = self.base_url + path
        target = self._urls.get(path)
        if target is None:
            # Parsed once per path: httpx parses a string URL on every request.
            target = self._urls[path] = httpx.URL(url)
        attempt = 0
        while True:
            attempt += 1
            try:
                request = self._client.build_request(
                    "POST", target, json=body, headers=dict(headers), timeout=self._limit(timeout)
                )
                # Built before taking a request slot: a freed slot goes to a ready request.
                with request_slot():
                    response = self._client.send(request, stream=True)
                    try:
                        response.read()
                    finally:
                        response.close()
            except _TRANSIENT_ERRORS as exc:
                if not self._retry.again(attempt):
                    raise self._failed(self._unreachable(exc, attempt)) from exc
                self._retry.sleep(self._retry.delay(attempt))
                continue
            except httpx.HTTPError as exc:
                raise self._error(
                    f"the request to {self.provider} at {url} failed ({_describe(exc)}); "
                    f"check the base URL {self.base_url}."
                ) from exc
            if not response.is_success and refused is not None and refused(response):
                detail = _provider_detail(response)
                raise ShapeRefused(
                    self._error(
                        f"{self.provider} refused the request's shape with HTTP "
                        f"{response.status_code} ({detail}); set models.structured in "
                        "evolve.yaml to a mode this server accepts."
                    ).args[0],
                    status=response.status_code,
                    detail=detail,
                )
            if response.status_code in RETRY_STATUSES:
                if not self._retry.again(attempt):
                    raise self._failed(self._status_message(response, attempt))
                self._retry.sleep(self._retry.delay(attempt, _retry_after(response)))
                continue
            if not response.is_success:
                raise self._error(self._status_message(response, attempt))
            return self._decode(response)

    def _decode(self, response: httpx.Response) -> Any:
        """The answer's JSON; any failure to decode it, its depth included, is
        :class:`ReplyMalformed`. NaN and infinite numbers are left to the fields that read
        them (:func:`token_count` refuses them as counts)."""
        try:
            text = response.text
            if json_depth(text) > MAX_BODY_DEPTH:
                raise ReplyMalformed(
                    self._error(
                        f"{self.provider} answered HTTP {response.status_code} with JSON nested "
                        f"deeper than {MAX_BODY_DEPTH} levels; the reply was not used."
                    ).args[0]
                )
            return json.loads(text)
        except ReplyMalformed:
            raise
        except Exception as exc:  # ValueError, RecursionError, MemoryError, a codec's error
            raise ReplyMalformed(
                self._error(
                    f"{self.provider} answered HTTP {response.status_code} with a body that is "
                    f"not JSON; check that the base URL {self.base_url} is right."
                ).args[0]
            ) from exc

    def _limit(self, budget: float | None) -> httpx.Timeout:
        configured = self._timeout
        if not isinstance(configured, httpx.Timeout):
            configured = httpx.Timeout(configured)
        if budget is None:
            return configured
        budget = max(0.001, budget)

        def cap(value: float | None) -> float:
            return budget if value is None else min(value, budget)

        return httpx.Timeout(
            connect=cap(configured.connect),
            read=cap(configured.read),
            write=cap(configured.write),
            pool=cap(configured.pool),
        )

    def close(self) -> None:
        """Close the connections this poster opened."""
        self._client.close()

    def _unreachable(self, exc: httpx.HTTPError, attempts: int) -> str:
        what = (
            "did not answer in time"
            if isinstance(exc, httpx.TimeoutException)
            else "could not be reached"
        )
        hint = (
            " and not overloaded, or does it need a longer models.timeout_s in evolve.yaml"
            if isinstance(exc, httpx.TimeoutException)
            else ""
        )
        return (
            f"{self.provider} {what}{_after(attempts)} ({_describe(exc)}); "
            f"is the server at {self.base_url} running{hint}?"
        )

    def _status_message(self, response: httpx.Response, attempts: int) -> str:
        status = response.status_code
        tries = f" on all {attempts} attempts" if attempts > 1 else ""
        return (
            f"{self.provider} answered HTTP {status}{tries} ({_provider_detail(response)}); "
            f"{self._advice(status)}."
        )

    def _advice(self, status: int) -> str:
        if status == 401:
            return f"check {self._key_env}"
        if status == 403:
            return f"check that the key in {self._key_env} may use this model"
        if status == 404:
            return f"check the model name and the base URL {self.base_url}"
        if status == 429:
            return "wait a while or lower the request rate, then try again"
        if status >= 500:
            return "the provider is having trouble, so try again later or choose another --model"
        return "check the model name and the request's parameters"

    def _error(self, message: str) -> ModelError:
        return ModelError(hide_key(message, self._secret))

    def _failed(self, message: str) -> RequestFailed:
        """A failure that may pass another time, after the tries it was allowed."""
        return RequestFailed(hide_key(message, self._secret))

    @property
    def client(self) -> httpx.Client:
        """The client requests go through (the context window's discovery uses it too)."""
        return self._client


# A key shorter than this is a placeholder ("x", "none", "local"), not a secret: hiding it
# would mangle every word that contains it.
MIN_KEY_CHARS = 8
_KEY_CHARS = "A-Za-z0-9_-"


def hide_key(message: str, secret: str | None) -> str:
    """`message` with the API key hidden where the whole key occurs, and token shapes redacted.

    The key is replaced only where it stands as a token of its own (not inside a longer word),
    and only if it is at least :data:`MIN_KEY_CHARS` long; other secret-shaped values a provider
    echoes (a `Bearer` header, an `sk-` key) are redacted by value as everywhere else.
    """
    from evolve.redact import redact_text

    if secret and len(secret) >= MIN_KEY_CHARS:
        pattern = re.compile(rf"(?<![{_KEY_CHARS}]){re.escape(secret)}(?![{_KEY_CHARS}])")
        message = pattern.sub("***", message)
    return redact_text(message)


def token_count(value: Any, field: str, provider: str) -> int:
    """A usage count from a provider's answer: None (absent) is 0; anything but a finite
    non-negative integer (an integral float such as ``12.0`` included) up to
    :data:`MAX_TOKENS_COUNTED` is refused.

    Raises:
        ReplyMalformed: naming the field and what it held.
    """
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS_COUNTED:
        return value
    shown = repr(value) if isinstance(value, int | float) else type(value).__name__
    if isinstance(value, int) and not isinstance(value, bool) and len(shown) > 20:
        shown = f"an integer of {len(shown)} digits"
    raise ReplyMalformed(
        f"{provider} answered with usage.{field} {shown}, not a count of tokens (a finite "
        "non-negative integer); the reply was not used."
    )


def reply_text(text: str, provider: str) -> str:
    """`text`, if it can be encoded as UTF-8 and so sent back in the next request.

    Raises:
        ReplyMalformed: the text holds a lone surrogate (an escaped ``\\ud800`` in the JSON).
    """
    if not encodable(text):
        raise ReplyMalformed(
            f"{provider} answered with text holding a lone surrogate, which cannot be encoded; "
            "the reply was not used."
        )
    return text


def _after(attempts: int) -> str:
    return f" after {attempts} attempt{'s' if attempts > 1 else ''}"


def _describe(exc: Exception) -> str:
    text = str(exc).rstrip(".")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _retry_after(response: httpx.Response) -> float | None:
    """The numeric `Retry-After` seconds, if any; HTTP-date values fall back to backoff."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _provider_detail(response: httpx.Response) -> str:
    """The provider's own error message, from the OpenAI, Anthropic or a plain-text body."""
    try:
        text = response.text
        body = json.loads(text) if json_depth(text) <= MAX_BODY_DEPTH else None
    except (ValueError, RecursionError):
        body = None
    detail = ""
    if isinstance(body, dict):
        # OpenAI and Anthropic nest the error; vLLM puts it at the top; Ollama uses a string.
        error = body.get("error", body)
        if isinstance(error, dict):
            message, kind = error.get("message"), error.get("type")
            if message:
                detail = f"{kind}: {message}" if isinstance(kind, str) and kind else str(message)
        elif isinstance(error, str):
            detail = error
    if not detail:
        detail = response.text or response.reason_phrase or "no error message"
    detail = " ".join(detail.split()).rstrip(".")
    return detail if len(detail) <= _DETAIL_LIMIT else detail[: _DETAIL_LIMIT - 1] + "…"
