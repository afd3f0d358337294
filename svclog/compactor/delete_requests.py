"""Delete requests: validation, the record (with its shards) and its store in the object store.

A request asks to delete the entries of matching streams in [start, end] (milliseconds,
both inclusive, as the reference keeps them) whose line passes the query's line filters.
A request with line filters is cut into shards of at most `max_interval`; the shards share
the request id and the list shows them as one request whose status reports progress:
`received`, `<n>% Complete`, `processed`.

Storage: one JSON object per request at `compactor/deletes/<tenant>/<request_id>.json`.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import asdict, dataclass, field

from svclog.gocompat.durations import parse_go_duration
from svclog.logql import ast
from svclog.logql.parser import parse_log_query
from svclog.logql.stages.line_filter import LineFilterStage
from svclog.model import NS, SvcError, ValidationError, parse_rfc3339
from svclog.storage.objstore import ObjectStore

_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
DELETES_PREFIX = "compactor/deletes"
STATUS_RECEIVED = "received"
STATUS_PROCESSED = "processed"
MS = 1_000_000  # ns per millisecond


class DeletionDisabledError(SvcError):
    status = 403


class DeleteRequestNotFound(SvcError):
    status = 404


# ---------------------------------------------------------------- the record


@dataclass
class DeleteShard:
    seq: int
    start_ms: int
    end_ms: int
    status: str = STATUS_RECEIVED
    deleted_lines: int = 0


@dataclass
class DeleteRequest:
    request_id: str
    tenant: str
    query: str
    created_at_ms: int
    shards: list[DeleteShard] = field(default_factory=list)

    @property
    def start_ms(self) -> int:
        return min(s.start_ms for s in self.shards)

    @property
    def end_ms(self) -> int:
        return max(s.end_ms for s in self.shards)

    def status(self) -> str:
        done = sum(1 for s in self.shards if s.status == STATUS_PROCESSED)
        if done == 0:
            return STATUS_RECEIVED
        if done == len(self.shards):
            return STATUS_PROCESSED
        return f"{int(done * 100 / len(self.shards))}% Complete"

    def to_api(self) -> dict:
        """The list-response record (times as Unix seconds, with milliseconds when present).

        `user_id` is always "": the reference keeps the field in its listing but blanks it."""
        return {
            "request_id": self.request_id,
            "start_time": _seconds(self.start_ms),
            "end_time": _seconds(self.end_ms),
            "query": self.query,
            "status": self.status(),
            "created_at": _seconds(self.created_at_ms),
            "user_id": "",
        }

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> DeleteRequest:
        body = json.loads(data)
        body["shards"] = [DeleteShard(**s) for s in body.get("shards", [])]
        return cls(**body)


def _seconds(ms: int) -> int | float:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


# ---------------------------------------------------------------- validation


def parse_delete_query(query: str | None) -> ast.LogQuery:
    """A stream selector optionally followed by line filters; anything else is a ValidationError."""
    if not query:
        raise ValidationError("query not set")
    try:
        parsed = parse_log_query(query)
    except SvcError as err:
        raise ValidationError(f"invalid query expression: {err}") from err
    for stage in parsed.stages:
        if not isinstance(stage, ast.LineFilter):
            raise ValidationError("invalid query expression: only line filters are supported in delete queries")
        try:
            LineFilterStage(stage)  # validates regexes, ip() and patterns now, not at processing time
        except SvcError as err:
            raise ValidationError(f"invalid query expression: {err}") from err
    return parsed


def parse_delete_time(text: str | None, now_ms: int) -> int:
    """RFC 3339 or Unix seconds (10 digits) -> milliseconds; empty means now."""
    if not text:
        return now_ms
    try:
        return parse_rfc3339(text) // MS
    except ValidationError:
        pass
    if len(text) == 10 and text.isdigit():
        return int(text) * 1000
    raise ValidationError("require unix seconds or RFC3339 format")


_MAX_INTERVAL = re.compile(r"^(\d+(\.\d+)?(h|m|s|ms|us|µs|ns))+$")


def parse_max_interval(text: str) -> int:
    """`max_interval` (Go duration, at least 1s) -> ns."""
    try:
        value = parse_go_duration(text) if _MAX_INTERVAL.match(text) else 0
    except ValueError:
        value = 0
    if value < NS:
        raise ValidationError("invalid max_interval: valid time units are 's', 'm', 'h'")
    return value


def shard_interval(query: ast.LogQuery, start_ms: int, end_ms: int, max_interval: str | None, limit_ns: int) -> int:
    """Shard length in ms, 0 for none. Only requests with line filters are sharded."""
    if not query.stages:
        return 0
    span_ns = (end_ms - start_ms) * MS
    if max_interval:
        interval = parse_max_interval(max_interval)
        if limit_ns and interval > limit_ns:
            raise ValidationError(f"max_interval can't be greater than {limit_ns // NS}s")
        if interval > span_ns:
            raise ValidationError("max_interval can't be greater than the interval to be deleted")
    else:
        if span_ns < NS:
            raise ValidationError("difference between start time and end time must be at least one second")
        interval = min(span_ns, limit_ns) if limit_ns else span_ns
    interval_ms = max(1, interval // MS)
    return 0 if interval_ms >= end_ms - start_ms else interval_ms


def split_shards(start_ms: int, end_ms: int, interval_ms: int) -> list[DeleteShard]:
    """Shards on interval-aligned boundaries; neighbours share their boundary millisecond."""
    if interval_ms <= 0:
        return [DeleteShard(0, start_ms, end_ms)]
    shards: list[DeleteShard] = []
    boundary = start_ms - start_ms % interval_ms
    while boundary < end_ms:
        shards.append(DeleteShard(len(shards), max(start_ms, boundary), min(end_ms, boundary + interval_ms)))
        boundary += interval_ms
    return shards


def new_delete_request(
    tenant: str,
    query: str | None,
    start: str | None,
    end: str | None,
    max_interval: str | None,
    *,
    now_ms: int,
    max_interval_limit_ns: int,
) -> DeleteRequest:
    parsed = parse_delete_query(query)
    if not start:
        raise ValidationError("start time not set")
    try:
        start_ms = parse_delete_time(start, now_ms)
    except ValidationError:
        raise ValidationError("invalid start time: require unix seconds or RFC3339 format") from None
    try:
        end_ms = parse_delete_time(end, now_ms)
    except ValidationError:
        raise ValidationError("invalid end time: require unix seconds or RFC3339 format") from None
    if end_ms > now_ms:
        raise ValidationError("deletes in the future are not allowed")
    if start_ms > end_ms:
        raise ValidationError("start time can't be greater than end time")
    interval = shard_interval(parsed, start_ms, end_ms, max_interval, max_interval_limit_ns)
    return DeleteRequest(uuid.uuid4().hex[:8], tenant, query or "", now_ms, split_shards(start_ms, end_ms, interval))


# ---------------------------------------------------------------- the store


class DeleteRequestStore:
    def __init__(self, store: ObjectStore):
        self.store = store

    @staticmethod
    def key(tenant: str, request_id: str) -> str:
        return f"{DELETES_PREFIX}/{tenant}/{request_id}.json"

    def tenants(self) -> list[str]:
        return self.store.list_dirs(DELETES_PREFIX)

    @staticmethod
    def prefix(tenant: str) -> str:
        return f"{DELETES_PREFIX}/{tenant}"

    def keys(self, tenant: str) -> list[str]:
        """The keys of the tenant's stored requests (one LIST)."""
        return [k for k in self.store.list(self.prefix(tenant)) if k.endswith(".json")]

    def read(self, key: str) -> DeleteRequest:
        """One stored request by key; FileNotFoundError when it was cancelled meanwhile."""
        return DeleteRequest.from_bytes(self.store.get(key))

    def list(self, tenant: str) -> list[DeleteRequest]:
        found = []
        for key in self.keys(tenant):
            try:
                found.append(self.read(key))
            except FileNotFoundError:
                continue  # cancelled between list and read
        return sorted(found, key=lambda r: (r.created_at_ms, r.request_id))

    def get(self, tenant: str, request_id: str) -> DeleteRequest | None:
        # ids are ours (8 hex characters); anything else, a NUL or a path separator included,
        # names no request and must never reach the object store as a key (a NUL was a 503)
        if not _REQUEST_ID.fullmatch(request_id or ""):
            return None
        try:
            return DeleteRequest.from_bytes(self.store.get(self.key(tenant, request_id)))
        except FileNotFoundError:
            return None

    def put(self, request: DeleteRequest) -> None:
        self.store.put(self.key(request.tenant, request.request_id), request.to_bytes())

    def remove(self, tenant: str, request_id: str) -> None:
        self.store.delete(self.key(tenant, request_id))
