"""What the sim has parsed, kept for the process, in bounded memory.

Every turn of an episode sends the same system prompt, every episode until memory changes
sends the same prompt again, and a change of memory changes one or two of its sentences. So
the sim keeps two caches:

- per prompt: what it read from the whole text, keyed by a digest of the content (not the
  text itself, so a thousand-unit prompt is not kept alive per entry); the last prompt seen
  is also remembered by identity, so the turns of an episode do not even hash it again;
- per sentence: the directives a sentence carries (`recognize` over every rule), so a prompt
  that differs from the last by one unit re-reads one sentence; and per shown unit text, its
  sentences and the slots it is about, so the updater roles, which read every unit the prompt
  shows, split and read each distinct unit once.

Both are least-recently-used with a fixed number of entries; a sentence longer than
`MAX_SENTENCE` characters is read every time rather than kept.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from typing import Generic, TypeVar

from evolve.envs.persona_world import Directive, recognize, split_sentences

T = TypeVar("T")
MAX_SENTENCE = 2_000


def digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()


class PromptCache(Generic[T]):
    """`get(text, parse)`: `parse(text)`, computed once per distinct content while it stays
    among the `size` most recently used."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[bytes, T] = OrderedDict()
        self._last: tuple[str, T] | None = None
        self._lock = threading.Lock()
        self.parsed = 0  # how many times `parse` ran (tests read it)

    def get(self, text: str, parse: Callable[[str], T]) -> T:
        last = self._last
        if last is not None and last[0] is text:
            return last[1]
        key = digest(text)
        with self._lock:  # the threads executor may run sim episodes side by side
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
        if found is None:
            found = parse(text)
            with self._lock:
                self.parsed += 1
                self._entries[key] = found
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        self._last = (text, found)
        return found

    def clear(self) -> None:
        self._entries.clear()
        self._last = None
        self.parsed = 0

    def __len__(self) -> int:
        return len(self._entries)


# What a remembered parse depends on besides the prompt: the code that parses (its size and
# modification time; any change forgets every answer).
DISK_ENTRIES = 16


class DiskMemo(Generic[T]):
    """`get(text, parse)`: `parse(text)`, kept in the file at `path` across processes, keyed by
    a digest of `text` and by the source of the parsing code (`evolve._format._cache`); at
    most `DISK_ENTRIES` answers (the most recent). `dump` turns an answer into plain values
    (`marshal`'s), `load` turns them back (raising ValueError for anything it did not write).
    The file is replaced atomically; a file that cannot be read or written only means parsing
    again."""

    def __init__(self, path: str, dump: Callable[[T], object], load: Callable[[object], T]):
        self.path = path
        self.dump = dump
        self.load = load
        self._lock = threading.Lock()
        self.parsed = 0  # how many times `parse` ran (tests read it)

    def get(self, text: str, parse: Callable[[str], T]) -> T:
        from evolve._format._cache import DiskCache

        key = digest(text)
        with self._lock:
            cache = DiskCache(self.path, size=DISK_ENTRIES)  # read afresh: other processes
            raw = cache.get(key)
            if raw is not None:
                try:
                    return self.load(raw)
                except ValueError:
                    pass
            found = parse(text)
            self.parsed += 1
            cache.put(key, self.dump(found))
            return found


@lru_cache(maxsize=16_384)
def _recognized(sentence: str) -> tuple[Directive, ...]:
    return tuple(recognize(sentence))


def recognized(sentence: str) -> tuple[Directive, ...]:
    """Every directive `sentence` expresses, over all rules (`recognize`), cached."""
    if len(sentence) > MAX_SENTENCE:
        return tuple(recognize(sentence))
    return _recognized(sentence)


@lru_cache(maxsize=16_384)
def _sentences_of(text: str) -> tuple[str, ...]:
    return tuple(split_sentences(text))


def sentences_of(text: str) -> tuple[str, ...]:
    """`split_sentences(text)` (a unit as a prompt shows it), cached: the slots a unit states
    and the slots it names vaguely are both read from its sentences."""
    if len(text) > MAX_SENTENCE:
        return tuple(split_sentences(text))
    return _sentences_of(text)


@lru_cache(maxsize=16_384)
def _slots_of(text: str) -> frozenset[str]:
    return frozenset(d.slot for s in _sentences_of(text) for d in recognized(s))


def slots_of(text: str) -> frozenset[str]:
    """The slots the sentences of `text` (a unit as a prompt shows it) are about, cached."""
    if len(text) > MAX_SENTENCE:
        return frozenset(d.slot for s in split_sentences(text) for d in recognized(s))
    return _slots_of(text)


def clear_sentences() -> None:
    _recognized.cache_clear()
    _sentences_of.cache_clear()
    _slots_of.cache_clear()
