"""TenantIndex: one tenant's index segments, loaded per day, edited in memory, committed merged.

Committing a day writes ONE merged segment first and only then deletes the segments it
was built from, so a reader always finds every ref in some segment (a reader that listed
an old key and finds it gone treats it as removed). Segments written by ingesters after
the day was loaded are not touched. The chunk keys that no committed day references any
more are returned, for the sweeper to delete once readers can no longer need them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa

from svclog.model import Labels
from svclog.storage import schema
from svclog.storage.index import ChunkRef, decode_labels, refs_to_table, table_to_bytes
from svclog.storage.layout_sidecar import SEGMENT_SUFFIX, encode_table, kept_rows, read_layouts, sidecar_key
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)


def table_to_refs(table: pa.Table) -> list[ChunkRef]:
    labels_cache: dict[str, Labels] = {}
    refs = []
    for row in table.to_pylist():
        text = row["labels"]
        labels = labels_cache.get(text)
        if labels is None:
            labels = labels_cache[text] = decode_labels(text)
        refs.append(
            ChunkRef(
                labels,
                row["fingerprint"],
                row["key"],
                row["min_ts"],
                row["max_ts"],
                row["entries"],
                row["bytes"],
                row["compressed"],
                row.get("sealed_ns") or 0,
            )
        )
    return refs


@dataclass
class DayIndex:
    """The refs of one tenant/day: the union of the segments that existed when it was loaded."""

    day: int
    segment_keys: list[str]
    refs: dict[str, ChunkRef]
    initial_keys: frozenset[str] = field(default_factory=frozenset)
    dirty: bool = False

    @classmethod
    def load(cls, store: ObjectStore, tenant: str, day: int) -> DayIndex:
        keys: list[str] = []
        refs: dict[str, ChunkRef] = {}
        for key in store.list(schema.index_dir(tenant, day)):
            if not key.endswith(SEGMENT_SUFFIX):
                continue
            try:
                data = store.get(key)
            except FileNotFoundError:
                continue
            keys.append(key)
            for ref in table_to_refs(pa.ipc.open_file(pa.BufferReader(data)).read_all()):
                refs.setdefault(ref.key, ref)
        return cls(day, keys, refs, frozenset(refs))

    def needs_commit(self) -> bool:
        return self.dirty or len(self.segment_keys) > 1


class TenantIndex:
    def __init__(self, store: ObjectStore, tenant: str, writer_id: str = "compactor"):
        self.store = store
        self.tenant = tenant
        self.writer_id = writer_id
        self._days: dict[int, DayIndex] = {}

    def days(self) -> list[int]:
        """Days with index segments, oldest first."""
        names = self.store.list_dirs(f"{schema.tenants_prefix()}/{self.tenant}")
        return sorted(int(n) for n in names if n.lstrip("-").isdigit())

    def segment_count(self, day: int) -> int:
        return sum(1 for k in self.store.list(schema.index_dir(self.tenant, day)) if k.endswith(SEGMENT_SUFFIX))

    def day(self, day: int) -> DayIndex:
        found = self._days.get(day)
        if found is None:
            found = self._days[day] = DayIndex.load(self.store, self.tenant, day)
        return found

    def loaded_days(self) -> list[int]:
        return sorted(self._days)

    def refs_in(self, day: int) -> list[ChunkRef]:
        return sorted(self.day(day).refs.values(), key=lambda r: (r.fingerprint, r.min_ts, r.key))

    def refs_between(self, start: int, end: int) -> list[ChunkRef]:
        """Distinct refs of chunks overlapping [start, end] (inclusive), over every day touched."""
        found: dict[str, ChunkRef] = {}
        for day in schema.periods_between(start, end + 1):
            for ref in self.day(day).refs.values():
                if ref.min_ts <= end and ref.max_ts >= start:
                    found.setdefault(ref.key, ref)
        return sorted(found.values(), key=lambda r: (r.fingerprint, r.min_ts, r.key))

    def replace(self, old: Iterable[ChunkRef], new: Iterable[ChunkRef]) -> None:
        """Drop `old` refs from every day they span and add `new` ones to every day they span."""
        for ref in old:
            for day in schema.periods_between(ref.min_ts, ref.max_ts + 1):
                index = self.day(day)
                if index.refs.pop(ref.key, None) is not None:
                    index.dirty = True
        for ref in new:
            for day in schema.periods_between(ref.min_ts, ref.max_ts + 1):
                index = self.day(day)
                index.refs[ref.key] = ref
                index.dirty = True

    def commit(self) -> CommitResult:
        """Write each changed (or multi-segment) loaded day as one segment; returns what changed."""
        result = CommitResult()
        before: set[str] = set()
        after: set[str] = set()
        for day, index in sorted(self._days.items()):
            before |= index.initial_keys
            after |= set(index.refs)
            if not index.needs_commit():
                continue
            written = None
            if index.refs:
                table = refs_to_table(sorted(index.refs.values(), key=lambda r: (r.fingerprint, r.min_ts)))
                written = (
                    f"{schema.index_dir(self.tenant, day)}/{self.writer_id}-{uuid.uuid4().hex[:12]}{SEGMENT_SUFFIX}"
                )
                # the merged segment's layouts first, as a writer's: those its segments had
                olds = [read_layouts(self.store, key) for key in index.segment_keys]
                layouts = kept_rows([t for t in olds if t is not None], index.refs)
                if layouts.num_rows:
                    self.store.put(sidecar_key(written), encode_table(layouts))
                self.store.put(written, table_to_bytes(table))
            for key in index.segment_keys:
                self.store.delete(key)
                self.store.delete(sidecar_key(key))  # after its segment: never a segment without its layouts
            result.segments_written += written is not None
            result.segments_removed += len(index.segment_keys)
            result.days.append(day)
            index.segment_keys = [written] if written else []
            index.initial_keys = frozenset(index.refs)
            index.dirty = False
        result.removed_chunks = sorted(before - after)
        return result


@dataclass
class CommitResult:
    days: list[int] = field(default_factory=list)
    segments_written: int = 0
    segments_removed: int = 0
    removed_chunks: list[str] = field(default_factory=list)
