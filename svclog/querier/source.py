"""StoreSource: the engine's LogSource over ingesters (unflushed data) and the chunk store.

Ingesters are read first, then the index: a chunk flushed in between is then seen in
one place or the other, never missed. Entries of one stream from all places are
merged into one StreamBlock: flushed chunks in seal order, then the ingesters' entries
(pushed later), stably sorted by timestamp so that entries sharing one keep push order,
and de-duplicated (replicas hold copies).
Several tenants (multi-tenant queries) add the virtual `__tenant_id__` label.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from svclog.chunk.head import sort_dedupe
from svclog.chunk.packed import line_bytes_of
from svclog.chunk.pushdown import BlockProbe, apply_line_filters, block_probe
from svclog.logql.engine.guard import QueryGuard
from svclog.logql.source import IngesterScan, SelectRequest, SourceStats, StreamBlock
from svclog.model import Labels, Matcher, labels_match
from svclog.querier.overlap import without_flushed_copies
from svclog.storage.chunk_store import ChunkStore, FetchStats
from svclog.storage.index import ChunkRef
from svclog.thread_heaps import HeapPool

TENANT_LABEL = "__tenant_id__"
# Line bytes of unflushed entries a select asks the ingesters for at a time (a reader that pages):
# its memory bound for them, at one ingester round trip per page (~64 pages for an hour of 3M lines)
INGESTER_PAGE_BYTES = 8 << 20
# Threads that read the ingesters' next page while a select's engine reads the current one: one
# per query slot of a querier with up to 8 (`querier.max_concurrent`, 4 by default); more queue here
_PAGES_AHEAD = HeapPool(max_workers=8, thread_name_prefix="ingester-page")


IngesterAnswer = (
    tuple[list[tuple[Labels, pa.Table]], int]
    | tuple[list[tuple[Labels, pa.Table]], int, IngesterScan]
    | tuple[list[tuple[Labels, pa.Table]], int, IngesterScan, Any]  # a reader that pages: its cursor
    # and the store keys of flushed chunks it answered from the copies the ingesters retain
    | tuple[list[tuple[Labels, pa.Table]], int, IngesterScan, Any, frozenset[str]]
)


class IngesterReader(Protocol):
    def select(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        start: int,
        end: int,
        shard: tuple[int, int] | None,
        line_filters: tuple = (),
        deadline: float | None = None,
    ) -> IngesterAnswer:
        """Unflushed entries of matching streams from every ingester, how many answered and,
        when the ingesters tell, what they scanned for it (summed over them). `deadline` is the
        query's (wall-clock seconds): an ingester stops its select when it passes. A reader with
        `cancellable = True` also takes `on_cancel` (QueryGuard.on_cancel) to stop its selects
        when the query is cancelled; one with `pages = True` takes `after` (its cursor, None for
        the first page) and `page_bytes`, and answers the next page's cursor (None: no more). A
        fifth value names the flushed chunks (store keys) whose rows the answer already holds from
        the ingesters' retained copies: the select does not read those files again."""
        ...

    def series(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list[Labels]: ...


class IndexLookups(Protocol):
    """What a querier reads from the index: the IndexReader itself, or the index gateways in front of it."""

    def chunk_refs(
        self, tenant: str, matchers: Iterable[Matcher], start: int, end: int, shard: tuple[int, int] | None = None
    ) -> dict[Labels, list[ChunkRef]]: ...

    def series(self, tenant: str, matchers: Iterable[Matcher], start: int, end: int) -> set[Labels]: ...


class DeleteFilters(Protocol):
    def table_filter(self, tenant: str) -> Callable[[Labels, pa.Table], pa.Table] | None:
        """Removes a stream's deleted entries (stored delete requests); None when the tenant has none."""
        ...


def split_tenant_matchers(matchers: Iterable[Matcher]) -> tuple[list[Matcher], list[Matcher]]:
    tenant: list[Matcher] = []
    rest: list[Matcher] = []
    for m in matchers:
        (tenant if m.name == TENANT_LABEL else rest).append(m)
    return tenant, rest


def with_tenant_label(labels: Labels, tenant: str) -> Labels:
    items = dict(labels.items)
    if TENANT_LABEL in items:
        items["original_" + TENANT_LABEL] = items.pop(TENANT_LABEL)
    items[TENANT_LABEL] = tenant
    return Labels(items.items())


class StoreSource:
    # every block it yields already passed the request's leading line filters (pushdown)
    applies_line_filters = True

    def __init__(
        self,
        tenants: list[str],
        index: IndexLookups,
        chunks: ChunkStore,
        ingesters: IngesterReader | None,
        *,
        query_ingesters_within: int = 0,
        deletes: DeleteFilters | None = None,
        guard: QueryGuard | None = None,
    ):
        self.tenants = tenants
        self.index = index
        self.chunks = chunks
        self.ingesters = ingesters
        self.query_ingesters_within = query_ingesters_within
        self.stats = SourceStats()
        self.multi = len(tenants) > 1
        self.deletes = deletes
        # checked between chunks and charged with what a select holds until its blocks are yielded
        self.guard = guard if guard is not None else QueryGuard()
        self._probes: dict[tuple, BlockProbe | None] = {}

    def _tenants_for(self, matchers: Iterable[Matcher]) -> tuple[list[str], tuple[Matcher, ...]]:
        tenant_matchers, rest = split_tenant_matchers(matchers)
        if not self.multi:
            return self.tenants, tuple(matchers)
        chosen = [t for t in self.tenants if all(m.matches(t) for m in tenant_matchers)]
        return chosen, tuple(rest)

    def _ingesters_wanted(self, end: int) -> bool:
        if self.ingesters is None:
            return False
        return not self.query_ingesters_within or end > time.time_ns() - self.query_ingesters_within

    def select_logs(self, request: SelectRequest) -> Iterator[StreamBlock]:
        tenants, matchers = self._tenants_for(request.matchers)
        for tenant in tenants:
            for labels, table in self._select_tenant(tenant, matchers, request):
                if self.multi:
                    labels = with_tenant_label(labels, tenant)
                yield StreamBlock(
                    labels, table.column("ts").chunk(0), table.column("line").chunk(0), _metadata_or_none(table)
                )

    def _select_tenant(
        self, tenant: str, matchers: tuple[Matcher, ...], request: SelectRequest
    ) -> Iterator[tuple[Labels, pa.Table]]:
        held = [0]
        try:
            yield from self._select_held(tenant, matchers, request, held)
        finally:
            self.guard.release(held[0])

    def _hold(self, table: pa.Table, held: list[int]) -> None:
        size = table.nbytes
        held[0] += size
        self.guard.charge(size)

    def _select_held(
        self, tenant: str, matchers: tuple[Matcher, ...], request: SelectRequest, held: list[int]
    ) -> Iterator[tuple[Labels, pa.Table]]:
        """Streams in label order, a page of the ingesters' streams at a time (a reader that pages)
        with the store's chunks of the same label range: a select holds about a page of unflushed
        entries per ingester, not all of them (at 3M lines an hour's select held ~600 MB).

        Ingesters page on their own; a page is complete up to the smallest last stream of the
        ingesters with more to send (`upper`), and what others sent past it waits for the next."""
        self.guard.check()
        drop_deleted = self.deletes.table_filter(tenant) if self.deletes is not None else None
        emitted: Labels | None = None  # every stream up to this one has been yielded
        waiting: dict[Labels, list[pa.Table]] = {}
        found, cursor, covered = self._ingester_page(tenant, matchers, request, held, None)
        # store keys the ingesters answered from retained copies (every page so far): for ~10 s
        # after a flush both hold the same rows, and reading both cost a 3M-line select twice
        answered = set(covered)
        ahead: Future[tuple[dict[Labels, list[pa.Table]], Any, frozenset[str]]] | None = None
        ahead_held = [0]  # what the page read ahead holds until it is taken
        try:
            while True:
                if cursor is not None:
                    # the next page is gathered, sent and decoded while this one is read: a
                    # select over the ingesters' memory no longer waits for each page in turn
                    ahead_held = [0]
                    ahead = _PAGES_AHEAD.submit(self._ingester_page, tenant, matchers, request, ahead_held, cursor)
                for labels, tables in found.items():
                    if emitted is None or emitted < labels:  # an ingester new to the ring resends earlier ones
                        waiting.setdefault(labels, []).extend(tables)
                upper = min((v for v in cursor.values() if v is not None), default=None) if cursor else None
                page = {lb: t for lb, t in waiting.items() if upper is None or not upper < lb}
                for labels in page:
                    del waiting[labels]
                del found
                yield from self._merged(tenant, matchers, request, page, drop_deleted, emitted, upper, answered)
                self.guard.release(held[0])
                held[0] = sum(t.nbytes for tables in waiting.values() for t in tables)
                self.guard.charge(held[0])
                if upper is None or ahead is None:
                    return
                emitted = upper
                found, cursor, covered = ahead.result()
                answered.update(covered)
                ahead = None
                held[0] += ahead_held[0]
        finally:
            if ahead is not None:  # the reader stopped early: the page read ahead is dropped
                if not ahead.cancel():
                    _wait_quietly(ahead)
                self.guard.release(ahead_held[0])

    def _ingester_page(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        request: SelectRequest,
        held: list[int],
        cursor: Any,
    ) -> tuple[dict[Labels, list[pa.Table]], Any, frozenset[str]]:
        """The ingesters' entries of one page, by stream, the reader's cursor for the next page
        (None when no ingester has more, always for a reader that does not page), and the store
        keys of the flushed chunks the page holds the retained copies of (not to be read again)."""
        guard = self.guard
        parts: dict[Labels, list[pa.Table]] = {}
        if self.ingesters is None or not self._ingesters_wanted(request.end):
            return parts, None, frozenset()
        paging = {"after": cursor, "page_bytes": INGESTER_PAGE_BYTES} if getattr(self.ingesters, "pages", False) else {}
        try:
            answer = self.ingesters.select(
                tenant,
                matchers,
                request.start,
                request.end,
                request.shard,
                request.line_filters,
                deadline=guard.deadline,
                **({"on_cancel": guard.on_cancel} if getattr(self.ingesters, "cancellable", False) else {}),
                **paging,
            )
        except Exception:
            guard.check()  # a select cut short by the deadline: the query's own timeout error
            raise
        found, reached = answer[0], answer[1]
        scan = answer[2] if len(answer) >= 3 else None
        cursor = answer[3] if len(answer) >= 4 else None
        covered = frozenset(answer[4]) if len(answer) >= 5 else frozenset()
        self.stats.ingester_reached = max(self.stats.ingester_reached, reached)
        self.stats.ingester_batches += reached
        filtered = getattr(self.ingesters, "applies_line_filters", False)
        sent_lines = sent_bytes = 0
        for labels, table in found:
            sent_lines += table.num_rows
            if scan is None:  # a reader that does not say what it scanned: count what it sent
                sent_bytes += _line_bytes(table)
            if not filtered:  # a reader that ignores the hint: filter here, the engine will not
                table = apply_line_filters(table, request.line_filters)
            if table.num_rows:
                self._hold(table, held)
                parts.setdefault(labels, []).append(table)
        self.stats.ingester_lines_sent += sent_lines
        self._count_ingester_scan(scan if scan is not None else IngesterScan(sent_lines, sent_bytes))
        return parts, cursor, covered

    def _merged(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        request: SelectRequest,
        parts: dict[Labels, list[pa.Table]],
        drop_deleted: Callable[[Labels, pa.Table], pa.Table] | None,
        after: Labels | None,
        upper: Labels | None,
        answered: Collection[str] = (),
    ) -> Iterator[tuple[Labels, pa.Table]]:
        """Each stream of the label range (after, upper] with its flushed chunks, in label order;
        chunks whose keys are `answered` (their rows came with the ingesters' page) are not read."""
        # listed after the ingesters' page, so a chunk flushed in between is seen in one place or
        # the other; fetched one stream at a time: a select holds one stream's decoded chunks, not
        # every stream's (a 30-minute sub-query over 1M lines held ~110 MB of decoded chunks)
        refs = self.index.chunk_refs(tenant, matchers, request.start, request.end, request.shard)
        if after is not None or upper is not None:
            refs = {
                labels: chunk_refs
                for labels, chunk_refs in refs.items()
                if (after is None or after < labels) and (upper is None or not upper < labels)
            }
        if answered:
            refs = _without_keys(refs, answered)
        self.stats.store_chunks_ref += sum(len(chunk_refs) for chunk_refs in refs.values())
        fetch = FetchStats()
        line_probe = self._probe(request.line_filters, ())
        metadata_equals = _metadata_equalities(request)
        if not metadata_equals:
            # one lookup for every stream's chunks (they share the probe); streams left without a
            # chunk to read cost nothing more (a needle's select skips ~99% of them here)
            skipped = self._ruled_out(refs, request, line_probe, fetch)
            if skipped:
                refs = _without_keys(refs, skipped)
        try:
            for labels in sorted(parts.keys() | refs.keys()):
                chunk_refs = refs.get(labels, ())
                # lines left undecoded only where none is needed to drop repeats or deleted lines
                lines = not (
                    request.lines_unread and drop_deleted is None and labels not in parts and _disjoint(chunk_refs)
                )
                flushed = self._fetch_stream(labels, chunk_refs, request, fetch, line_probe, metadata_equals, lines)
                fresh = parts.pop(labels, [])
                unflushed = without_flushed_copies(flushed, fresh)
                self.stats.duplicates += sum(t.num_rows for t in fresh) - sum(t.num_rows for t in unflushed)
                tables = flushed + unflushed
                if not tables:
                    continue
                # one stored chunk alone is already in order without repeats (every chunk is
                # sort_dedupe'd when sealed or rewritten; a read keeps a range of its rows), and so
                # are chunks apart in time read in time order (as those read without lines are)
                one_chunk = (len(flushed) == 1 or not lines) and not unflushed
                merged = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
                del tables, flushed, fresh, unflushed
                if not one_chunk:
                    before = merged.num_rows
                    merged = sort_dedupe(merged)
                    self.stats.duplicates += before - merged.num_rows
                elif merged.column("ts").num_chunks > 1:
                    merged = merged.combine_chunks()  # the stream's one copy: its chunks' blocks joined
                if drop_deleted is not None:
                    merged = drop_deleted(labels, merged)
                if merged.num_rows:
                    yield labels, merged
                del merged
        finally:
            self.stats.store_bytes += fetch.blocks.unread_line_bytes
            self.stats.store_chunks_downloaded += fetch.chunks_downloaded
            self.stats.store_compressed_bytes += fetch.compressed_bytes
            self.stats.store_download_seconds += fetch.download_seconds
            _count_blocks(self.stats, fetch)

    def _fetch_stream(
        self,
        labels: Labels,
        chunk_refs: Iterable[ChunkRef],
        request: SelectRequest,
        fetch: FetchStats,
        line_probe: BlockProbe | None,
        metadata_equals: tuple[tuple[str, str], ...],
        lines: bool = True,
    ) -> list[pa.Table]:
        """One stream's entries in the store's chunks overlapping the request, in seal order (in
        time order without `lines`: chunks apart in time, read with empty lines)."""
        chunk_refs = list(chunk_refs)
        if not chunk_refs:
            return []
        probe, skipped = line_probe, frozenset[str]()
        if metadata_equals:  # this stream's own probe: see _metadata_not_in
            probe = self._probe(request.line_filters, _metadata_not_in(labels, metadata_equals))
            skipped = self._ruled_out({labels: chunk_refs}, request, probe, fetch)
        may_match = probe.may_match if probe is not None else None
        flushed: list[pa.Table] = []
        order = _seal_order if lines else _time_order
        for ref in sorted(chunk_refs, key=order):
            if ref.key in skipped:
                continue
            self.guard.check()  # every chunk: a select of thousands stops within one fetch
            table = self.chunks.fetch(ref, request.start, request.end, fetch, may_match, lines)
            if table.num_rows:
                self.stats.store_lines += table.num_rows
                self.stats.store_bytes += _line_bytes(table)
                table = apply_line_filters(table, request.line_filters)
                if table.num_rows:
                    flushed.append(table)
        return flushed

    def _probe(self, line_filters: tuple, metadata_equals: tuple[tuple[str, str], ...]) -> BlockProbe | None:
        """The token-index probe of these filters, one object per sub-query: the chunk store keeps
        its lookup over all known chunks for the same probe object (the query's time windows)."""
        key = (line_filters, metadata_equals)
        try:
            return self._probes[key]
        except KeyError:
            probe = self._probes[key] = block_probe(line_filters, metadata_equals)
            return probe
        except TypeError:  # a filter that does not hash: no reuse
            return block_probe(line_filters, metadata_equals)

    def _ruled_out(
        self, refs: dict[Labels, list[ChunkRef]], request: SelectRequest, probe: BlockProbe | None, fetch: FetchStats
    ) -> frozenset[str]:
        """Keys of chunks whose known layouts show no block in the request's range can hold a line
        the probe wants: they are not fetched (chunks not read before are, and then become known)."""
        if probe is None or not refs:
            return frozenset()
        every = [ref for chunk_refs in refs.values() for ref in chunk_refs]
        out = self.chunks.ruled_out(every, request.start, request.end, probe, fetch)
        return frozenset(every[i].key for i in np.flatnonzero(out).tolist())

    def lines_read(self) -> int:
        """Lines read so far, before line filters: the ingesters' scans and the store's decoded
        chunks (chunks the token index ruled out are neither)."""
        return self.stats.ingester_lines + self.stats.store_lines

    def _count_ingester_scan(self, scan: IngesterScan) -> None:
        stats = self.stats
        stats.ingester_lines += scan.head_lines + scan.chunk_lines
        stats.ingester_bytes += scan.head_bytes + scan.chunk_bytes
        stats.ingester_head_lines += scan.head_lines
        stats.ingester_head_bytes += scan.head_bytes
        stats.ingester_chunks += scan.chunks

    def select_series(self, matchers: tuple[Matcher, ...], start: int, end: int) -> Iterable[Labels]:
        tenants, rest = self._tenants_for(matchers)
        out: set[Labels] = set()
        for tenant in tenants:
            self.guard.check()
            found = set(self.index.series(tenant, rest, start, end))
            self.guard.check()
            if self.ingesters is not None and self._ingesters_wanted(end):
                found.update(self.ingesters.series(tenant, rest, start, end))
            found = {labels for labels in found if labels_match(labels, rest)}
            out.update(with_tenant_label(labels, tenant) if self.multi else labels for labels in found)
        return sorted(out)


def _seal_order(ref: ChunkRef) -> tuple[int, int, int]:
    return ref.sealed_ns, ref.min_ts, ref.max_ts


def _time_order(ref: ChunkRef) -> tuple[int, int]:
    return ref.min_ts, ref.max_ts


def _disjoint(chunk_refs: Iterable[ChunkRef]) -> bool:
    """Do the chunks hold entries of apart time spans (so no entry of one repeats in another)?"""
    spans = sorted(_time_order(ref) for ref in chunk_refs)
    return all(earlier[1] < later[0] for earlier, later in zip(spans, spans[1:]))


def _without_keys(refs: dict[Labels, list[ChunkRef]], keys: Collection[str]) -> dict[Labels, list[ChunkRef]]:
    """The refs but those of the given chunk keys; streams left without a chunk are left out."""
    return {
        labels: kept
        for labels, chunk_refs in refs.items()
        if (kept := [ref for ref in chunk_refs if ref.key not in keys])
    }


def _metadata_equalities(request: SelectRequest) -> tuple[tuple[str, str], ...]:
    """`name="value"` filters every line must pass on its labels before any parser runs, when the
    engine hands them down (`metadata_equals` on the request); each names a stream label or a
    structured-metadata entry."""
    return tuple(getattr(request, "metadata_equals", ()))


def _metadata_not_in(labels: Labels, metadata_equals: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The equalities a stream's chunks are probed for: one on a label the stream carries is
    decided by the stream (the index only holds structured metadata), so only the others join."""
    names = {name for name, _ in labels.items}
    return tuple((name, value) for name, value in metadata_equals if name not in names)


def _count_blocks(stats: SourceStats, fetch: FetchStats) -> None:
    """Token-index counters, kept in `extra` (SourceStats is the engine's): see querier/stats.py."""
    scan = fetch.blocks
    for name, value in (
        ("index_blocks", scan.blocks),
        ("index_blocks_indexed", scan.indexed),
        ("index_blocks_skipped", scan.skipped),
        ("index_chunks_skipped", scan.chunks_skipped),
    ):
        stats.extra[name] = stats.extra.get(name, 0) + value


def _line_bytes(table: pa.Table) -> int:
    """The lines' bytes: each chunk's last offset less its first, without a pass over the lines."""
    total = 0
    for chunk in table.column("line").chunks:
        if chunk.null_count:  # a null's offsets may span bytes: count only the valid lines
            total += int(pc.sum(pc.binary_length(chunk)).as_py() or 0)
        else:
            total += line_bytes_of(chunk)
    return total


def _metadata_or_none(table: pa.Table) -> pa.Array | None:
    column = table.column("metadata").chunk(0)
    return None if column.null_count == len(column) else column


def _wait_quietly(future: Future[Any]) -> None:
    """Wait for work whose answer is no longer wanted (its error too: the reader has moved on)."""
    try:
        future.result()
    except Exception:  # noqa: BLE001 - nobody reads this answer
        return
