"""Small readers of AppWorld's answers (field names as its APIs return them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CardLike:
    id: int
    name: str

    @classmethod
    def parse(cls, rec: Any) -> CardLike | None:
        if not isinstance(rec, Mapping):
            return None
        raw_id = rec.get("payment_card_id", rec.get("id"))
        if not isinstance(raw_id, int):
            return None
        number = str(rec.get("card_number", ""))
        name = str(rec.get("card_name", "card"))
        return cls(raw_id, f"{name} ending {number[-4:]}" if number else name)
