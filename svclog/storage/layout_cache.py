"""The chunk layouts a process has read (block bounds and token filters), kept apart from chunk bytes.

A needle query asks every chunk of the matching streams whether any block may hold the needle,
and almost all say no. Answering that from the layout alone means a ruled-out chunk costs no GET
and no decoding, even once its bytes have left the (much larger) bytes cache. The filters of all
known chunks are also stacked into one TokenIndex, so a probe is looked up for every block of
every chunk in one vectorised pass instead of one pass per chunk per time window.

Chunk keys name immutable objects (their checksum is part of the key), so a layout never goes stale.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from svclog.chunk.format import BlockScan, ChunkLayout
from svclog.chunk.token_index import TokenIndex

_NO_BOUND = (np.iinfo(np.int64).min, np.iinfo(np.int64).max)  # a block whose writer kept no bounds


def layout_bytes(layout: ChunkLayout) -> int:
    """What a cached layout costs: its filters' words and ~64 bytes per block of bounds."""
    index = layout.index
    return (index.words.nbytes if index is not None else 0) + 64 * len(layout.bounds) + 200


@dataclass(frozen=True)
class LayoutStack:
    """An immutable snapshot of every cached layout, blocks concatenated in slot order."""

    slots: dict[str, int]  # chunk key -> slot
    first: np.ndarray  # (chunks,) first block of each slot
    count: np.ndarray  # (chunks,) blocks of each slot
    lo: np.ndarray  # (blocks,) smallest timestamp of each block
    hi: np.ndarray  # (blocks,) largest timestamp
    indexed: np.ndarray  # (blocks,) bool: the block's chunk has a token index
    index: TokenIndex  # every indexed chunk's filters (0 buckets for blocks of chunks without one)

    @classmethod
    def build(cls, layouts: Sequence[tuple[str, ChunkLayout]]) -> LayoutStack:
        count = np.array([len(layout.bounds) for _, layout in layouts], dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(count)[:-1])).astype(np.int64) if len(count) else count
        bounds = [b if b is not None else _NO_BOUND for _, layout in layouts for b in layout.bounds]
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 2)
        words, buckets, indexed = [], [], []
        for _, layout in layouts:
            index = layout.index
            if index is not None:
                words.append(index.words)
                buckets.append(index.buckets)
            else:
                buckets.append(np.zeros(len(layout.bounds), dtype=np.int64))
            indexed.append(np.full(len(layout.bounds), index is not None))
        stacked = TokenIndex(
            np.concatenate(words) if words else np.zeros((0, 8), np.uint32),
            np.concatenate(buckets) if buckets else np.zeros(0, np.int64),
        )
        return cls(
            {key: slot for slot, (key, _) in enumerate(layouts)},
            first,
            count,
            edges[:, 0].copy(),
            edges[:, 1].copy(),
            np.concatenate(indexed) if indexed else np.zeros(0, bool),
            stacked,
        )

    def ruled_out(self, keys: Sequence[str], start: int, end: int, possible: np.ndarray, scan: BlockScan) -> np.ndarray:
        """Per key: True when the chunk is known here and none of its blocks in [start, end) may
        hold a wanted line (`possible`: per stacked block, from the probe). Those chunks need not
        be read; their blocks are counted into `scan` as a read would have counted them."""
        out = np.zeros(len(keys), dtype=bool)
        blocks = self._blocks(keys, start, end, possible)
        if blocks is None:
            return out
        known, counts, owner, in_range, kept, indexed = blocks
        any_in_range = np.bincount(owner, weights=in_range, minlength=len(known)) > 0
        any_kept = np.bincount(owner, weights=kept, minlength=len(known)) > 0
        skip = any_in_range & ~any_kept  # a chunk without blocks in range is left to the reader
        counted = np.repeat(skip, counts)
        scan.blocks += int((in_range & counted).sum())
        scan.indexed += int((indexed & counted).sum())
        scan.skipped += int((indexed & counted).sum())
        scan.chunks_skipped += int(skip.sum())
        out[known[skip]] = True
        return out

    def kept_share(self, keys: Sequence[str], start: int, end: int, possible: np.ndarray) -> np.ndarray:
        """Per key: the share of the chunk's blocks in [start, end) a read would decode, those the
        probe leaves (`possible`), 1.0 for a chunk not known here: what a planner expects a
        select to read of it (blocks are of about equal size)."""
        out = np.ones(len(keys), dtype=np.float64)
        blocks = self._blocks(keys, start, end, possible)
        if blocks is None:
            return out
        known, _, owner, in_range, kept, _ = blocks
        total = np.bincount(owner, weights=in_range, minlength=len(known))
        left = np.bincount(owner, weights=kept, minlength=len(known))
        out[known] = np.divide(left, total, out=np.ones_like(left), where=total > 0)
        return out

    def _blocks(self, keys: Sequence[str], start: int, end: int, possible: np.ndarray) -> tuple | None:
        """The known keys' stacked blocks: (positions of the known keys, their block counts, each
        block's owner among them, in range, kept by the probe, indexed); None: none known."""
        slot = np.fromiter((self.slots.get(key, -1) for key in keys), dtype=np.int64, count=len(keys))
        known = np.flatnonzero(slot >= 0)
        if not len(known):
            return None
        counts = self.count[slot[known]]
        total = int(counts.sum())
        owner = np.repeat(np.arange(len(known)), counts)
        blocks = np.repeat(self.first[slot[known]] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        blocks += np.arange(total)
        in_range = (self.lo[blocks] < end) & (self.hi[blocks] >= start)
        indexed = in_range & self.indexed[blocks]
        kept = in_range & (possible[blocks] | ~self.indexed[blocks])
        return known, counts, owner, in_range, kept, indexed


class LayoutCache:
    """Chunk layouts by key, least recently used first out past `max_bytes`."""

    def __init__(self, max_bytes: int = 32 << 20):
        self.max_bytes = max_bytes
        self._layouts: OrderedDict[str, tuple[ChunkLayout, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._stack: LayoutStack | None = None  # rebuilt on the first lookup after a change

    def __len__(self) -> int:
        return len(self._layouts)

    def get(self, key: str) -> ChunkLayout | None:
        with self._lock:
            entry = self._layouts.get(key)
            if entry is None:
                return None
            self._layouts.move_to_end(key)
            return entry[0]

    def put(self, key: str, layout: ChunkLayout) -> None:
        size = layout_bytes(layout)
        if size > self.max_bytes:
            return
        with self._lock:
            if key in self._layouts:
                return
            self._layouts[key] = (layout, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, old) = self._layouts.popitem(last=False)
                self._bytes -= old
            self._stack = None

    def stack(self) -> LayoutStack:
        with self._lock:
            if self._stack is None:
                self._stack = LayoutStack.build([(key, layout) for key, (layout, _) in self._layouts.items()])
            return self._stack
