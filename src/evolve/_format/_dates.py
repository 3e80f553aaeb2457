"""`--as-of DATE`: which texts are dates, and the time they name (shared with
`evolve.history._asof`; imported only when a date is given)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from evolve.errors import EvolveError

DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+([+-]\d{2}:?\d{2}|Z)?)?$")


def is_date(text: str) -> bool:
    return bool(DATE.match(text.strip()))


def parse_when(text: str) -> datetime:
    """The moment a date (its end, 23:59:59 UTC) or an ISO time (naive taken as UTC) names.

    Raises:
        EvolveError: `text` is not a date or ISO time.
    """
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, 23, 59, 59, tzinfo=UTC)
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise EvolveError(f"{text!r} is not a date (YYYY-MM-DD) or ISO time.") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
