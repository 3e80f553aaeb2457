"""`evolve report`: one self-contained HTML file with inline SVG plots, opened in a browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from html import escape
from pathlib import Path

import pytest

from conftest import run_cli as _cli
from evolve.generations import GenerationRecord, ScoreRecord, save_record
from evolve.llm import MockLLM
from evolve.report import build_report
from evolve.train import TrainReport, train
from evolve.workspace import Workspace

RunGit = Callable[..., str]
HEADINGS = {
    "training": "Violation rate per rule over training episodes",
    "generations": "Dev and holdout score per generation",
    "cost": "Tokens and cost",
    "memory-size": "Memory size over time",
    "commits": "Recent memory and prompt commits",
}
PUBLIC = "Keep all my Venmo payments public."


def _score(score: float) -> ScoreRecord:
    return ScoreRecord(
        score=score, violation_rate=1 - score, episodes=10, tokens_per_episode=100.0, rules={}
    )


@pytest.fixture
def trained(ws: Workspace) -> TrainReport:
    """Twelve ACE episodes with the sim model and two generation records."""
    report = train(ws, recipe="ace", episodes=12)
    assert report.commits
    head = ws.store.head()
    assert head is not None
    for number, (dev, holdout, verdict) in enumerate(
        [(0.40, 0.35, "accepted"), (0.55, 0.50, "rejected")], start=1
    ):
        save_record(
            ws,
            GenerationRecord(
                number=number,
                started="2025-01-01T00:00:00+00:00",
                finished="2025-01-01T00:01:00+00:00",
                base=head,
                candidate=head,
                final=head,
                dev=_score(dev),
                holdout=_score(holdout),
                protected_hash="x",
                protected_hash_candidate="x",
                tests_passed=True,
                verdict=verdict,
                reason=f"generation {number} <because>",
            ),
        )
    return report


def _write(capsys: pytest.CaptureFixture[str], out_dir: Path) -> Path:
    code, out, err = _cli(capsys, "report", "--out", str(out_dir))
    assert code == 0, err
    path = out_dir / "report.html"
    assert out.strip() == f"wrote {path}"
    assert [p.name for p in out_dir.iterdir()] == ["report.html"]  # one file
    return path


def _section(html: str, anchor: str) -> str:
    """The HTML from a section's heading to the next section's heading."""
    start = html.index(f'<h2 id="{anchor}">')
    nxt = html.find("<h2 ", start + 1)
    return html[start : nxt if nxt >= 0 else len(html)]


def _assert_self_contained(html: str) -> None:
    assert html.lstrip().lower().startswith("<!doctype html>")
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert "<img" not in html.lower() and "<iframe" not in html.lower()
    assert not re.search(r"\bsrc\s*=", html, re.I)
    for target in re.findall(r"""\bhref\s*=\s*["']?([^"'\s>]*)""", html, re.I):
        assert target.startswith("#"), target
    assert not re.search(r"url\(|@import", html, re.I)
    assert not re.search(
        r"""=\s*["']?(https?:)?//""", html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    )


def _train_events(ws: Workspace) -> list[tuple[int, str, bool]]:
    events = []
    for log in ws.runs_dir.glob("train-*.jsonl"):
        for line in log.read_text("utf-8").splitlines():
            record = json.loads(line)
            for rule in record["applicable_rules"]:
                events.append((record["episode"], rule, rule in record["violations"]))
    return events


# --- the file -------------------------------------------------------------------------------


def test_report_is_one_self_contained_html_file_with_every_section(
    ws: Workspace,
    trained: TrainReport,
    run_git: RunGit,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = ws.root
    html = _write(capsys, tmp_path / "out").read_text("utf-8")
    _assert_self_contained(html)
    for anchor, heading in HEADINGS.items():
        assert f'<h2 id="{anchor}">{heading}</h2>' in html
    # one training panel (one stream), dev and holdout per generation, memory size
    assert html.count("<svg") == 4 and html.count("</svg>") == 4
    assert "<title>evolve report: ws</title>" in html and "persona <b>alex</b>" in html

    # Violations per rule: one series per rule the training episodes were judged on,
    # one point per (episode, applicable rule).
    training = _section(html, "training")
    events = _train_events(ws)
    assert events
    for rule in sorted({rule for _, rule, _ in events}):
        assert f">{rule}</text>" in training
    assert training.count("<circle") == len(events)
    assert training.count("<polyline") == len({rule for _, rule, _ in events})

    # Generations: dev and holdout plotted with verdicts (the records carry no base score,
    # so only candidates are drawn), and the table of verdicts.
    generations = _section(html, "generations")
    assert "dev score: base and candidate" in generations and "holdout score" in generations
    assert generations.count('class="candidate accepted"') == 2
    assert generations.count('class="candidate rejected"') == 2
    assert (
        "<td>1</td><td>accepted</td><td></td><td>0.400</td><td></td><td></td><td>0.350</td>"
        in generations
    )
    assert (
        "<td>2</td><td>rejected</td><td></td><td>0.550</td><td></td><td></td><td>0.500</td>"
        in generations
    )
    assert escape("generation 2 <because>") in generations and "<because>" not in generations

    # Memory size: one point per commit that changed memory/, in each of its two series.
    size = _section(html, "memory-size")
    commits = run_git(root, "log", "--format=%H", "--", "memory").split()
    assert "<svg" in size and size.count("<circle") == 2 * len(commits)

    # Recent commits, newest first, each with its diff.
    recent = _section(html, "commits")
    newest = run_git(root, "log", "--format=%H", "-n", "10", "--", "memory", "prompts").split()
    positions = [recent.index(f"<code>{sha[:10]}</code>") for sha in newest]
    assert positions == sorted(positions)
    last = trained.commits[-1]
    subject = run_git(root, "log", "-1", "--format=%s", last).strip()
    assert f"<code>{last[:10]}</code> {escape(subject)}" in recent
    patch = run_git(root, "show", "--format=", "--no-color", last)
    added = [ln for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added
    for line in added:
        assert f'<span class="add">{escape(line)}</span>' in recent
    assert run_git(root, "status", "--porcelain", "--untracked-files=all") == ""


def test_report_shows_a_reverted_commit_and_escapes_what_it_shows(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def updater(messages: object, schema: object) -> str:
        return json.dumps({"operations": [{"op": "add", "text": "Sign <b>texts</b> & 'notes'."}]})

    report = train(ws, recipe="ace", episodes=1, updater_llm=MockLLM(updater))
    (sha,) = report.commits
    code, _, err = _cli(capsys, "revert", sha, "--reason", "a <bad> idea")
    assert code == 0, err
    html = _write(capsys, tmp_path / "out").read_text("utf-8")
    _assert_self_contained(html)
    assert "<b>texts</b>" not in html and escape("+Sign <b>texts</b> & 'notes'.") in html
    assert escape("+reason: a <bad> idea") in html
    assert html.index(f"revert {sha[:10]}") < html.index(f"<code>{sha[:10]}</code>")


def test_report_of_a_new_workspace_says_there_is_no_data(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = _write(capsys, tmp_path / "out").read_text("utf-8")
    _assert_self_contained(html)
    for anchor in HEADINGS:
        assert f'<h2 id="{anchor}">' in html
    assert "no data yet" in _section(html, "training")
    assert "no data yet" in _section(html, "generations")
    assert build_report(ws).count("<h2 ") == len(HEADINGS)


def test_report_defaults_to_an_ignored_folder(
    ws: Workspace, trained: TrainReport, run_git: RunGit, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "report")
    assert code == 0, err
    path = ws.root / "generations" / "report" / "report.html"
    assert path.is_file() and out.strip() == f"wrote {path}"
    assert run_git(ws.root, "status", "--porcelain", "--untracked-files=all") == ""


# --- in a browser ---------------------------------------------------------------------------


def _chromium() -> str:
    found = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    found = found or shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("EVOLVE_REQUIRE_BROWSER") == "1":
            pytest.fail(
                "EVOLVE_REQUIRE_BROWSER=1 but no chromium was found (looked for "
                "/usr/bin/chromium and chromium on PATH); install chromium to run this test."
            )
        pytest.skip("chromium is not installed (set EVOLVE_REQUIRE_BROWSER=1 to make this fail)")
    return found


def _browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_report_opens_in_headless_chromium(
    ws: Workspace, trained: TrainReport, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chromium = _chromium()
    path = _write(capsys, tmp_path / "out")
    url = path.resolve().as_uri()

    done = _browse(chromium, tmp_path / "profile-dom", "--dump-dom", url)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    for heading in HEADINGS.values():
        assert heading in dom
    assert dom.count("<svg") >= 3
    assert "payment_visibility" in dom

    shot = tmp_path / "shot.png"
    done = _browse(
        chromium, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1024,2000", url
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.is_file()
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1024, 2000)
    assert len(data) > 20_000, f"the screenshot is {len(data)} bytes: a blank page?"
