"""An AppWorld training stream's payment history survives the process that made it.

The payments are what the agent did, so training records them per episode on
`refs/evolve/train` (`evolve.train._histref`); a stream resumed in a new process, with a new
environment object, replays the same history without AppWorld or model calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.envs import ApiCall, Task, make_env
from evolve.envs.appworld._env import AppWorldEnv, History
from evolve.envs.appworld._personas import check_persona
from evolve.envs.persona_world._world import Payment
from evolve.errors import EvolveError
from evolve.history import TRAIN_REF
from evolve.train._histref import RecordsHistory, StreamHistory, history_path
from evolve.train._stream import history_before
from evolve.workspace import Workspace, init_workspace

STREAM = "alex/ace/0/instance"
SUPERVISOR = {"first_name": "Robin", "last_name": "Vale", "email": "r@example.org"}
CARDS = ApiCall("venmo", "show_payment_cards", {}, True,
                result=[{"payment_card_id": 7, "card_name": "Visa", "card_number": 4111111111114242},
                        {"payment_card_id": 9, "card_name": "Amex", "card_number": 371449635398431}])  # fmt: skip


def _task(n: int) -> Task:
    return Task(f"abc1234_{n}", "abc1234", "appworld", "train", "Pay Sam.", {"date": "2023-05-18"})


def _pay(amount: float, card: int) -> ApiCall:
    return ApiCall("venmo", "create_transaction",
                   {"receiver_email": "sam@example.org", "amount": amount, "description": "lunch",
                    "private": True, "payment_card_id": card, "access_token": "t"}, True)  # fmt: skip


# What the agent did in episodes 0 and 1: a payment with card 9, then a text (no payment).
EPISODES = [
    [CARDS, _pay(10.0, 9)],
    [ApiCall("phone", "send_text_message", {"phone_number": "556", "message": "Hi"}, True)],
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.setenv("EVOLVE_APPWORLD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    return init_workspace(tmp_path / "ws", env="appworld")


def _env(ws: Workspace) -> AppWorldEnv:
    env = make_env("appworld", ws.root / "evalset")
    assert isinstance(env, AppWorldEnv) and isinstance(env, RecordsHistory)
    return env


def _train_two_episodes(ws: Workspace) -> History:
    """What train does after each episode: record it on the side ref, advance the history."""
    env = _env(ws)
    past = StreamHistory.load(ws.store, STREAM)
    history: History = env.initial_history("alex")
    for k, calls in enumerate(EPISODES):
        record = env.history_record(_task(k), "alex", calls)
        past.save(ws.store, k, record)
        history = env.history_with(history, record)
    return history


def test_a_resumed_stream_replays_the_recorded_payments_in_a_fresh_env(ws: Workspace) -> None:
    live = _train_two_episodes(ws)
    assert live == History((Payment("sam@example.org", 10.0, 9),))
    # A fresh workspace object, store and env (nothing of the first one's memory).
    again = Workspace(ws.root)
    env = _env(again)
    assert env.advance_history(History(), _task(0), "alex", 0) == History()  # no in-process state
    tasks = [_task(0), _task(1)]
    resumed = history_before(env, tasks, "alex", 2, StreamHistory.load(again.store, STREAM))
    assert resumed == live
    # The history the habitual-card rule judges with is the same after the resume.
    pay = _pay(5.0, 7)
    _, violations = check_persona(
        env.persona("alex"), _task(2), [CARDS, pay], SUPERVISOR, resumed, 2
    )
    assert "habitual_card" in [v.rule for v in violations]
    # The record lives on the side ref, never in the branch or the working tree.
    assert not (ws.root / "history").exists()
    raw = again.store.read_side_ref(TRAIN_REF, history_path(STREAM))[history_path(STREAM)]
    episodes = json.loads(raw)["episodes"]
    assert episodes["0"]["payment"] == {"amount": 10.0, "card": 9, "contact": "sam@example.org"}
    assert episodes["1"] == {"payment": None, "task": "abc1234_1"}
    assert "access_token" not in raw.decode()


def test_the_history_replays_in_a_new_process(ws: Workspace) -> None:
    live = _train_two_episodes(ws)
    script = (
        "import sys; from pathlib import Path\n"
        "from evolve.envs import Task, make_env\n"
        "from evolve.train._histref import StreamHistory\n"
        "from evolve.train._stream import history_before\n"
        "from evolve.workspace import Workspace\n"
        "ws = Workspace(Path(sys.argv[1]))\n"
        "env = make_env('appworld', ws.root / 'evalset')\n"
        "tasks = [Task(f'abc1234_{n}', 'abc1234', 'appworld', 'train', 'x', {}) for n in (0, 1)]\n"
        f"h = history_before(env, tasks, 'alex', 2, StreamHistory.load(ws.store, {STREAM!r}))\n"
        "print(repr([(p.contact, p.amount, p.card) for p in h.payments]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(ws.root)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == repr([(p.contact, p.amount, p.card) for p in live.payments])


def test_a_stream_without_its_recorded_history_refuses_to_resume(ws: Workspace) -> None:
    env = _env(ws)
    tasks = [_task(0), _task(1)]
    empty = StreamHistory.load(ws.store, STREAM)
    assert history_before(env, tasks, "alex", 0, empty) == History()
    with pytest.raises(EvolveError, match=r"episode 0 of stream alex/ace/0/instance has no "):
        history_before(env, tasks, "alex", 2, empty)
    ws.store.write_side_ref(TRAIN_REF, {history_path(STREAM): b"{not json"}, "broken")
    with pytest.raises(EvolveError, match="is not a valid history record"):
        StreamHistory.load(ws.store, STREAM)
