"""`GET /svc/api/v1/tail` (and aliases) over WebSocket: replay of [start, now), then live entries.

A tail session, in the gateway replica that accepted the socket:
1. validates the request (tenant, query, delay_for, limit, start) and answers 400 before
   upgrading when it is wrong;
2. subscribes the query on every ingester of the ring (one id for all of them), then
   replays the newest `limit` matching entries of [start, now) through the query
   frontend, sent oldest first; subscribing first means no entry falls between the two;
3. follows each ingester with a long-poll loop into a small bounded queue; a sender merges
   the batches (replica copies and replay overlaps dropped, `delay_for` applied) and
   writes messages. A slow client stops the pollers, so entries pile up only in the
   ingesters' bounded buffers, which record what they drop (`dropped_entries`).
On disconnect the subscriptions are closed; if the gateway dies they expire in the ingesters.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.websockets import WebSocket, WebSocketDisconnect

from svclog.config.limits import LimitsConfig
from svclog.frontend.params import range_request
from svclog.ingester.tail import DroppedEntry, MergeSettings, PollResult, TailEntry, TailMerger, tail_message
from svclog.logql.checks import empty_query_error
from svclog.logql.parser import parse_log_query
from svclog.model import NS, LimitError, ValidationError, now_ns, parse_timestamp
from svclog.querier.request import CATEGORIZE_LABELS
from svclog.serve.errors import as_svc_error, query_error_response
from svclog.serve.tail_encoding import replayed_entry, tail_encoding
from svclog.serve.tenants import Tenants

log = logging.getLogger("svclog")

MAX_DELAY_FOR_S = 5
DEFAULT_LIMIT = 100
POLL_WAIT_S = 2.0  # an idle long-poll returns after this long (entries end it at once)
QUEUE_BATCHES = 4  # poll answers waiting to be sent, per session: the gateway's memory bound
RING_REFRESH_S = 5.0  # how often a session looks for ingesters that joined or left the ring
KEEPALIVE_S = 5.0  # while the client is slow, touch the ingester subscriptions this often (they expire at 30 s)
RETRY_S = 1.0  # pause before re-subscribing to an ingester that failed or restarted
NEEDS_UPGRADE = "Bad Request\n"  # the reference's WebSocket upgrader answers a plain GET with the status text

Query = Callable[[list[str], Any], Awaitable[dict]]
Encode = Callable[[list[TailEntry], list[DroppedEntry]], dict]


@dataclass(frozen=True)
class TailRequest:
    tenant: str
    query: str
    delay_for: int  # seconds
    limit: int
    start: int  # ns


def parse_tail_request(params: Mapping[str, str], tenant: str, now: int | None = None) -> TailRequest:
    query = params.get("query")
    if not query:
        raise empty_query_error()  # the reference parses a missing query as ""
    parse_log_query(query)  # a metric query or bad syntax -> 400
    delay_for = _int_param(params, "delay_for", 0)
    if delay_for < 0:
        raise ValidationError("delay_for must not be negative")
    if delay_for > MAX_DELAY_FOR_S:
        raise ValidationError(f"delay_for can't be greater than {MAX_DELAY_FOR_S}")
    limit = _int_param(params, "limit", DEFAULT_LIMIT)
    if limit <= 0:
        raise ValidationError("limit must be a positive value")
    now = now_ns() if now is None else now
    start = parse_timestamp(params.get("start"), now - 3600 * NS)
    return TailRequest(tenant, query, delay_for, limit, start)


def _int_param(params: Mapping[str, str], name: str, default: int) -> int:
    text = params.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise ValidationError(f"invalid {name} {text!r}: must be an integer") from None


class IngesterTail(Protocol):
    """The tail calls to one ingester (svclog/actors/clients.IngesterTail)."""

    async def subscribe(self, tenant: str, query: str, sub_id: str) -> None: ...

    async def poll(self, sub_id: str, max_wait_s: float) -> PollResult | None: ...

    async def touch(self, sub_id: str) -> bool: ...

    async def close(self, sub_id: str) -> None: ...


class TailSession:
    def __init__(
        self,
        request: TailRequest,
        ingesters: Any,
        query: Query,
        encode: Encode = tail_message,
        categorize: bool = False,
    ):
        self.request = request
        self.categorize = categorize  # replay with each entry's structured metadata and parsed labels apart
        self.encode = encode  # the message shape: v1, or legacy on the deprecated paths
        self.pool = ingesters  # IngesterPool: ring snapshot and each ingester's tail client
        self.query = query
        self.sub_id = uuid.uuid4().hex
        self.merger = TailMerger(MergeSettings(delay_ns=request.delay_for * NS))
        self.queue: asyncio.Queue[PollResult] = asyncio.Queue(maxsize=QUEUE_BATCHES)
        self.followers: dict[str, tuple[IngesterTail, asyncio.Task]] = {}

    # ------------------------------------------------------------ set-up (before the upgrade)

    async def start(self) -> list[TailEntry]:
        """Subscribe everywhere, then fetch the replay (raises SvcError for a bad request)."""
        await self.sync_members()
        return await self.replay()

    async def sync_members(self) -> None:
        members = await asyncio.to_thread(self._ring_members)
        for address in [a for a in self.followers if a not in members]:
            client, task = self.followers.pop(address)
            task.cancel()
            asyncio.ensure_future(_quietly(client.close(self.sub_id)))
        new = {address: client for address, client in members.items() if address not in self.followers}
        outcomes = await asyncio.gather(
            *(c.subscribe(self.request.tenant, self.request.query, self.sub_id) for c in new.values()),
            return_exceptions=True,
        )
        for (address, client), outcome in zip(new.items(), outcomes):
            if isinstance(outcome, BaseException):
                log.warning("tail %s: subscribing on %s failed: %s", self.sub_id, address, outcome)
            task = asyncio.ensure_future(self._follow(client, subscribed=not isinstance(outcome, BaseException)))
            self.followers[address] = (client, task)

    def _ring_members(self) -> dict[str, IngesterTail]:
        ring = self.pool.ring.get()
        members = ring.healthy_members() or list(ring.members.values())
        clients = {}
        for member in members:
            with contextlib.suppress(ValueError):  # no such actor (yet): a later refresh finds it
                clients[member.address] = self.pool.tail(member.address)
        return clients

    async def replay(self) -> list[TailEntry]:
        now = now_ns()
        if self.request.start >= now:
            return []
        form = {
            "query": self.request.query,
            "start": str(self.request.start),
            "end": str(now),
            "limit": str(self.request.limit),
            "direction": "backward",
        }
        request = range_request(form, now)
        if self.categorize:
            request = replace(request, encoding_flags=(CATEGORIZE_LABELS,))
        data = await self.query([self.request.tenant], request)
        entries = [
            replayed_entry(stream["stream"], value) for stream in data.get("result", []) for value in stream["values"]
        ]
        entries.sort(key=lambda e: (e.ts, e.labels.items))
        self.merger.mark_seen(entries)
        return entries

    # ------------------------------------------------------------ streaming (after the upgrade)

    async def _follow(self, client: IngesterTail, subscribed: bool) -> None:
        while True:
            try:
                if not subscribed:
                    await client.subscribe(self.request.tenant, self.request.query, self.sub_id)
                    subscribed = True
                result = await client.poll(self.sub_id, POLL_WAIT_S)
            except Exception as err:  # noqa: BLE001 - the ingester died, restarts or failed the call
                log.info("tail %s: ingester unavailable (%s); re-subscribing", self.sub_id, type(err).__name__)
                subscribed = False
                await asyncio.sleep(RETRY_S)
                continue
            if result is None:  # expired or the ingester restarted: entries in between are lost
                subscribed = False
                continue
            if result[0] or result[1]:
                await self._put(client, result)

    async def _put(self, client: IngesterTail, result: PollResult) -> None:
        """Queue a poll answer; blocks while the client is slow (backpressure), meanwhile keeping
        the ingester's subscription alive so it records what it drops instead of expiring."""
        while True:
            try:
                await asyncio.wait_for(self.queue.put(result), timeout=KEEPALIVE_S)
                return
            except TimeoutError:
                await client.touch(self.sub_id)

    async def send_loop(self, websocket: WebSocket) -> None:
        getter: asyncio.Future | None = None
        while True:
            if getter is None:
                getter = asyncio.ensure_future(self.queue.get())
            await asyncio.wait({getter}, timeout=self.merger.seconds_to_next())
            if getter.done():
                self.merger.add(*getter.result())
                getter = None
                while not self.queue.empty():
                    self.merger.add(*self.queue.get_nowait())
            entries, dropped = self.merger.release()
            if entries or dropped:
                await websocket.send_text(_dumps(self.encode(entries, dropped)))

    async def watch_ring(self) -> None:
        while True:
            await asyncio.sleep(RING_REFRESH_S)
            try:
                await self.sync_members()
            except Exception:  # the ring actor restarts: keep following the known ingesters
                log.exception("tail %s: ring refresh", self.sub_id)

    async def close(self) -> None:
        followers = list(self.followers.values())
        self.followers.clear()
        for _, task in followers:
            task.cancel()
        await asyncio.gather(*(_quietly(client.close(self.sub_id)) for client, _ in followers))


async def _quietly(call: Awaitable[Any]) -> None:
    with contextlib.suppress(Exception):
        await call


def _dumps(message: dict) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


async def _until_disconnect(websocket: WebSocket) -> None:
    with contextlib.suppress(WebSocketDisconnect):
        while (await websocket.receive())["type"] != "websocket.disconnect":
            pass  # the client has nothing to say; its messages are ignored


async def _deny(websocket: WebSocket, err: Exception) -> None:
    """Refuse before upgrading: an HTTP error response when the server allows it, else a close."""
    if "websocket.http.response" in websocket.scope.get("extensions", {}):
        await websocket.send_denial_response(query_error_response(err))
    else:
        mapped = as_svc_error(err)  # never an internal (Ray) error's text in the close reason
        code = 1008 if mapped is not None and int(getattr(mapped, "status", 400)) < 500 else 1011
        await websocket.close(code=code, reason=str(mapped)[:120] if mapped is not None else "internal error")


class TailHandlers:
    """The tail endpoints; `ingesters` is the IngesterPool (ring snapshot and each ingester's tail
    client), `query(tenants, RangeRequest)` the replay's query. Counts this replica's open tails."""

    def __init__(
        self,
        ingesters: Any,
        query: Query,
        tenants: Tenants,
        limits_for: Callable[[str], LimitsConfig],
        max_duration_s: float = 0.0,
    ):
        self.ingesters = ingesters
        self.query = query
        self.tenants = tenants
        self.limits_for = limits_for
        self.max_duration_s = max_duration_s  # querier.tail_max_duration; 0: no limit
        self.active: dict[str, int] = {}  # open tails per tenant

    def parse(self, params: Mapping[str, str], headers: Mapping[str, str]) -> TailRequest:
        return parse_tail_request(params, self.tenants.one(headers))  # several tenants -> 400

    async def http(self, request: Request) -> Response:
        """A plain GET or POST: the same validation errors, else a 400 asking for the upgrade."""
        try:
            self.parse(request.query_params, request.headers)
        except Exception as err:  # noqa: BLE001 - typed user errors -> 4xx, anything else -> 500
            return query_error_response(err)
        return PlainTextResponse(NEEDS_UPGRADE, status_code=400)

    async def websocket(self, websocket: WebSocket) -> None:
        try:
            request = self.parse(websocket.query_params, websocket.headers)
        except Exception as err:  # noqa: BLE001
            await _deny(websocket, err)
            return
        limit = self.limits_for(request.tenant).max_concurrent_tail_requests
        count = self.active.get(request.tenant, 0) + 1
        if limit > 0 and count > limit:
            await _deny(
                websocket, LimitError(f"max concurrent tail requests limit exceeded, count > limit ({count} > {limit})")
            )
            return
        self.active[request.tenant] = count
        session: TailSession | None = None
        try:
            encode, categorize = tail_encoding(websocket.scope["path"], websocket.headers)
            session = TailSession(request, self.ingesters, self.query, encode, categorize)
            await self._serve(websocket, session, self.max_duration_s)
        finally:
            self.active[request.tenant] = self.active.get(request.tenant, 1) - 1
            if session is not None:
                await session.close()

    async def _serve(self, websocket: WebSocket, session: TailSession, max_duration_s: float) -> None:
        try:
            replayed = await session.start()
        except Exception as err:  # noqa: BLE001 - e.g. limit above max_entries_limit_per_query -> 400
            await _deny(websocket, err)
            return
        try:
            await websocket.accept()
            if replayed:
                await websocket.send_text(_dumps(session.encode(replayed, [])))
        except (WebSocketDisconnect, RuntimeError, OSError):  # the client left already
            return
        tasks = [
            asyncio.ensure_future(c)
            for c in (session.send_loop(websocket), session.watch_ring(), _until_disconnect(websocket))
        ]
        try:
            done, _ = await asyncio.wait(tasks, timeout=max_duration_s or None, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.warning("tail %s ended: %r", session.sub_id, task.exception())
            if not done or tasks[2] not in done:  # max duration reached or sending failed: we close
                with contextlib.suppress(Exception):
                    await websocket.close(code=1000)
        finally:
            for task in tasks:
                task.cancel()
