"""Compactor: index compaction, chunk merging, retention and delete requests for every tenant.

One `run_once` pass per tenant: retention, then each delete shard that is past its cancel
period (committed one by one so progress shows in the list), then merging small chunks and
merging the index segments of every day that has several. Chunks that left the index are
removed from the store `retention_delete_delay` later by the sweeper.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from svclog.compactor.chunk_merge import merge_small_chunks
from svclog.compactor.chunks import ChunkIO
from svclog.compactor.delete_filter import shard_filter
from svclog.compactor.delete_processing import apply_delete
from svclog.compactor.delete_requests import (
    MS,
    STATUS_PROCESSED,
    STATUS_RECEIVED,
    DeleteRequestNotFound,
    DeleteRequestStore,
    DeletionDisabledError,
    new_delete_request,
)
from svclog.compactor.retention import apply_retention
from svclog.compactor.settings import CompactorSettings
from svclog.compactor.sweeper import schedule_chunk_deletion, sweep
from svclog.compactor.tenant_index import CommitResult, TenantIndex
from svclog.config import LimitsConfig
from svclog.gocompat.durations import format_go_duration
from svclog.model import ValidationError
from svclog.storage import schema
from svclog.storage.objstore import ObjectStore

log = logging.getLogger(__name__)


@dataclass
class RunReport:
    started_at: int = 0  # ns
    seconds: float = 0.0
    tenants: int = 0
    index_segments_written: int = 0
    index_segments_removed: int = 0
    chunks_merged: int = 0
    chunks_written_by_merge: int = 0
    retention_chunks_deleted: int = 0
    retention_chunks_trimmed: int = 0
    retention_entries_removed: int = 0
    delete_shards_processed: int = 0
    deleted_lines: int = 0
    chunks_scheduled_for_removal: int = 0
    chunks_removed: int = 0
    errors: int = 0


class Compactor:
    def __init__(
        self,
        store: ObjectStore,
        settings: CompactorSettings,
        limits_for: Callable[[str], LimitsConfig] | None = None,
        clock: Callable[[], int] = time.time_ns,
    ):
        self.store = store
        self.settings = settings
        self.limits_for = limits_for or (lambda tenant: LimitsConfig())
        self.clock = clock
        self.requests = DeleteRequestStore(store)
        self.chunks = ChunkIO(store, settings.chunk_encoding, settings.chunk_block_size)
        self.last_report: RunReport | None = None
        self._run_lock = threading.Lock()
        self._requests_lock = threading.Lock()
        self._in_progress: set[tuple[str, str, int]] = set()  # picked up by the current pass
        self._running: set[tuple[str, str, int]] = set()  # being applied right now

    # ------------------------------------------------------------ delete requests API

    def _check_deletes_enabled(self, tenant: str) -> None:
        if self.limits_for(tenant).deletion_mode == "disabled":
            raise DeletionDisabledError("deletion is not available for this tenant")

    def create_delete_request(
        self, tenant: str, query: str | None, start: str | None, end: str | None = None, max_interval: str | None = None
    ) -> str:
        self._check_deletes_enabled(tenant)
        request = new_delete_request(
            tenant,
            query,
            start,
            end,
            max_interval,
            now_ms=self.clock() // MS,
            max_interval_limit_ns=self.settings.delete_max_interval,
        )
        with self._requests_lock:
            while self.requests.get(tenant, request.request_id) is not None:
                request = new_delete_request(
                    tenant,
                    query,
                    start,
                    end,
                    max_interval,
                    now_ms=self.clock() // MS,
                    max_interval_limit_ns=self.settings.delete_max_interval,
                )
            self.requests.put(request)
        log.info(
            "delete request %s for tenant %s: %r (%d shards)", request.request_id, tenant, query, len(request.shards)
        )
        return request.request_id

    def list_delete_requests(self, tenant: str) -> list[dict]:
        self._check_deletes_enabled(tenant)
        return [request.to_api() for request in self.requests.list(tenant)]

    def cancel_delete_request(self, tenant: str, request_id: str | None, force: bool = False) -> None:
        """Cancel what is not done yet. Without `force` only an untouched request within the cancel
        period; with it also one partly done or being processed: queued shards are dropped, a shard
        being applied finishes and counts as processed, so the request is listed as processed."""
        self._check_deletes_enabled(tenant)
        with self._requests_lock:
            request = self.requests.get(tenant, request_id or "")
            if request is None:
                raise DeleteRequestNotFound("could not find delete request with given id")
            pending = [s for s in request.shards if s.status == STATUS_RECEIVED]
            picked = [s for s in pending if (tenant, request.request_id, s.seq) in self._in_progress]
            if not pending or (picked and not force):
                raise ValidationError("deletion of request which is in process or already processed is not allowed")
            if len(pending) != len(request.shards) and not force:
                raise ValidationError(
                    "Unable to cancel partially completed delete request. To force, use the ?force query parameter"
                )
            period = self.settings.delete_request_cancel_period
            if not force and request.created_at_ms * MS + period < self.clock():
                raise ValidationError(
                    f"Cancellation of delete request past the deadline of "
                    f"{format_go_duration(period)} since its creation is not allowed. "
                    f"To force, use the ?force query parameter"
                )
            for shard in pending:
                if (tenant, request.request_id, shard.seq) in self._running:
                    shard.status = STATUS_PROCESSED  # its lines may already be gone; it completes
            request.shards = [s for s in request.shards if s.status == STATUS_PROCESSED]
            if request.shards:
                self.requests.put(request)  # the processed part stays listed, as processed
            else:
                self.requests.remove(tenant, request.request_id)

    # ------------------------------------------------------------ compaction pass

    def tenants(self) -> list[str]:
        return sorted(set(self.store.list_dirs(schema.tenants_prefix())) | set(self.requests.tenants()))

    def run_once(self) -> dict:
        with self._run_lock:
            began = time.perf_counter()
            now = self.clock()
            report = RunReport(started_at=now)
            for tenant in self.tenants():
                report.tenants += 1
                try:
                    self._run_tenant(tenant, now, report)
                except Exception:
                    log.exception("compactor: tenant %s failed", tenant)
                    report.errors += 1
            swept = sweep(self.store, now, self.settings.retention_delete_delay)
            report.chunks_removed = swept.chunks_deleted
            report.seconds = time.perf_counter() - began
            self.last_report = report
            return asdict(report)

    def _commit(self, index: TenantIndex, now: int, report: RunReport) -> CommitResult:
        result = index.commit()
        report.index_segments_written += result.segments_written
        report.index_segments_removed += result.segments_removed
        if result.removed_chunks:
            schedule_chunk_deletion(self.store, index.tenant, result.removed_chunks, result.days, now)
            report.chunks_scheduled_for_removal += len(result.removed_chunks)
        return result

    def _run_tenant(self, tenant: str, now: int, report: RunReport) -> None:
        limits = self.limits_for(tenant)
        index = TenantIndex(self.store, tenant, self.settings.writer_id)
        if self.settings.retention_enabled:
            kept = apply_retention(index, self.chunks, limits, now)
            report.retention_chunks_deleted += kept.chunks_deleted
            report.retention_chunks_trimmed += kept.chunks_trimmed
            report.retention_entries_removed += kept.entries_removed
            self._commit(index, now, report)
        if limits.deletion_mode == "filter-and-delete":
            self._process_deletes(index, tenant, now, report)
        days = {d for d in index.days() if index.segment_count(d) > 1} | set(index.loaded_days())
        for day in sorted(days):
            merged, written = merge_small_chunks(index, self.chunks, day, self.settings.chunk_target_size)
            report.chunks_merged += merged
            report.chunks_written_by_merge += written
        self._commit(index, now, report)

    def _ready_shards(self, tenant: str, now: int) -> list[tuple[str, int]]:
        """(request id, shard seq) of unprocessed shards past the cancel period; marks them in progress."""
        ready = []
        with self._requests_lock:
            for request in self.requests.list(tenant):
                if request.created_at_ms * MS + self.settings.delete_request_cancel_period > now:
                    continue
                for shard in request.shards:
                    if shard.status == STATUS_RECEIVED:
                        ready.append((request.request_id, shard.seq))
                        self._in_progress.add((tenant, request.request_id, shard.seq))
        return ready

    def _process_deletes(self, index: TenantIndex, tenant: str, now: int, report: RunReport) -> None:
        ready = self._ready_shards(tenant, now)
        try:
            for request_id, seq in ready:
                shard = (tenant, request_id, seq)
                with self._requests_lock:  # a shard cancelled while queued is skipped
                    request = self.requests.get(tenant, request_id)
                    if request is None or all(s.seq != seq for s in request.shards):
                        continue
                    delete = shard_filter(request, seq)
                    self._running.add(shard)
                try:
                    lines = apply_delete(index, self.chunks, delete) if delete is not None else 0
                    self._commit(index, now, report)
                    self._mark_processed(tenant, request_id, seq, lines)
                finally:
                    with self._requests_lock:
                        self._running.discard(shard)
                report.delete_shards_processed += 1
                report.deleted_lines += lines
        finally:
            with self._requests_lock:
                for request_id, seq in ready:
                    self._in_progress.discard((tenant, request_id, seq))

    def _mark_processed(self, tenant: str, request_id: str, seq: int, lines: int) -> None:
        with self._requests_lock:
            request = self.requests.get(tenant, request_id)
            if request is None:
                return
            for shard in request.shards:
                if shard.seq == seq:
                    shard.status = STATUS_PROCESSED
                    shard.deleted_lines = lines
            self.requests.put(request)
