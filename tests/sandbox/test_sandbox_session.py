"""A sandbox session: one contained program answering JSON lines, stopped on a late answer,
a line that is not one JSON object, or the end of the session's wall-clock limit."""

from __future__ import annotations

import os
import sys

import pytest

from evolve import sandbox
from evolve.sandbox import Limits, Session, SessionError

ECHO = (
    "import json, os, sys\n"
    "for line in sys.stdin:\n"
    "    m = json.loads(line)\n"
    "    if m.get('say'):\n"
    "        print(m['say'], flush=True)\n"
    "        continue\n"
    "    m['key'] = os.environ.get('OPENAI_API_KEY')\n"
    "    print(json.dumps(m), flush=True)\n"
)
PY = sys.executable


def _session(**kwargs: object) -> Session:
    return Session([PY, "-c", ECHO], **kwargs)  # type: ignore[arg-type]


def test_a_session_answers_many_lines_without_evolves_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-session-secret")
    with _session() as session:
        for i in range(20):
            session.send({"n": i})
            assert session.receive(30) == {"n": i, "key": None}
        root = session.root
        assert os.path.isdir(root)
    assert not os.path.exists(root)


def test_a_line_that_is_not_a_json_object_stops_it() -> None:
    with _session() as session:
        session.send({"say": "[1, 2]"})
        with pytest.raises(SessionError, match="not a JSON object"):
            session.receive(30)
        assert not session.alive


def test_a_late_answer_stops_it() -> None:
    with Session([PY, "-c", "import time; time.sleep(600)"]) as session:
        session.send({"n": 1})
        with pytest.raises(SessionError, match="did not answer within 2 s") as err:
            session.receive(2)
        assert err.value.limit == "wall"


@pytest.mark.skipif(not sandbox.bwrap_works(), reason="bubblewrap does not work here")
def test_files_are_its_only_view_of_the_caller_under_bwrap() -> None:
    code = (
        "import json, os, sys\n"
        "sys.stdin.readline()\n"
        f"print(json.dumps({{'mine': open('a/b.txt').read(), 'cwd': os.getcwd(),"
        f" 'src': os.path.exists({os.path.dirname(__file__)!r})}}), flush=True)\n"
    )
    with Session([PY, "-c", code], files={"a/b.txt": b"hello"}, backend="bwrap") as session:
        session.send({})
        answer = session.receive(30)
    assert answer["mine"] == "hello" and answer["src"] is False


def test_the_session_wall_limit_ends_it() -> None:
    limits = Limits(wall_s=1.0)
    with Session([PY, "-c", "import time; time.sleep(600)"], limits=limits) as session:
        with pytest.raises(SessionError) as err:
            session.send({"n": 1})
            session.receive(60)
        assert err.value.limit == "wall"
