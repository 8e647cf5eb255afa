"""Near-duplicates shown as one result (issue 36): a *stack* per shot, in the library and in search results.

The stacks are the groups of :func:`indexer.duplicates.find_duplicates` (exact copies and near-duplicates
merged: a shot's re-encoded copy and its byte-identical backup are one stack). Each stack has a *cover*, the
photo shown for it: the copy the user marked to keep (:mod:`indexer.store.kept_copies`), else the one the
timeline reaches first (the newest). The library hides the other members; a search shows the stack where its
best-matching member ranks (the best match is what the user asked for) and hides the rest.

Finding the groups costs one k-nearest-neighbour search per photo, so :class:`DuplicateStacks` keeps them until
the library changes (its count, largest id and sum of ids: ids are never reused) and re-reads only the marks,
one small query, per request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from indexer.duplicates import DEFAULT_THRESHOLD, DuplicateGroup, find_duplicates
from indexer.image_index import ImageIndex
from indexer.store.kept_copies import KeptCopies
from indexer.store.timeline import library_size, timeline_order

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stacks:
    """The stacks of a library at one moment."""

    members: dict[int, tuple[int, ...]]  # every stacked photo → its stack, cover first, then in timeline order
    kept: frozenset[int] = frozenset()
    hidden: frozenset[int] = field(default=frozenset())  # stacked photos that are not their stack's cover

    @classmethod
    def of(cls, groups: Sequence[Sequence[int]], kept: frozenset[int]) -> Stacks:
        """``groups``: each stack's ids in timeline order."""
        members: dict[int, tuple[int, ...]] = {}
        for ids in groups:
            if len(ids) < 2:  # the others were removed meanwhile
                continue
            marked = [i for i in ids if i in kept]
            cover = marked[0] if marked else ids[0]
            stack = (cover, *(i for i in ids if i != cover))
            members.update(dict.fromkeys(stack, stack))
        hidden = frozenset(i for i, stack in members.items() if stack[0] != i)
        return cls(members, kept, hidden)

    def stack_of(self, image_id: int) -> tuple[int, ...] | None:
        return self.members.get(image_id)

    def first_of_each(self, ranked: Sequence[int]) -> list[int]:
        """Positions of ``ranked`` (search hits, best first) to show: each stack once, where its best-ranked
        member is."""
        seen: set[tuple[int, ...]] = set()
        shown = []
        for position, image_id in enumerate(ranked):
            stack = self.members.get(image_id)
            if stack is not None:
                if stack in seen:
                    continue
                seen.add(stack)
            shown.append(position)
        return shown


def merged_groups(groups: Sequence[DuplicateGroup]) -> list[list[int]]:
    """Exact and near groups that share a photo, merged (a near group holds one id per content; its exact copies
    are in an exact group)."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for group in groups:
        first = find(group.ids[0])
        for other in group.ids[1:]:
            root = find(other)
            if root != first:
                parent[max(root, first)] = min(root, first)
                first = min(root, first)
    merged: dict[int, list[int]] = {}
    for i in list(parent):
        merged.setdefault(find(i), []).append(i)
    return [sorted(ids) for ids in merged.values() if len(ids) > 1]


class DuplicateStacks:
    """The stacks of one open index; safe to share between threads.

    The groups are found once, on the first call (blocking: one k-NN search per photo). When photos are added or
    removed later, the next call starts finding them again in a background thread and answers at once with the
    groups it has, less the photos removed since: a library that changes under ``serve --watch`` never waits for
    the search of every photo, and a photo just added is stacked a moment later."""

    def __init__(self, index: ImageIndex, threshold: float = DEFAULT_THRESHOLD) -> None:
        self.index = index
        self.threshold = threshold
        self.kept = KeptCopies(index.store)
        self._lock = threading.Lock()
        self._size: tuple[int, int, int] | None = None  # the library the groups were found in
        self._groups: list[list[int]] = []
        self._stacks: Stacks | None = None
        self._refresh: threading.Thread | None = None

    def current(self) -> Stacks:
        """The stacks now (the groups as last found, see the class)."""
        size = library_size(self.index.store)
        kept = frozenset(self.kept.ids())
        with self._lock:
            if self._size is None:
                self._groups, self._size = self._find(), size
            elif size != self._size and (self._refresh is None or not self._refresh.is_alive()):
                present = set(self.index.store.ids())
                self._groups = [[i for i in ids if i in present] for ids in self._groups]
                self._stacks = None
                self._refresh = threading.Thread(target=self._find_again, args=(size,), name="stacks", daemon=True)
                self._refresh.start()
            if self._stacks is None or self._stacks.kept != kept:
                self._stacks = Stacks.of(self._groups, kept)
            return self._stacks

    def wait(self, timeout: float | None = None) -> None:
        """Until a background search started by :meth:`current` has finished (tests, shutdown)."""
        refresh = self._refresh
        if refresh is not None:
            refresh.join(timeout)

    def close(self) -> None:
        """Let a background search finish before the index closes (bounded: it then fails and is logged)."""
        self.wait(timeout=30)

    def _find(self) -> list[list[int]]:
        groups = merged_groups(find_duplicates(self.index, self.threshold))
        return [timeline_order(self.index.store, ids) for ids in groups]

    def _find_again(self, size: tuple[int, int, int]) -> None:
        try:
            groups = self._find()
        except Exception:  # the index closed or failed meanwhile: keep the groups it had, try at the next change
            log.warning("duplicate stacks: finding the groups again failed", exc_info=True)
            return
        with self._lock:
            self._groups, self._size, self._stacks = groups, size, None
