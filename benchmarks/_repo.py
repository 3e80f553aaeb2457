"""Shared set-up for the benchmarks: a repository with many files and a long history, built
with `git fast-import` so that set-up takes seconds, not minutes."""

from __future__ import annotations

import subprocess
from pathlib import Path


def build_repo(root: Path, *, files: int, commits: int, prefix: str = "memory/") -> None:
    """Create a git repository at `root` with `files` files under `prefix` and `commits` commits.

    The first commit adds every file; each later commit changes one file, round-robin.
    """
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    stream: list[bytes] = []
    stamp = 1_700_000_000

    def data(payload: bytes) -> None:
        stream.append(b"data %d\n" % len(payload))
        stream.append(payload)
        stream.append(b"\n")

    for n in range(commits):
        stream.append(b"commit refs/heads/main\n")
        stream.append(b"committer bench <bench@localhost> %d +0000\n" % (stamp + n))
        data(b"bench commit %d\n\nEvolve-Episode: %d\nEvolve-Recipe: bench\n" % (n, n))
        if n == 0:
            for i in range(files):
                stream.append(b"M 100644 inline %sunit-%04d.md\n" % (prefix.encode(), i))
                data(b"---\nid: unit-%04d\n---\nstatement %d\n" % (i, i))
        else:
            i = n % files
            stream.append(b"M 100644 inline %sunit-%04d.md\n" % (prefix.encode(), i))
            data(b"---\nid: unit-%04d\n---\nstatement %d revised at %d\n" % (i, i, n))
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(stream), cwd=root, check=True)
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=root, check=True)
    for key, value in (("user.name", "bench"), ("user.email", "bench@localhost")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
