"""A report that cannot mislead (issue 27): per generation its base beside its candidate with
the verdict marked and the gain's interval drawn, one panel per training stream, whole-number
ticks on counting axes, memory size as active units, skills with their lesson text, and every
candidate the report links kept from `git gc`. Checked in headless Chromium's DOM."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from test_report import _browse, _chromium

from conftest import GitRunner, run_cli
from evolve.generations import (
    GainRecord,
    GenerationRecord,
    ScoreRecord,
    candidate_ref,
    save_record,
)
from evolve.memory import load_units
from evolve.train import train
from evolve.workspace import Workspace


def _score(score: float) -> ScoreRecord:
    return ScoreRecord(
        score=score, violation_rate=1 - score, episodes=10, tokens_per_episode=1.0, rules={}
    )


def _record(ws: Workspace, number: int, verdict: str, candidate: str, **kw: object) -> None:
    base = ws.store.head()
    assert base is not None
    save_record(
        ws,
        GenerationRecord(
            number=number, started="2026-01-01T00:00:00+00:00",
            finished="2026-01-01T00:01:00+00:00", base=base, candidate=candidate, final=base,
            protected_hash="x", protected_hash_candidate="x", tests_passed=True,
            verdict=verdict, reason=verdict, **kw,
        ),
    )  # fmt: skip


def _candidate_commit(ws: Workspace, run_git: GitRunner, message: str) -> str:
    """A commit reachable from nothing once made (as a rejected candidate after the reset)."""
    tree = run_git(ws.root, "rev-parse", "HEAD^{tree}").strip()
    return run_git(ws.root, "commit-tree", tree, "-p", "HEAD", "-m", message).strip()


@pytest.fixture
def report_dom(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], run_git: GitRunner
) -> str:
    train(ws, recipe="ace", episodes=12)
    train(ws, recipe="ace", episodes=6, persona="casey")  # a second stream
    first, second = _candidate_commit(ws, run_git, "1"), _candidate_commit(ws, run_git, "2")
    _record(ws, 1, "accepted", first, dev_base=_score(0.5), dev=_score(0.75),
            dev_gain=GainRecord(mean=0.25, low=0.1, high=0.4, tasks=20, pairs=20),
            holdout_base=_score(0.45), holdout=_score(0.7))  # fmt: skip
    _record(ws, 2, "rejected", second, dev_base=_score(0.75), dev=_score(0.8),
            dev_gain=GainRecord(mean=0.05, low=-0.05, high=0.15, tasks=20, pairs=20),
            holdout_base=_score(0.7), holdout=_score(0.72))  # fmt: skip
    code, _, err = run_cli(capsys, "report", "--out", str(tmp_path / "out"))
    assert code == 0, err
    url = (tmp_path / "out" / "report.html").resolve().as_uri()
    done = _browse(_chromium(), tmp_path / "profile", "--dump-dom", url)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _svgs(dom: str, title: str) -> list[str]:
    return [s for s in re.findall(r"<svg.*?</svg>", dom, re.S) if title in s]


def test_each_generation_shows_its_base_beside_its_candidate_with_the_verdict(
    report_dom: str,
) -> None:
    (dev,) = _svgs(report_dom, "dev score: base and candidate")
    (holdout,) = _svgs(report_dom, "holdout score: base and candidate")
    for chart in (dev, holdout):
        for n, verdict in ((1, "accepted"), (2, "rejected")):
            assert len(re.findall(rf'class="base" data-generation="{n}"', chart)) == 1
            assert len(re.findall(rf'class="candidate \w+" data-generation="{n}"', chart)) == 1
            assert f'class="candidate {verdict}" data-generation="{n}"' in chart
    assert len(re.findall(r'class="interval"', dev)) == 2  # the gate's interval, dev only
    assert 'class="interval"' not in holdout


def test_streams_have_panels_of_their_own(report_dom: str) -> None:
    assert len(_svgs(report_dom, "stream alex-ace-")) == 1
    assert len(_svgs(report_dom, "stream casey-ace-")) == 1


def test_counting_axes_have_no_fractional_tick(report_dom: str) -> None:
    charts = [
        *(_svgs(report_dom, "stream ")),
        *_svgs(report_dom, "base and candidate"),
        *_svgs(report_dom, "units in memory/ by status"),
    ]
    assert len(charts) == 5
    for chart in charts:
        ticks = re.findall(r'class="xtick"[^>]*>([^<]*)<', chart)
        assert ticks and all(re.fullmatch(r"-?\d+", t) for t in ticks), ticks
    (size,) = _svgs(report_dom, "units in memory/ by status")
    yticks = re.findall(r'class="ytick"[^>]*>([^<]*)<', size)
    assert yticks and all(re.fullmatch(r"\d+", t) for t in yticks), yticks


def test_memory_size_counts_active_units_and_shows_the_rest_apart(
    ws: Workspace, report_dom: str
) -> None:
    units = load_units(ws.root)
    active = sum(u.status == "active" for u in units)
    apart = sum(u.status in ("revoked", "tombstoned", "retired") for u in units)
    files = len(list((ws.root / "memory").rglob("*.md")))
    assert files > active, "the test needs units that are not active"
    (size,) = _svgs(report_dom, "units in memory/ by status")
    polylines = re.findall(r'<polyline[^>]*points="([^"]*)"', size)
    assert len(polylines) == 2
    top = float(re.findall(r'class="ytick"[^>]*y="([\d.]+)"[^>]*>(\d+)<', size)[-1][0]) - 4
    bottom = float(re.findall(r'class="ytick"[^>]*y="([\d.]+)"[^>]*>(\d+)<', size)[0][0]) - 4
    y_max = int(re.findall(r'class="ytick"[^>]*>(\d+)<', size)[-1])

    def last(points: str) -> int:
        y = float(points.split()[-1].split(",")[1])
        return round((bottom - y) / (bottom - top) * y_max)

    assert last(polylines[0]) == active
    assert last(polylines[1]) == apart


def test_candidates_the_report_links_survive_gc(
    ws: Workspace, run_git: GitRunner, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    candidate = _candidate_commit(ws, run_git, "kept")
    _record(ws, 1, "rejected", candidate, dev=_score(0.5))
    dry = _candidate_commit(ws, run_git, "dry")
    _record(ws, 2, "rejected", dry, dev=_score(0.5), dry_run=True)
    run_git(ws.root, "reflog", "expire", "--expire=now", "--all")
    run_git(ws.root, "gc", "--prune=now", "--quiet")
    assert run_git(ws.root, "rev-parse", candidate_ref(1)).strip() == candidate
    subprocess.run(["git", "-C", str(ws.root), "cat-file", "-e", candidate], check=True)
    gone = subprocess.run(["git", "-C", str(ws.root), "cat-file", "-e", dry], check=False)
    assert gone.returncode != 0  # a dry run's candidate is not this repository's to keep
    code, _, err = run_cli(capsys, "report", "--out", str(tmp_path / "out"))
    assert code == 0, err
    html = (tmp_path / "out" / "report.html").read_text("utf-8")
    assert f"<code>{candidate_ref(1)}</code>" in html
    assert f"<code>{candidate_ref(2)}</code>" not in html


def test_the_skills_table_shows_each_lesson(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "sk"
    code, _, err = run_cli(capsys, "init", str(root), "--skills")
    assert code == 0, err
    monkeypatch.chdir(root)
    code, _, err = run_cli(capsys, "train", "--episodes", "16")
    assert code == 0, err
    skills = [u for u in load_units(root) if u.shelf is not None]
    assert skills, "16 skills episodes made no skill: the test needs one"
    code, _, err = run_cli(capsys, "report", "--out", str(tmp_path / "out"))
    assert code == 0, err
    html = (tmp_path / "out" / "report.html").read_text("utf-8")
    section = html[html.index('<h2 id="skills">') :]
    assert "<th>lesson</th>" in section
    from html import escape

    shown = [u for u in skills if escape(" ".join(u.text.split())[:60]) in section]
    assert shown, "no skill's lesson text is in the table"
