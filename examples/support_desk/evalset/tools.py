"""The support desk's tools (PROTECTED, like all of evalset/): each public function is a
tool the agent calls as `tools__<name>`; a parameter named `task` gets the task (never the
agent's to give)."""

from __future__ import annotations

from typing import Any

ORDERS: dict[str, dict[str, object]] = {
    "A1001": {
        "customer": "Maria Lopez",
        "item": "desk lamp",
        "status": "processing",
        "tracking": "TRK666950",
        "delivered_days_ago": None,
    },
    "A1002": {
        "customer": "Tom Berg",
        "item": "office chair",
        "status": "processing",
        "tracking": "TRK698646",
        "delivered_days_ago": None,
    },
    "A1003": {
        "customer": "Aisha Khan",
        "item": "standing desk",
        "status": "in transit",
        "tracking": "TRK687472",
        "delivered_days_ago": None,
    },
    "A1004": {
        "customer": "Kenji Sato",
        "item": "monitor arm",
        "status": "out for delivery",
        "tracking": "TRK289505",
        "delivered_days_ago": None,
    },
    "A1005": {
        "customer": "Lena Novak",
        "item": "keyboard",
        "status": "processing",
        "tracking": "TRK709851",
        "delivered_days_ago": None,
    },
    "A1006": {
        "customer": "Omar Haddad",
        "item": "webcam",
        "status": "processing",
        "tracking": "TRK490487",
        "delivered_days_ago": None,
    },
    "A1007": {
        "customer": "Priya Patel",
        "item": "bookshelf",
        "status": "shipped",
        "tracking": "TRK674351",
        "delivered_days_ago": None,
    },
    "A1008": {
        "customer": "Jonas Weber",
        "item": "headset",
        "status": "delivered",
        "tracking": "TRK165839",
        "delivered_days_ago": 90,
    },
    "A1009": {
        "customer": "Sofia Rossi",
        "item": "mouse pad",
        "status": "delivered",
        "tracking": "TRK162496",
        "delivered_days_ago": 55,
    },
    "A1010": {
        "customer": "Diego Diaz",
        "item": "desk mat",
        "status": "delivered",
        "tracking": "TRK315963",
        "delivered_days_ago": 55,
    },
    "A1011": {
        "customer": "Hannah Meyer",
        "item": "cable tray",
        "status": "shipped",
        "tracking": "TRK813451",
        "delivered_days_ago": None,
    },
    "A1012": {
        "customer": "Ravi Iyer",
        "item": "footrest",
        "status": "delivered",
        "tracking": "TRK548363",
        "delivered_days_ago": 55,
    },
    "A1013": {
        "customer": "Chloe Martin",
        "item": "desk lamp",
        "status": "shipped",
        "tracking": "TRK588218",
        "delivered_days_ago": None,
    },
    "A1014": {
        "customer": "Mateo Silva",
        "item": "office chair",
        "status": "delivered",
        "tracking": "TRK575198",
        "delivered_days_ago": 55,
    },
    "A1015": {
        "customer": "Yuki Tanaka",
        "item": "standing desk",
        "status": "in transit",
        "tracking": "TRK414328",
        "delivered_days_ago": None,
    },
    "A1016": {
        "customer": "Nora Olsen",
        "item": "monitor arm",
        "status": "delivered",
        "tracking": "TRK932967",
        "delivered_days_ago": 12,
    },
    "A1017": {
        "customer": "Felix Braun",
        "item": "keyboard",
        "status": "processing",
        "tracking": "TRK832948",
        "delivered_days_ago": None,
    },
    "A1018": {
        "customer": "Amara Okafor",
        "item": "webcam",
        "status": "shipped",
        "tracking": "TRK185831",
        "delivered_days_ago": None,
    },
    "A1019": {
        "customer": "Lucas Moreau",
        "item": "bookshelf",
        "status": "delivered",
        "tracking": "TRK414834",
        "delivered_days_ago": 55,
    },
    "A1020": {
        "customer": "Ines Costa",
        "item": "headset",
        "status": "shipped",
        "tracking": "TRK460160",
        "delivered_days_ago": None,
    },
    "A1021": {
        "customer": "Noah Fischer",
        "item": "mouse pad",
        "status": "delivered",
        "tracking": "TRK570636",
        "delivered_days_ago": 90,
    },
    "A1022": {
        "customer": "Zara Ali",
        "item": "desk mat",
        "status": "in transit",
        "tracking": "TRK738539",
        "delivered_days_ago": None,
    },
    "A1023": {
        "customer": "Emil Lund",
        "item": "cable tray",
        "status": "processing",
        "tracking": "TRK223800",
        "delivered_days_ago": None,
    },
    "A1024": {
        "customer": "Leila Aziz",
        "item": "footrest",
        "status": "out for delivery",
        "tracking": "TRK538433",
        "delivered_days_ago": None,
    },
    "A1025": {
        "customer": "Oscar Nilsson",
        "item": "desk lamp",
        "status": "delivered",
        "tracking": "TRK893919",
        "delivered_days_ago": 12,
    },
    "A1026": {
        "customer": "Mina Park",
        "item": "office chair",
        "status": "in transit",
        "tracking": "TRK259367",
        "delivered_days_ago": None,
    },
    "A1027": {
        "customer": "Hugo Laurent",
        "item": "standing desk",
        "status": "delivered",
        "tracking": "TRK542182",
        "delivered_days_ago": 41,
    },
    "A1028": {
        "customer": "Tara Shah",
        "item": "monitor arm",
        "status": "shipped",
        "tracking": "TRK800675",
        "delivered_days_ago": None,
    },
    "A1029": {
        "customer": "Ivan Petrov",
        "item": "keyboard",
        "status": "processing",
        "tracking": "TRK901710",
        "delivered_days_ago": None,
    },
    "A1030": {
        "customer": "Elif Yilmaz",
        "item": "webcam",
        "status": "delivered",
        "tracking": "TRK700861",
        "delivered_days_ago": 55,
    },
    "A1031": {
        "customer": "Sam Reed",
        "item": "bookshelf",
        "status": "shipped",
        "tracking": "TRK456644",
        "delivered_days_ago": None,
    },
    "A1032": {
        "customer": "Beatriz Santos",
        "item": "headset",
        "status": "out for delivery",
        "tracking": "TRK467188",
        "delivered_days_ago": None,
    },
    "A1033": {
        "customer": "Karl Vogel",
        "item": "mouse pad",
        "status": "out for delivery",
        "tracking": "TRK620801",
        "delivered_days_ago": None,
    },
    "A1034": {
        "customer": "Rosa Marquez",
        "item": "desk mat",
        "status": "shipped",
        "tracking": "TRK172103",
        "delivered_days_ago": None,
    },
    "A1035": {
        "customer": "Theo Young",
        "item": "cable tray",
        "status": "shipped",
        "tracking": "TRK383051",
        "delivered_days_ago": None,
    },
    "A1036": {
        "customer": "Anya Ivanova",
        "item": "footrest",
        "status": "delivered",
        "tracking": "TRK830901",
        "delivered_days_ago": 41,
    },
}

CANCELLABLE = ("processing",)


def lookup_order(order_id: str) -> dict[str, Any]:
    """The order: customer, item, status, tracking number, days since delivery."""
    order = ORDERS.get(order_id.strip().lstrip("#").upper())
    if order is None:
        raise LookupError(f"no order {order_id}")
    return {"order_id": order_id, **order}


def cancel_order(order_id: str) -> dict[str, Any]:
    """Cancel an order that has not shipped yet; says whether it was cancelled."""
    order = lookup_order(order_id)
    if order["status"] not in CANCELLABLE:
        return {"cancelled": False, "reason": f"the order is {order['status']}"}
    return {"cancelled": True}
