"""Topics: a module's cards clustered by their words, deterministic, labelled by terms or by a
model whose labels are checked."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evolve.errors import ModelError
from evolve.llm import Completion, JsonSchema, Message
from evolve.research import MODULES, Card, Topic, check_label, starter_pool, topics


def card(cid: str, summary: str, module: str = "context", mechanism: str = "m") -> Card:
    return Card(cid, f"On {mechanism}", ("A",), 2024, f"arXiv:{cid}", summary, module, mechanism)


BUDGET = [
    card(
        "b1",
        "Fit memory into a token budget by evicting old lines from the window.",
        mechanism="token budget window",
    ),
    card(
        "b2",
        "A token budget for the prompt window: evict the oldest lines first.",
        mechanism="token budget eviction",
    ),
    card(
        "b3",
        "Compress the window to a token budget, evicting lines.",
        mechanism="budget window compression",
    ),
]
ORDER = [
    card(
        "o1",
        "Order evidence by relevance so relevant evidence sits at the start.",
        mechanism="relevance order",
    ),
    card(
        "o2",
        "Rank evidence by relevance and put relevant evidence first.",
        mechanism="relevance ranking",
    ),
    card(
        "o3",
        "Relevance scores order the evidence, relevant evidence first.",
        mechanism="relevance evidence",
    ),
]


def test_distinct_mechanisms_fall_into_distinct_topics() -> None:
    found = topics(BUDGET + ORDER + [card("t1", "x", module="tools")], "context")
    groups = sorted(sorted(c.id for c in t.cards) for t in found)
    assert groups == [["b1", "b2", "b3"], ["o1", "o2", "o3"]]
    labels = {frozenset(c.id for c in t.cards): t.label for t in found}
    assert "relevance" in labels[frozenset({"o1", "o2", "o3"})]
    assert any(w in labels[frozenset({"b1", "b2", "b3"})] for w in ("budget", "token", "window"))


def test_topics_are_deterministic_and_cover_every_card_once() -> None:
    pool = starter_pool()
    for module in MODULES:
        first = topics(pool, module, seed=3)
        again = topics(list(reversed(pool)), module, seed=3)
        assert first == again
        ids = [c.id for t in first for c in t.cards]
        assert sorted(ids) == sorted(c.id for c in pool if c.module == module)
        assert len({t.label for t in first}) == len(first)
        assert [len(t.cards) for t in first] == sorted((len(t.cards) for t in first), reverse=True)


def test_small_modules_and_unknown_modules() -> None:
    assert topics([], "memory") == []
    one, two = card("a", "alpha words here"), card("b", "beta words there")
    assert [t.cards for t in topics([one], "context")] == [(one,)]
    assert len(topics([one, two], "context")) == 2
    with pytest.raises(ValueError, match="not a module"):
        topics([one], "planner")


class Labeller:
    """A model that answers each request with the next of `replies` (an exception is raised)."""

    name = "fake"

    def __init__(self, replies: Sequence[str | Exception]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        self.prompts.append(messages[-1].content)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(reply)


def test_a_model_label_is_kept_only_when_it_is_a_phrase_of_the_cards() -> None:
    offline = topics(BUDGET + ORDER, "context")
    assert [t.cards[0].id for t in offline] == ["b1", "o1"]  # same size: by first card's id
    model = Labeller(["Quantum memory palace", '"Relevant evidence first."'])
    budget, order = topics(BUDGET + ORDER, "context", llm=model)
    assert len(model.prompts) == 2 and BUDGET[0].summary in model.prompts[0]
    assert (budget.label, budget.labelled_by) == (offline[0].label, "terms")
    assert (order.label, order.labelled_by) == ("relevant evidence first", "model")
    assert [budget.cards, order.cards] == [t.cards for t in offline]


@pytest.mark.parametrize(
    "reply",
    [ModelError("down"), "", "evict", "a " * 40, "the oldest lines first and " * 5],
)
def test_a_failed_or_unusable_model_reply_keeps_the_term_label(reply: str | Exception) -> None:
    offline = topics(BUDGET, "context")
    found = topics(BUDGET, "context", llm=Labeller([reply] * 3))
    assert found == offline


def test_check_label() -> None:
    topic = Topic("x", tuple(BUDGET))
    assert check_label("Token Budget", topic, []) == "token budget"
    assert check_label("token budget", topic, ["Token budget"]) is None  # taken
    assert check_label("budget", topic, []) is None  # one word
    assert check_label("budget tokens galore", topic, []) is None  # not in the text
    assert check_label("evicting old lines from the window", topic, []) is not None
