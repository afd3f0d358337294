"""Ray-backed adapters for the protocols components declare: the ring view and the ingester pool.

Every call to an actor goes through `svclog/actors/calls.py` (one timeout per kind of call, Ray's
errors turned into ours); the gateway routes' clients are in `service_clients.py`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import ray

from svclog.actors.calls import CALL_TIMEOUT_S, QUERY_TIMEOUT_S, Handles, acall, call, cancel_calls, remote_cause
from svclog.actors.coalesced import CoalescedCall
from svclog.actors.options import RING_NAME
from svclog.actors.push_channels import ChannelUnavailable, PushChannels, PushRejected, open_lane
from svclog.actors.read_channels import LocalReadConnector, PendingRead, ReadChannels
from svclog.distributor.quorum import QuorumTracker
from svclog.ingester.payload import encode_batch
from svclog.logql.source import IngesterScan
from svclog.model import ColumnStream, Labels, Matcher, SvcError
from svclog.querier.prefetched import IngesterRows, rows_of
from svclog.querier.volume import largest_replicas
from svclog.ring.ring import Ring

log = logging.getLogger(__name__)
PUSH_TIMEOUT_S = 30.0


class RingClient:
    """A ring actor's state (the ingester ring by default), at most `ttl` seconds old when it was handed out.

    A view older than `ttl` is still handed out while a background thread fetches the next one,
    for up to `stale_s`: the ring actor shares the backend host's process with the querier, whose
    GIL a heavy query keeps busy, and the fetch made in line every second held up the request that
    made it (each fifth of a light tenant's queries every 0.2 s, and every push meanwhile).
    Members join and leave through the ring actor, seconds apart; a view without members, or
    older than `stale_s` (the ring actor gone), is fetched in line, ActorMissing when the ring actor
    does not run. After a failed fetch the next one looks the actor up anew. `ttl` 0: always
    fetched in line."""

    def __init__(self, ttl: float = 1.0, name: str = RING_NAME, handles: Handles | None = None, stale_s: float = 10.0):
        self.ttl = ttl
        self.stale_s = max(ttl, stale_s) if ttl > 0 else 0.0
        self.name = name
        self._ring: Ring | None = None
        self._fetched = 0.0
        self._lock = threading.Lock()
        self._handles = handles or Handles()
        self._refresher = CoalescedCall(self._refresh, f"{name}-view")

    def get(self) -> Ring:
        with self._lock:
            age = time.monotonic() - self._fetched
            # an empty ring is asked again at once: the ingesters join during a start, and a push
            # right after /ready turned green must not meet the empty view cached before it
            if self._ring is None or self._ring.empty or age > self.stale_s or self.ttl <= 0:
                self._ring = Ring.from_snapshot(self.snapshot())
                self._fetched = time.monotonic()
            elif age > self.ttl:
                self._refresher.request()
            return self._ring

    def _refresh(self) -> None:
        try:
            ring = Ring.from_snapshot(self.snapshot())
        except Exception as err:  # noqa: BLE001 - the view in hand serves until stale_s
            log.debug("refreshing the %s view: %s", self.name, err)
            return
        with self._lock:
            self._ring, self._fetched = ring, time.monotonic()

    def snapshot(self) -> dict:
        """The ring actor's snapshot, uncached."""
        try:
            return call(self._handles.get(self.name).snapshot, timeout=CALL_TIMEOUT_S)
        except Exception:
            self._handles.drop(self.name)
            raise


_NOT_ASKED = object()  # an ingester the cursor does not know (joined the ring between two pages)


class IngesterPool:
    """Pusher and IngesterReader over the ingester actors named in the ring."""

    applies_line_filters = True  # ingesters apply the request's leading line filters (pushdown)
    cancellable = True  # `select` takes `on_cancel`: a cancelled query's selects are cancelled too
    pages = True  # `select` takes `after` and `page_bytes` and answers a 4th value (StoreSource pages)

    def __init__(self, ring: RingClient, replication_factor: int, channels: bool = False, local_reads: bool = False):
        """`channels`: push to the ingesters on this node over local sockets (push_channels.py);
        `local_reads`: send them small reads that way (read_channels.py)."""
        self.ring = ring
        self.rf = replication_factor
        self._handles = Handles()
        self.stragglers = Stragglers()
        self.channels = PushChannels(lambda address: open_lane(self.handle(address))) if channels else None
        self.reads = ReadChannels(LocalReadConnector(self.handle)) if local_reads else None

    def handle(self, address: str) -> Any:
        """The ingester actor's handle; ActorMissing (a ValueError) when it does not run."""
        return self._handles.get(address)

    def tail(self, address: str) -> IngesterTail:
        """The tail calls to one ingester (svclog/serve/tail_routes.py)."""
        return IngesterTail(self.handle(address))

    def push_many(self, tenant: str, assignments: dict[str, list[ColumnStream]]) -> dict[str, Exception | None]:
        """Push each member its streams; return once every stream has a quorum of replicas (or one
        cannot reach it any more). Replicas still pushing then finish in the background."""
        ring = self.ring.get()
        if self.channels is not None and len(assignments) == 1:
            [(member_id, streams)] = assignments.items()
            member = ring.members.get(member_id)
            if member is not None:
                try:
                    return {member_id: self._push_over_channel(member.address, tenant, streams)}
                except ChannelUnavailable:
                    pass  # an actor call instead
        tracker = QuorumTracker(assignments)
        pending: dict[ray.ObjectRef, str] = {}
        errors: dict[str, Exception | None] = {}
        for member_id, streams in assignments.items():
            try:
                payload = encode_batch(tenant, streams)
                pending[self.handle(ring.members[member_id].address).push_payload.remote(payload)] = member_id
            except Exception as err:  # actor missing: counts against the quorum
                errors[member_id] = err
                tracker.record(member_id, False)
        deadline = time.monotonic() + PUSH_TIMEOUT_S
        while pending and not tracker.settled:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            for ref in ready:
                member_id = pending.pop(ref)
                errors[member_id] = _outcome(ref)
                tracker.record(member_id, errors[member_id] is None)
        if pending and tracker.settled:
            self.stragglers.watch(tenant, pending)
        elif pending:  # the deadline passed without a quorum
            for member_id in pending.values():
                errors[member_id] = TimeoutError(f"no answer from ingester {member_id} within {PUSH_TIMEOUT_S:g}s")
        return errors

    def _push_over_channel(self, address: str, tenant: str, streams: list[ColumnStream]) -> Exception | None:
        """The push's outcome over the channel to `address`; ChannelUnavailable when it did not go."""
        assert self.channels is not None
        try:
            self.channels.push(address, encode_batch(tenant, streams), PUSH_TIMEOUT_S)
        except PushRejected as rejected:
            return rejected.cause
        return None

    def open_channels(self) -> None:
        """Open the channels to the ring's ingesters ahead of the first push (a start's warm-up)."""
        if self.channels is not None:
            for member in self.ring.get().members.values():
                self.channels.open(member.address)

    def close_channels(self) -> None:
        """Before the ingesters stop: later pushes use actor calls."""
        if self.channels is not None:
            self.channels.close()

    def _fan_out(self, method: str, *args, strict: bool = False, on_cancel=None, local: bool = False):
        """`method` on every (healthy) ingester. Failures are tolerated below the replication factor;
        with `strict` an ingester's own SvcError (e.g. a failed flush) is raised. `on_cancel`
        (a QueryGuard's) registers a hook that cancels the calls still running when the query is
        cancelled: a select not started yet never starts, a running one stops at its next stream."""
        return [result for _, result in self._fan_out_each(method, lambda _: args, strict, on_cancel, local)]

    def _fan_out_each(
        self,
        method: str,
        args_for: Callable[[str], tuple | None],
        strict: bool = False,
        on_cancel=None,
        local: bool = False,
    ) -> list[tuple[str, Any]]:
        """`_fan_out` with each ingester's own arguments (`args_for(address)`; None: not asked),
        answering (address, result) per ingester that answered. `local`: a small read, sent over
        the read channel of an ingester on this node when one is free (read_channels.py)."""
        ring = self.ring.get()
        members = ring.healthy_members() or list(ring.members.values())
        calls: list[tuple[str, Any, tuple]] = []
        for member in members:
            args = args_for(member.address)
            if args is None:
                continue
            try:
                calls.append((member.address, self._send(method, member.address, args, local), args))
            except Exception:
                continue
        refs = [sent for _, sent, _ in calls if not isinstance(sent, PendingRead)]
        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            cancel_calls(refs)
            for _, sent, _ in calls:
                if isinstance(sent, PendingRead):
                    sent.hang_up()

        forget = on_cancel(cancel) if on_cancel is not None else None
        results, failures = [], 0
        try:
            for address, sent, args in calls:
                try:
                    results.append((address, self._answer(method, address, sent, args, cancelled)))
                except Exception as err:
                    if strict and isinstance(remote_cause(err), SvcError):
                        raise remote_cause(err) from None
                    failures += 1
        finally:
            if forget is not None:
                forget()
        if failures and failures >= self.rf:
            raise RuntimeError(f"{failures} ingesters failed to answer; data may be incomplete")
        return results

    def _send(self, method: str, address: str, args: tuple, local: bool) -> Any:
        """The call under way: a PendingRead over a read channel, else an actor call's ref."""
        if local and self.reads is not None:
            try:
                return self.reads.send(address, method, args)
            except ChannelUnavailable:
                pass  # an actor call instead
        return getattr(self.handle(address), method).remote(*args)

    def _answer(self, method: str, address: str, sent: Any, args: tuple, cancelled: threading.Event) -> Any:
        if not isinstance(sent, PendingRead):
            return ray.get(sent, timeout=QUERY_TIMEOUT_S)
        try:
            return sent.answer(QUERY_TIMEOUT_S)
        except ChannelUnavailable:
            if cancelled.is_set():
                raise
        # the channel broke (its ingester restarted, say): the read once more as an actor call
        return ray.get(getattr(self.handle(address), method).remote(*args), timeout=QUERY_TIMEOUT_S)

    def select(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        start: int,
        end: int,
        shard: tuple[int, int] | None,
        line_filters: tuple = (),
        deadline: float | None = None,
        on_cancel=None,
        after: dict[str, Labels | None] | None = None,
        page_bytes: int = 0,
    ) -> tuple[list[tuple[Labels, pa.Table]], int, IngesterScan, dict[str, Labels | None] | None, frozenset[str]]:
        """Entries from every ingester, how many answered, what they scanned (before line filters),
        with `page_bytes` where each ingester's page ended: None once none has more, else the
        cursor to pass back as `after` for the next page (per ingester, its page's last stream;
        None for one that has sent everything and is not asked again), and the store keys of the
        flushed chunks whose retained copies they answered from (PackedStreams.covered).

        Each replica scans its own copy of a stream; as the reference (which merges every
        ingester's stats by adding them), the scans are summed, so with RF 3 a line counts 3 times."""

        cursor: dict[str, Labels | None] = dict(after or {})

        def args_for(address: str) -> tuple | None:
            if cursor.get(address, _NOT_ASKED) is None:
                return None  # this ingester has sent its last page
            own = cursor.get(address)  # an ingester new to the ring starts from the first stream
            cursor[address] = None  # finished, unless it answers that it has more (a failure: given up)
            return (tenant, matchers, start, end, shard, line_filters, deadline, own, page_bytes)

        results = self._fan_out_each("select", args_for, on_cancel=on_cancel)
        found = [item for _, packed in results for item in packed.unpack()]  # decodes packed blocks
        scan = sum((packed.scan for _, packed in results), IngesterScan())  # their entries counted by unpack
        cursor.update((address, packed.more_after) for address, packed in results)
        more = page_bytes and any(v is not None for v in cursor.values())
        # (an ingester of an earlier version names none)
        covered = frozenset().union(*(getattr(packed, "covered", ()) for _, packed in results))
        return found, len(results), scan, cursor if more else None, covered

    def series(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list[Labels]:
        return [labels for result in self._fan_out("series", tenant, matchers, start, end) for labels in result]

    def stats(self, tenant: str, matchers: tuple[Matcher, ...], start: int, end: int) -> list:
        """Per-stream (labels, entries, bytes, chunks); replicas of a stream count once (the largest)."""
        return largest_replicas(
            row for result in self._fan_out("stream_stats", tenant, matchers, start, end, local=True) for row in result
        )

    def stats_and_rows(
        self,
        tenant: str,
        matchers: tuple[Matcher, ...],
        start: int,
        end: int,
        rows_cap: int,
        rows: tuple[int, int],
        deadline: float | None = None,
        on_cancel=None,
    ) -> tuple[list, IngesterRows | None]:
        """`stats` of [start, end), and the rows a select of `rows` ([from, to)) gets from the
        ingesters when each of them holds at most `rows_cap` line bytes of it (else None: a select
        reads them later)."""
        asked: list[str] = []

        def args_for(address: str) -> tuple:
            asked.append(address)
            return (tenant, matchers, start, end, rows_cap, rows, deadline)

        results = self._fan_out_each("stats_and_rows", args_for, on_cancel=on_cancel, local=True)
        stats = largest_replicas(row for _, (found, _) in results for row in found)
        packs = [packed for _, (_, packed) in results]
        return stats, rows_of(tenant, matchers, *rows, packs, len(asked))

    def data_spans(self, tenant: str) -> list[tuple[int, int]]:
        """The time spans the tenant's entries occupy on any ingester (failures as for a select)."""
        return [span for result in self._fan_out("data_spans", tenant, local=True) for span in result]

    def call_all(self, method: str, *args) -> list:
        return self._fan_out(method, *args, strict=True)


class Stragglers:
    """Replica pushes answered after the push was acknowledged: one daemon thread waits for them
    and logs and counts failures (the quorum already holds the data)."""

    def __init__(self) -> None:
        self.failures = 0
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def watch(self, tenant: str, pending: dict) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="push-stragglers", daemon=True)
                self._thread.start()
        deadline = time.monotonic() + PUSH_TIMEOUT_S
        for ref, member_id in pending.items():
            self._queue.put((ref, tenant, member_id, deadline))

    def _run(self) -> None:
        waiting: dict = {}
        while True:
            try:
                while True:
                    ref, *rest = self._queue.get(block=not waiting)
                    waiting[ref] = rest
            except queue.Empty:
                pass
            ready = set(ray.wait(list(waiting), num_returns=len(waiting), timeout=0.5)[0])
            now = time.monotonic()
            for ref in list(waiting):
                tenant, member_id, deadline = waiting[ref]
                if ref in ready:
                    err = _outcome(ref)
                elif now > deadline:
                    err = TimeoutError(f"no answer within {PUSH_TIMEOUT_S:g}s")
                else:
                    continue
                del waiting[ref]
                if err is not None:
                    self.failures += 1
                    log.warning("push to ingester %s for tenant %s failed after quorum: %s", member_id, tenant, err)


def _outcome(ref) -> Exception | None:
    """The error of a finished push (its user-facing cause), None when it succeeded."""
    try:
        ray.get(ref, timeout=0)
    except Exception as err:  # noqa: BLE001 - any failure counts against the quorum
        cause = remote_cause(err)  # the user-facing error, e.g. a LimitError raised in an ingester
        return cause if isinstance(cause, Exception) else err
    return None


class IngesterTail:
    """The tail calls to one ingester actor (its `tail_*` methods); errors as `calls.acall` raises them."""

    def __init__(self, handle: Any):
        self.handle = handle

    async def subscribe(self, tenant: str, query: str, sub_id: str) -> None:
        await acall(self.handle.tail_subscribe, tenant, query, sub_id, timeout=CALL_TIMEOUT_S)

    async def poll(self, sub_id: str, max_wait_s: float) -> Any:
        """(entries, dropped) within max_wait_s; None when the subscription is unknown (re-subscribe)."""
        return await acall(self.handle.tail_poll, sub_id, max_wait_s, timeout=max_wait_s + CALL_TIMEOUT_S)

    async def touch(self, sub_id: str) -> bool:
        return bool(await acall(self.handle.tail_touch, sub_id, timeout=CALL_TIMEOUT_S))

    async def close(self, sub_id: str) -> None:
        await acall(self.handle.tail_close, sub_id, timeout=CALL_TIMEOUT_S)


class ServeReplicaCount:
    """Running replicas of a Serve deployment (the gateways hosting the distributor), read from
    the Serve controller at most every `ttl` seconds; the last known count (at least 1) otherwise.

    The read runs on a thread of its own: a push asks for the count (the tenant's share of a
    `global` rate limit), and when the count was read on the push's own thread, under the lock,
    the push that found it stale and every push in flight waited for `serve.status()` -- a
    controller call, every 15 s and on a fresh replica's first push."""

    def __init__(self, deployment: str = "gateway", ttl: float = 15.0, read: Callable[[str], int] | None = None):
        self.deployment = deployment
        self.ttl = ttl
        self._read = read or _running_replicas
        self._count = 1
        self._fetched = float("-inf")
        self._reading = False
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            if not self._reading and time.monotonic() - self._fetched >= self.ttl:
                self._reading = True
                threading.Thread(target=self._refresh, name="serve-replica-count", daemon=True).start()
            return self._count

    def _refresh(self) -> None:
        count = None
        try:
            count = self._read(self.deployment)
        except Exception:  # the controller is busy or gone: keep the last count
            log.debug("serve status for %s", self.deployment, exc_info=True)
        with self._lock:
            if count is not None:
                self._count = max(1, count)
            self._fetched = time.monotonic()
            self._reading = False


def _running_replicas(deployment: str) -> int:
    from ray import serve
    from ray.serve.schema import ReplicaState

    return sum(
        overview.replica_states.get(ReplicaState.RUNNING, 0)
        for app in serve.status().applications.values()
        for name, overview in app.deployments.items()
        if name == deployment
    )


def serve_deployment_states() -> dict[str, tuple[str, str]]:
    """This Serve application's deployments (the calling replica's own among them): name ->
    (status, message); {} outside a replica or while the controller is busy."""
    from ray import serve

    try:
        app_name = serve.get_replica_context().app_name
        app = serve.status().applications[app_name]
    except Exception as err:  # noqa: BLE001 - outside a replica or the controller is busy
        log.warning("serve status: %s", err)
        return {}
    return {name: (str(getattr(d.status, "value", d.status)), d.message) for name, d in app.deployments.items()}
