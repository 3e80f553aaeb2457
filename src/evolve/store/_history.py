"""The store's history: `git log` read with NUL-framed output (and a per-call random marker
around patches), trailers parsed from each raw message, so no text in a commit, a file or an
author name can break the parsing."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evolve._format._git import committed_env
from evolve.errors import EvolveError
from evolve.store._base import GitFailed
from evolve.store._refs import GitRefs
from evolve.store._trailers import split_message

_LOG_FORMAT = "%H%x00%P%x00%cI%x00%B"
# Whatever the user's configuration: UTF-8 messages, no signature check output in between.
_LOG_OPTIONS = ("--encoding=UTF-8", "--no-show-signature")


@dataclass(frozen=True)
class CommitInfo:
    """One commit as `git log` reports it, with its trailers parsed."""

    sha: str
    parents: tuple[str, ...]
    time: str
    subject: str
    body: str
    trailers: dict[str, str] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.sha[:10]


def _info(sha: bytes, parents: bytes, when: bytes, message: bytes) -> CommitInfo:
    subject, body, trailers = split_message(message.decode("utf-8", "replace"))
    return CommitInfo(
        sha=sha.decode("ascii"),
        parents=tuple(parents.decode("ascii").split()),
        time=when.decode("ascii"),
        subject=subject,
        body=body,
        trailers=trailers,
    )


class GitHistory(GitRefs):
    """Reading history (see the module's docstring)."""

    def rev_parse(self, rev: str) -> str:
        """Resolve a revision to a full commit sha.

        Raises:
            EvolveError: when `rev` names no commit.
        """
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        except GitFailed:
            raise EvolveError(
                f"'{rev}' is not a commit in this workspace; see `evolve log`."
            ) from None

    def log(
        self,
        paths: Sequence[str] = (),
        *,
        max_count: int | None = None,
        rev: str = "HEAD",
        grep_trailer: str | None = None,
        grep_value: str | None = None,
        min_parents: int | None = None,
    ) -> Iterator[CommitInfo]:
        """Walk history newest first; git does the walking and the path filtering.

        `grep_trailer` (and `grep_value`) keep only commits whose message contains the line
        ``<trailer>: <value>`` (matched as a fixed string; callers check the parsed trailer).
        Each commit is four NUL-terminated fields (`-z`; git never prints a NUL inside a
        message), so no message can forge a field or a record boundary.
        """
        if self.head() is None:
            return
        args = ["log", "-z", f"--format={_LOG_FORMAT}", *_LOG_OPTIONS]
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        if min_parents is not None:
            args.append(f"--min-parents={min_parents}")
        if grep_trailer:
            needle = (
                f"{grep_trailer}: {grep_value}" if grep_value is not None else f"{grep_trailer}:"
            )
            args += ["--fixed-strings", f"--grep={needle}"]
        args += ["--end-of-options", rev]
        if paths:
            args += ["--", *paths]
        fields = self._git_bytes(*args).split(b"\x00")
        if len(fields) % 4 != 1 or fields[-1]:
            raise EvolveError("git log printed output evolve cannot read; rerun the command.")
        for n in range(0, len(fields) - 1, 4):
            yield _info(*fields[n : n + 4])

    def walk(self, rev: str = "HEAD") -> Generator[CommitInfo, None, None]:
        """Every commit reachable from `rev`, newest first, parsed as git prints them: one
        `git log -z` with no pathspec (so no tree is diffed), read as it streams. Closing the
        iterator early stops git."""
        if self.head() is None:
            return
        argv = ["log", "-z", f"--format={_LOG_FORMAT}", *_LOG_OPTIONS, "--end-of-options", rev]
        try:
            for fields in stream_fields(self.root, argv, 4):
                yield _info(*fields)
        except GitFailed as exc:
            if exc.returncode == 0:  # output that does not split into whole records
                raise EvolveError(
                    "git log printed output evolve cannot read; rerun the command."
                ) from None
            raise

    def commits_touching(self, shas: Sequence[str], paths: Sequence[str]) -> set[str]:
        """Which of the (non-merge) commits `shas` change a file under `paths` against their
        parent: one `git diff-tree --stdin` for all of them."""
        if not shas:
            return set()
        out = self._git_bytes(
            "diff-tree", "--stdin", "-r", "--name-only", "-z", "--no-renames", "--", *paths,
            input="".join(f"{sha}\n" for sha in shas).encode("ascii"),
        )  # fmt: skip
        wanted = set(shas)
        return {
            tok for tok in out.decode("utf-8", "surrogateescape").split("\x00") if tok in wanted
        }

    def log_patches(
        self, paths: Sequence[str], *, max_count: int | None = None
    ) -> list[tuple[CommitInfo, str]]:
        """Commits touching `paths`, newest first, each with its patch for those paths.

        Patches show file content, which may hold any byte, so each commit's header is framed
        by a marker drawn at random for this call: no content written before can contain it.
        They show the committed bytes: no textconv driver or external diff runs.
        """
        return self.start_log_patches(paths, max_count=max_count)()

    def start_log_patches(
        self,
        paths: Sequence[str],
        *,
        max_count: int | None = None,
        options: Sequence[str] = (),
    ) -> Callable[[], list[tuple[CommitInfo, str]]]:
        """Start :meth:`log_patches`'s git process and return the call that collects its
        answer, so the caller can work (parse, import) while git walks."""
        if self.head() is None:
            return lambda: []
        marker = b"\x00" + os.urandom(16).hex().encode("ascii") + b"\x00"
        fmt = "%x00" + marker[1:-1].decode("ascii") + "%x00" + _LOG_FORMAT
        fmt += "%x00" + marker[1:-1].decode("ascii") + "%x00"
        args = ["log", f"--format={fmt}", "-p", "--no-color", "--no-ext-diff", "--no-textconv"]
        args += [*_LOG_OPTIONS, *options]  # e.g. a context size (`evolve show`'s sidecar patches)
        if max_count is not None:
            args.append(f"--max-count={max_count}")
        args += ["HEAD", "--", *paths]
        proc = subprocess.Popen(
            ["git", *args], cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=committed_env(),
        )  # fmt: skip

        def collect() -> list[tuple[CommitInfo, str]]:
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise GitFailed(args, proc.returncode, err.decode("utf-8", "replace"))
            chunks = out.split(marker)
            result = []
            for n in range(1, len(chunks) - 1, 2):
                fields = chunks[n].split(b"\x00")
                if len(fields) != 4:
                    raise EvolveError(
                        "git log printed output evolve cannot read; rerun the command."
                    )
                patch = chunks[n + 1].decode("utf-8", "replace").strip("\n")
                result.append((_info(*fields), patch))
            return result

        return collect

    def changed_paths(
        self, parent: str | None, commit: str, paths: Sequence[str] = ()
    ) -> list[tuple[str, str]]:
        """(status letter, path) of the files `commit` changed against `parent`."""
        base = parent if parent is not None else self.empty_tree
        out = self._git_bytes(
            "diff-tree", "-r", "-z", "--no-renames", "--name-status", base, commit, "--", *paths
        )
        items = out.decode("utf-8", "surrogateescape").split("\x00")
        return [(items[n][:1], items[n + 1]) for n in range(0, len(items) - 1, 2) if items[n + 1]]

    def first_touch_after(self, commit: str, path: str) -> str | None:
        """The oldest commit after `commit` (on HEAD's history) that changed `path`."""
        out = self.git("log", "--reverse", "--format=%H", f"{commit}..HEAD", "--", path).split()
        return out[0] if out else None

    def commit_info(self, rev: str) -> CommitInfo:
        sha = self.rev_parse(rev)
        return next(self.log(rev=sha, max_count=1))


def stream_fields(root: Path, argv: Sequence[str], width: int) -> Iterator[list[bytes]]:
    """The NUL-separated fields `git ARGV -z` prints, `width` to a record, read as git streams
    them (constant memory); closing the iterator early stops git.

    Raises:
        GitFailed: git exited non-zero (its complaint), or its output does not split into whole
            records (return code 0, "unreadable output").
    """
    proc = subprocess.Popen(
        ["git", *argv], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=committed_env(),
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    fields: list[bytes] = []
    rest = b""
    finished = False
    try:
        while chunk := os.read(proc.stdout.fileno(), 1 << 16):
            parts = (rest + chunk).split(b"\x00")
            rest = parts.pop()
            fields += parts
            whole = len(fields) - len(fields) % width
            for n in range(0, whole, width):
                yield fields[n : n + width]
            del fields[:whole]
        finished = True
    finally:
        if not finished:
            proc.kill()
        proc.stdout.close()
        err = proc.stderr.read()
        proc.stderr.close()
        code = proc.wait()
    if code != 0:
        raise GitFailed(list(argv[:1]), code, err.decode("utf-8", "replace"))
    if fields or rest:
        raise GitFailed(list(argv[:1]), 0, "unreadable output")
