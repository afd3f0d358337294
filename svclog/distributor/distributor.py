"""Distributor: decode, validate and rate-limit pushes, then replicate them to ingesters by the ring."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from svclog.config.limits import LimitsConfig
from svclog.distributor.level_detection import LevelSettings, detect_levels
from svclog.distributor.quorum import quorum_size
from svclog.distributor.ratelimit import RateLimiter
from svclog.distributor.validate import ValidationLimits, ValidationReport
from svclog.distributor.validate_columns import validate_columns
from svclog.model import (
    NS,
    ColumnStream,
    Labels,
    PushStream,
    RateLimitError,
    StreamColumns,
    SvcError,
    ValidationError,
    parse_timestamp,
)
from svclog.ring.ring import Ring, RingError

MB = 1 << 20
FINGERPRINT_CACHE = 100_000  # label sets whose fingerprint is kept (the map restarts when full)


class IngestionBlocked(SvcError):
    """Pushes are blocked until a configured time (`block_ingestion_until`)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class QuorumError(SvcError):
    status = 503


class Pusher(Protocol):
    def push_many(self, tenant: str, assignments: dict[str, list[ColumnStream]]) -> dict[str, Exception | None]:
        """Send each member its streams (in parallel); the error per member, None on success.

        May return as soon as a QuorumTracker over `assignments` is settled: members not yet
        answered are left out (their pushes go on in the background)."""
        ...


@dataclass
class PreparedPush:
    """A validated, rate-limited push and where its streams go (see Distributor.prepare)."""

    tenant: str
    columns: list[ColumnStream]
    report: ValidationReport
    size: int
    placements: list[tuple[ColumnStream, list[str]]]
    assignments: dict[str, list[ColumnStream]]


@dataclass
class PushOutcome:
    lines: int = 0
    bytes: int = 0
    rejected: int = 0


class AcceptedCounts:
    """Lines and raw line bytes stored per tenant since the process started, partly accepted
    pushes included (the metrics `svc_distributor_{lines,bytes}_received` read these)."""

    def __init__(self) -> None:
        self._counts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def add(self, tenant: str, lines: int, size: int) -> None:
        with self._lock:
            old_lines, old_size = self._counts.get(tenant, (0, 0))
            self._counts[tenant] = (old_lines + lines, old_size + size)

    def snapshot(self) -> dict[str, tuple[int, int]]:
        with self._lock:
            return dict(self._counts)


ACCEPTED = AcceptedCounts()  # this process's distributors (one per gateway replica)


def validation_limits(limits: LimitsConfig) -> ValidationLimits:
    return ValidationLimits(
        max_line_size=limits.max_line_size,
        max_line_size_truncate=limits.max_line_size_truncate,
        max_label_names_per_series=limits.max_label_names_per_series,
        max_label_name_length=limits.max_label_name_length,
        max_label_value_length=limits.max_label_value_length,
        reject_old_samples=limits.reject_old_samples,
        reject_old_samples_max_age_ns=limits.reject_old_samples_max_age,
        creation_grace_period_ns=limits.creation_grace_period,
        allow_structured_metadata=limits.allow_structured_metadata,
        max_structured_metadata_size=limits.max_structured_metadata_size,
        max_structured_metadata_entries_count=limits.max_structured_metadata_entries_count,
    )


class Distributor:
    def __init__(
        self,
        *,
        ring: Callable[[], Ring],
        pusher: Pusher,
        limits_for: Callable[[str], LimitsConfig],
        replication_factor: int,
        tee: Callable[[str, list[ColumnStream]], None] | None = None,
        distributors: Callable[[], int] | None = None,
        accepted: AcceptedCounts | None = None,
    ):
        self.ring = ring
        self.pusher = pusher
        self.limits_for = limits_for
        self.rf = replication_factor
        # how many distributors share a tenant's rate under ingestion_rate_strategy: global
        self.distributors = distributors or (lambda: 1)
        self.accepted = ACCEPTED if accepted is None else accepted
        self.rate_limiter = RateLimiter()
        self.tee = tee  # best-effort copy of accepted streams (the pattern ingester)
        self._fingerprints: dict[Labels, int] = {}

    def push(self, tenant: str, streams: Sequence[ColumnStream | PushStream]) -> PushOutcome:
        """Validate decoded streams (StreamColumns or PushStreams) and replicate the accepted part.

        Partial acceptance (as the reference does): valid streams/entries are written,
        then a ValidationError lists what was refused.
        """
        prepared = self.prepare(tenant, streams)
        errors = self.pusher.push_many(tenant, prepared.assignments) if prepared.assignments else {}
        return self.complete(prepared, errors)

    def prepare(self, tenant: str, streams: Sequence[ColumnStream | PushStream]) -> PreparedPush:
        """Everything before the ingesters are called: validation, the tenant's rate limit (raises
        RateLimitError) and each accepted stream's replicas. A host with its own way of calling
        the ingesters (an event loop awaiting them) sends `assignments` and calls `complete`."""
        limits = self.limits_for(tenant)
        self._check_blocked(limits)
        given = [StreamColumns.from_push(s) if isinstance(s, PushStream) else s for s in streams]
        columns, report = validate_columns(given, validation_limits(limits), time.time_ns())
        levels = LevelSettings.from_limits(limits)
        if levels is not None:  # detected_level metadata, on lists
            columns = list(detect_levels([c.columns() for c in columns], levels))
        size = sum(c.raw_bytes() for c in columns)
        rate = self.ingestion_rate(limits)
        if not self.rate_limiter.allow(tenant, size, rate, limits.ingestion_burst_size_mb * MB):
            lines = sum(len(c) for c in columns)
            raise RateLimitError(
                f"Ingestion rate limit exceeded for user {tenant} (limit: {int(rate)} "
                f"bytes/sec) while attempting to ingest '{lines}' lines totaling '{size}' bytes, reduce log "
                f"volume or contact your Loki administrator to see if the limit can be increased"
            )
        placements = self._place(columns) if columns else []
        assignments: dict[str, list[ColumnStream]] = {}
        for stream, owners in placements:
            for owner in owners:
                assignments.setdefault(owner, []).append(stream)
        return PreparedPush(tenant, columns, report, size, placements, assignments)

    def complete(self, prepared: PreparedPush, errors: dict[str, Exception | None]) -> PushOutcome:
        """The push's answer from the ingesters' (`errors` per member, None for success): a
        QuorumError or an ingester's own error when a stream lacks its quorum, else the outcome,
        or the ValidationError naming what validation refused (the rest is stored)."""
        self._check_quorum(prepared.placements, errors)
        columns = prepared.columns
        if columns and self.tee is not None:
            try:
                self.tee(prepared.tenant, columns)
            except Exception:  # a copy for pattern mining never fails a push
                pass
        outcome = PushOutcome(sum(len(c) for c in columns), prepared.size, prepared.report.rejected_entries)
        if outcome.lines:
            self.accepted.add(prepared.tenant, outcome.lines, outcome.bytes)
        if prepared.report.errors:
            raise ValidationError(prepared.report.message())
        return outcome

    def ingestion_rate(self, limits: LimitsConfig) -> float:
        """This distributor's share of the tenant's rate (bytes/s): the whole limit with the `local`
        strategy, the limit over the distributor count with `global` (the reference's default);
        the burst is not divided, as in the reference."""
        rate: float = limits.ingestion_rate_mb * MB
        if limits.ingestion_rate_strategy == "global":
            rate /= max(1, self.distributors())
        return rate

    def _check_blocked(self, limits: LimitsConfig) -> None:
        until = limits.block_ingestion_until
        if not until:
            return
        until_ns = until if isinstance(until, int) else parse_timestamp(str(until), 0)
        if time.time_ns() < until_ns:
            status = int(limits.block_ingestion_status_code)
            message = (
                ""
                if status == 200
                else (f"ingestion blocked until {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(until_ns // NS))}")
            )
            raise IngestionBlocked(message, status)

    def _fingerprint(self, labels: Labels) -> int:
        """The stream's ring key, remembered: hashing the label string cost ~10 us per stream and push."""
        fp = self._fingerprints.get(labels)
        if fp is None:
            if len(self._fingerprints) >= FINGERPRINT_CACHE:
                self._fingerprints.clear()
            fp = self._fingerprints[labels] = labels.fingerprint()
        return fp

    def _place(self, columns: list[ColumnStream]) -> list[tuple[ColumnStream, list[str]]]:
        ring = self.ring()
        try:
            return [(c, [m.id for m in ring.replication_set(self._fingerprint(c.labels), self.rf)]) for c in columns]
        except RingError as err:
            raise QuorumError(str(err)) from err

    @staticmethod
    def _check_quorum(placements: list[tuple[ColumnStream, list[str]]], errors: dict[str, Exception | None]) -> None:
        failed = {member for member, err in errors.items() if err is not None}
        for _, owners in placements:
            ok = sum(1 for o in owners if o not in failed)
            needed = quorum_size(len(owners))
            if ok < needed:
                first = next((errors[o] for o in owners if errors.get(o) is not None), None)
                if isinstance(first, SvcError):
                    raise first
                raise QuorumError(
                    f"push to ingesters failed: {ok} of {len(owners)} replicas succeeded, {needed} needed: {first}"
                )
