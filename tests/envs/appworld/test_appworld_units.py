"""The AppWorld adapter's pieces that need no AppWorld: persona rules over mapped calls,
families and splits, and the one-sentence errors when AppWorld is not prepared."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evolve.envs import ApiCall, Task, make_env
from evolve.envs.appworld import AppWorldError, family_of
from evolve.envs.appworld._env import History
from evolve.envs.appworld._personas import check_persona, episode_payment, map_call, note_fields
from evolve.envs.appworld._setup import _bucket, splits_yaml
from evolve.envs.persona_world._personas import Persona, load_personas
from evolve.workspace import init_workspace

HARNESS = Path(__file__).resolve().parents[3]
SUPERVISOR = {
    "first_name": "Robin",
    "last_name": "Vale",
    "email": "robin@example.org",
    "phone_number": "555",
}


def _task(kind: str = "appworld") -> Task:
    return Task("abc1234_1", "abc1234", kind, "train", "Do it.", {"date": "2023-05-18"})


def _alex() -> Persona:
    return load_personas(HARNESS / "evalset" / "personas")["alex"]


def test_venmo_and_gmail_calls_map_into_persona_world_shape() -> None:
    pay = ApiCall("venmo", "create_transaction",
                  {"receiver_email": "sam@example.org", "amount": 12.5, "description": "lunch",
                   "private": True, "payment_card_id": 7, "access_token": "t"}, True)  # fmt: skip
    assert map_call(pay) == (
        "payment",
        {"receiver_email": "sam@example.org", "amount": 12.5, "note": "lunch",
         "visibility": "private", "payment_card_id": 7},
    )  # fmt: skip
    mail = ApiCall("gmail", "send_email",
                   {"email_addresses": ["a@x.org", "b@x.org"], "subject": "Hi", "body": "B"}, True)  # fmt: skip
    assert map_call(mail) == (
        "email",
        {"to": "a@x.org", "cc": ["b@x.org"], "subject": "Hi", "body": "B"},
    )
    assert map_call(ApiCall("phone", "login", {}, True)) is None
    failed = ApiCall("phone", "send_text_message", {"message": "x"}, False, error="no")
    assert map_call(failed) is None


def test_persona_rules_check_an_appworld_text_with_the_supervisor_as_the_user() -> None:
    contacts = ApiCall("phone", "search_contacts", {"query": "Sam"}, True,
                       result=[{"first_name": "Sam", "last_name": "Lee", "phone_number": "556"}])  # fmt: skip
    bad = ApiCall(
        "phone", "send_text_message", {"phone_number": "556", "message": "Dinner at 7."}, True
    )
    applicable, violations = check_persona(
        _alex(), _task(), [contacts, bad], SUPERVISOR, History(), None
    )
    assert set(applicable) == {"sms_signoff", "sms_greeting"}
    by_rule = {v.rule: v for v in violations}
    assert "Sam Lee" in by_rule["sms_signoff"].instance
    good = ApiCall("phone", "send_text_message",
                   {"phone_number": "556", "message": "Hi Sam, dinner at 7.\n- Robin"}, True)  # fmt: skip
    applicable, violations = check_persona(
        _alex(), _task(), [contacts, good], SUPERVISOR, History(), None
    )
    assert violations == [] and "sms_signoff" in applicable


def test_payment_rules_use_the_cards_and_history_of_the_episodes() -> None:
    cards = ApiCall("venmo", "show_payment_cards", {}, True,
                    result=[{"payment_card_id": 7, "card_name": "Visa", "card_number": 4111111111114242},
                            {"payment_card_id": 9, "card_name": "Amex", "card_number": 371449635398431}])  # fmt: skip
    pay = ApiCall("venmo", "create_transaction",
                  {"receiver_email": "sam@example.org", "amount": 10.0, "description": "lunch",
                   "private": False, "payment_card_id": 9}, True)  # fmt: skip
    earlier = episode_payment([pay])
    assert earlier is not None and earlier.card == 9
    history = History((earlier, earlier))
    pay2 = ApiCall("venmo", "create_transaction",
                   {"receiver_email": "sam@example.org", "amount": 5.0,
                    "description": "coffee (total to Sam: $25.00)", "private": True,
                    "payment_card_id": 9}, True)  # fmt: skip
    applicable, violations = check_persona(_alex(), _task(), [cards, pay2], SUPERVISOR, history, 0)
    assert {"payment_visibility", "habitual_card", "running_total"} <= set(applicable)
    assert violations == []
    pay3 = ApiCall("venmo", "create_transaction", {**pay2.args, "payment_card_id": 7}, True)
    _, violations = check_persona(_alex(), _task(), [cards, pay3], SUPERVISOR, history, 0)
    assert [v.rule for v in violations] == ["habitual_card"]


def _persona(name: str) -> Persona:
    return load_personas(HARNESS / "evalset" / "personas")[name]


def _note(title: str, content: str) -> ApiCall:
    # A recorded simple_note__create_note call, written by hand (no AppWorld data).
    return ApiCall("simple_note", "create_note",
                   {"title": title, "content": content, "access_token": "t"}, True,
                   result={"message": "Note created.", "note_id": 3})  # fmt: skip


def _note_rules(persona: str, note: ApiCall, task: Task | None = None) -> tuple[set[str], set[str]]:
    applicable, violations = check_persona(
        _persona(persona), task or _task(), [note], SUPERVISOR, History(), 0
    )
    notes = {"private_note_format", "note_title_format", "note_checksum"}
    return set(applicable) & notes, {v.rule for v in violations} & notes


def test_note_fields_are_read_off_the_created_note() -> None:
    args = {
        "title": "2023-05-18 Groceries",
        "content": "1. milk\n2) eggs\n[x] jam\n* tea\nChecksum: 13",
    }
    assert note_fields(args) == {"items": ["milk", "eggs", "jam", "tea"], "title": "Groceries"}
    assert note_fields({"title": "Plain", "content": ""}) == {"items": [], "title": "Plain"}


def test_private_note_format_checks_the_created_notes_layout() -> None:
    # alex keeps bullets, casey numbered lists, dana checklists.
    assert _note_rules("alex", _note("Groceries", "- milk\n- eggs")) == (
        {"private_note_format"},
        set(),
    )
    assert _note_rules("alex", _note("Groceries", "milk\neggs")) == (
        {"private_note_format"}, {"private_note_format"},
    )  # fmt: skip
    assert _note_rules("casey", _note("GROCERIES", "1. milk\n2. eggs"))[1] == set()
    assert "private_note_format" in _note_rules("casey", _note("GROCERIES", "1. milk\n3. eggs"))[1]
    assert "private_note_format" in _note_rules("casey", _note("GROCERIES", "- milk\n- eggs"))[1]
    dana = _note_rules("dana", _note("G", "[ ] milk\n[ ] eggs\nChecksum: 8"))
    assert dana == ({"private_note_format", "note_checksum"}, set())


def test_note_checksum_counts_the_characters_of_the_created_notes_items() -> None:
    # blair: dated titles and a checksum line (milk + eggs = 8 characters).
    good = _note("2023-05-18 Groceries", "- milk\n- eggs\nChecksum: 8")
    assert _note_rules("blair", good) == ({"note_title_format", "note_checksum"}, set())
    for content in ("- milk\n- eggs\nChecksum: 7", "- milk\n- eggs"):
        assert _note_rules("blair", _note("2023-05-18 Groceries", content))[1] == {"note_checksum"}


def test_note_title_format_checks_the_task_date_or_capitals() -> None:
    # The AppWorld task's date (its `datetime`) is the date a dated title must start with.
    assert _note_rules("emery", _note("2023-05-18 Groceries", "x")) == (
        {"note_title_format"},
        set(),
    )
    for title in ("Groceries", "2023-05-17 Groceries", "Groceries 2023-05-18"):
        assert _note_rules("emery", _note(title, "x"))[1] == {"note_title_format"}
    assert _note_rules("casey", _note("GROCERIES", "1. x"))[1] == set()
    assert _note_rules("casey", _note("Groceries", "1. x"))[1] == {"note_title_format"}
    # A task with no date cannot be checked for a dated title: the rule does not apply there.
    undated = Task("abc1234_1", "abc1234", "appworld", "train", "Do it.", {"date": ""})
    assert _note_rules("emery", _note("Groceries", "x"), undated) == (set(), set())


def test_families_are_scenarios_and_split_hashing_is_stable() -> None:
    assert family_of("82e2fac_1") == "82e2fac" and family_of("82e2fac_2:tag") == "82e2fac"
    assert {_bucket("82e2fac") for _ in range(3)} == {_bucket("82e2fac")}
    text = splits_yaml({"train": ["a_1", "a_2"], "dev": [], "holdout": ["b_1"]}, Path("/r"))
    assert 'train:\n- "a_1"\n- "a_2"\ndev: []\nholdout:\n- "b_1"' in text


@pytest.fixture
def appworld_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EVOLVE_APPWORLD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    ws = init_workspace(tmp_path / "ws", env="appworld")
    return ws.root


def test_init_without_appworld_writes_empty_splits_and_an_appworld_config(
    appworld_ws: Path,
) -> None:
    text = (appworld_ws / "evolve.yaml").read_text()
    assert "environment: appworld" in text and "agent: sim" not in text
    assert not (appworld_ws / "evalset" / "tasks.yaml").exists()
    assert "train: []" in (appworld_ws / "evalset" / "splits.yaml").read_text()


def test_a_missing_venv_or_root_is_one_sentence(appworld_ws: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    env = make_env("appworld", appworld_ws / "evalset")
    with pytest.raises(AppWorldError, match=r"no AppWorld data root is set; set APPWORLD_ROOT"):
        env.tasks("train")
    monkeypatch.setenv("APPWORLD_ROOT", str(tmp_path))
    env = make_env("appworld", appworld_ws / "evalset")
    with pytest.raises(AppWorldError, match=r"not prepared .*run `evolve appworld setup`\.$"):
        env.tasks("train")


def test_a_malformed_split_file_is_a_config_error(appworld_ws: Path) -> None:
    from evolve.errors import ConfigError

    (appworld_ws / "evalset" / "splits.yaml").write_text("train: [a_1]\ndev: [a_1]\n")
    with pytest.raises(ConfigError, match="is in both train and dev"):
        make_env("appworld", appworld_ws / "evalset")
    (appworld_ws / "evalset" / "splits.yaml").write_text("trian: []\n")
    with pytest.raises(ConfigError, match="malformed"):
        make_env("appworld", appworld_ws / "evalset")
    shutil.rmtree(appworld_ws / "evalset" / "personas")
    (appworld_ws / "evalset" / "splits.yaml").write_text("train: []\n")
    with pytest.raises(ConfigError, match="no personas"):
        make_env("appworld", appworld_ws / "evalset")


def test_init_cli_says_how_to_fill_empty_splits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from evolve.cli._group import run

    monkeypatch.setenv("EVOLVE_APPWORLD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("APPWORLD_ROOT", raising=False)
    assert run(["init", str(tmp_path / "ws"), "--env", "appworld"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "No AppWorld data was found" in err and "`evolve appworld splits`" in err
    assert run(["init", str(tmp_path / "ws2"), "--env", "nowhere"]) != 0
    assert not (tmp_path / "ws2").exists()
