"""A small synchronous client for svclog's HTTP API, for scripts and Ray drivers.

    from svclog.client import Client
    client = Client("http://127.0.0.1:3100", tenant="demo")
    client.push({'{app="api"}': [(time.time_ns(), "hello")]})
    data = client.query_range('{app="api"} |= "hello"', start=time.time() - 3600, end=time.time())

Reads return the `data` of the response envelope; every failure (an error status, an
unreachable service, a malformed answer) raises ClientError. HTTP uses the standard
library; `tail` uses the `websockets` package, which ray[serve] already installs.

Times: int = Unix nanoseconds, float = Unix seconds, datetime, or a string the service
parses (RFC 3339, epoch digits). Durations (`step`, `since`): seconds as int or float,
a timedelta, or a duration string such as "30s" or "1h".
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from svclog.model import NS, Entry, Labels, PushStream, SvcError
from svclog.serve.codecs.label_parser import parse_labels
from svclog.serve.codecs.push import (
    JSON_CONTENT_TYPE,
    PROTOBUF_CONTENT_TYPE,
    encode_push_json,
    encode_push_protobuf,
)

DEFAULT_PREFIX = "/svc/api/v1"
TimeLike = int | float | str | datetime
DurationLike = int | float | str | timedelta
LabelsLike = str | Labels | Mapping[str, str] | Iterable[tuple[str, str]]
EntryLike = Entry | Sequence[Any]  # (ts, line) or (ts, line, {metadata})
StreamsLike = Mapping[Any, Iterable[EntryLike]] | Iterable[Any]


class ClientError(Exception):
    """A request failed: `status` is the HTTP status, 0 when no HTTP answer came back."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status} {message}" if status else message)
        self.status = status
        self.message = message


class Client:
    """One service address and tenant; cheap to create, safe to pass to Ray tasks (plain data)."""

    def __init__(
        self,
        url: str,
        tenant: str | Sequence[str] | None = None,
        timeout: float = 30.0,
        *,
        headers: Mapping[str, str] | None = None,
        prefix: str = DEFAULT_PREFIX,
    ):
        self.url = url.rstrip("/")
        self.tenant = tenant if tenant is None or isinstance(tenant, str) else "|".join(tenant)
        self.timeout = timeout
        self.headers = dict(headers or {})  # e.g. X-Svc-Actor-Path for query fairness
        self.prefix = "/" + prefix.strip("/")

    def __repr__(self) -> str:
        return f"Client({self.url!r}, tenant={self.tenant!r})"

    # ------------------------------------------------------------ queries

    def query(
        self, q: str, time: TimeLike | None = None, limit: int | None = None, direction: str | None = None
    ) -> dict:
        """Instant query; returns `{resultType, result, stats}`."""
        params = _params(query=q, time=_time(time), limit=limit, direction=direction)
        return self._get_data("query", params)

    def query_range(
        self,
        q: str,
        start: TimeLike | None,  # None: the server's default (an hour before end)
        end: TimeLike,
        step: DurationLike | None = None,
        limit: int | None = None,
        direction: str | None = None,
        interval: DurationLike | None = None,
    ) -> dict:
        """Range query (log or metric); returns `{resultType, result, stats}`."""
        params = _params(
            query=q,
            start=_time(start),
            end=_time(end),
            step=_duration(step),
            limit=limit,
            direction=direction,
            interval=_duration(interval),
        )
        return self._get_data("query_range", params)

    def labels(
        self,
        start: TimeLike | None = None,
        end: TimeLike | None = None,
        query: str | None = None,
        since: DurationLike | None = None,
    ) -> list[str]:
        params = _params(start=_time(start), end=_time(end), query=query, since=_duration(since))
        return self._get_data("labels", params)

    def label_values(
        self,
        name: str,
        start: TimeLike | None = None,
        end: TimeLike | None = None,
        query: str | None = None,
        since: DurationLike | None = None,
    ) -> list[str]:
        params = _params(start=_time(start), end=_time(end), query=query, since=_duration(since))
        return self._get_data(f"label/{urllib.parse.quote(name, safe='')}/values", params)

    def series(
        self, *match: str, start: TimeLike | None = None, end: TimeLike | None = None, since: DurationLike | None = None
    ) -> list[dict[str, str]]:
        """Label sets of the streams matching any selector (POSTed as a form: selectors may be long)."""
        if not match:
            raise ValueError("series needs at least one stream selector")
        params = [("match[]", m) for m in match] + _params(start=_time(start), end=_time(end), since=_duration(since))
        body = urllib.parse.urlencode(params).encode()
        status, payload = self._request(
            "POST", self._path("series"), body=body, content_type="application/x-www-form-urlencoded"
        )
        return _envelope_data(status, payload)

    # ------------------------------------------------------------ ingest

    def push(self, streams: StreamsLike, format: str = "protobuf") -> None:
        """Push entries: a list of PushStream, API-shaped `{"stream", "values"}` dicts, or a mapping
        `{labels: [(ts_ns, line[, metadata]), ...]}` whose labels are `'{app="x"}'`, a Labels or pairs."""
        batch = to_push_streams(streams)
        if format == "protobuf":
            body, content_type = encode_push_protobuf(batch), PROTOBUF_CONTENT_TYPE
        elif format == "json":
            body, content_type = encode_push_json(batch), JSON_CONTENT_TYPE
        else:
            raise ValueError(f"unknown push format {format!r} (protobuf or json)")
        status, payload = self._request("POST", self._path("push"), body=body, content_type=content_type)
        if status not in (200, 204):  # e.g. 260 while ingestion is blocked
            raise ClientError(status, _message(payload) or "push refused")

    # ------------------------------------------------------------ tail

    def tail(
        self, q: str, delay_for: int | None = None, limit: int | None = None, start: TimeLike | None = None
    ) -> Iterator[dict]:
        """Yield the tail's messages, `{"streams": [...], "dropped_entries": [...]}` (the latter only
        when entries were dropped), until the service closes the socket or the caller stops."""
        from websockets.exceptions import ConnectionClosedError, InvalidHandshake, InvalidStatus
        from websockets.sync.client import connect

        query = urllib.parse.urlencode(_params(query=q, delay_for=delay_for, limit=limit, start=_time(start)))
        url = "ws" + self.url[len("http") :] + self._path("tail") + "?" + query
        try:
            socket_ = connect(url, additional_headers=self._headers(), open_timeout=self.timeout, max_size=None)
        except InvalidStatus as err:
            body = err.response.body or b""
            raise ClientError(err.response.status_code, _message(bytes(body)) or "tail refused") from None
        except (OSError, TimeoutError, InvalidHandshake) as err:
            raise ClientError(0, f"cannot open tail at {self.url}: {err}") from None
        with socket_:
            try:
                for raw in socket_:
                    yield json.loads(raw)
            except ConnectionClosedError as err:
                raise ClientError(0, f"tail connection lost: {err}") from None

    # ------------------------------------------------------------ transport

    def _path(self, endpoint: str) -> str:
        return f"{self.prefix}/{endpoint}"

    def _headers(self) -> dict[str, str]:
        headers = {"User-Agent": "svclog-client", **self.headers}
        if self.tenant:
            headers["X-Scope-OrgID"] = self.tenant
        return headers

    def _get_data(self, endpoint: str, params: list[tuple[str, str]]) -> Any:
        path = self._path(endpoint) + ("?" + urllib.parse.urlencode(params) if params else "")
        return _envelope_data(*self._request("GET", path))

    def _request(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]:
        headers = self._headers()
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as err:
            with err:
                raise ClientError(err.code, _message(err.read()) or str(err.reason)) from None
        except TimeoutError:  # socket.timeout is TimeoutError
            raise ClientError(0, f"{method} {self.url}{path.split('?')[0]} timed out after {self.timeout}s") from None
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise ClientError(0, f"cannot reach {self.url}: {reason}") from None


# ---------------------------------------------------------------- helpers


def _params(**values: Any) -> list[tuple[str, str]]:
    return [(name, str(value)) for name, value in values.items() if value is not None]


def _time(value: TimeLike | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return str(to_ns(value))


def to_ns(value: float | datetime | str) -> int:
    """A timestamp as Unix nanoseconds (int: already ns; float: seconds; str: epoch digits)."""
    if isinstance(value, bool):
        raise TypeError("a timestamp cannot be a bool")
    if isinstance(value, datetime):  # naive datetimes are local time, as datetime.timestamp() has it
        whole = value.replace(microsecond=0).timestamp()
        return int(whole) * NS + value.microsecond * 1000
    if isinstance(value, int):
        return value
    if isinstance(value, float):  # via the shortest decimal form: 1.25 s is 1250000000 ns exactly
        return int(Decimal(repr(value)) * NS)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    raise TypeError(f"cannot use {value!r} as a timestamp (int ns, float seconds or datetime)")


def _duration(value: DurationLike | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, timedelta):
        value = value.total_seconds()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _envelope_data(status: int, payload: bytes) -> Any:
    try:
        document = json.loads(payload)
    except ValueError:
        raise ClientError(status, f"expected a JSON answer, got {payload[:200]!r}") from None
    if not isinstance(document, dict) or document.get("status") != "success" or "data" not in document:
        raise ClientError(status, _message(payload) or "unexpected answer")
    return document["data"]


def _message(payload: bytes) -> str:
    """The error text of a response body: plain text, or the `error`/`message` of a JSON body."""
    text = payload.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
    except ValueError:
        return text
    if isinstance(document, dict):
        return str(document.get("error") or document.get("message") or text)
    return text


def to_push_streams(streams: StreamsLike) -> list[PushStream]:
    """Normalise every accepted push shape into PushStream objects (raises ValueError on bad input)."""
    if isinstance(streams, Mapping):
        if "streams" in streams and isinstance(streams["streams"], list):  # a whole JSON push body
            return to_push_streams(streams["streams"])
        return [PushStream(_labels(key), [_entry(e) for e in entries]) for key, entries in streams.items()]
    out = []
    for stream in streams:
        if isinstance(stream, PushStream):
            out.append(stream)
        elif isinstance(stream, Mapping) and "stream" in stream:
            out.append(PushStream(_labels(stream["stream"]), [_entry(e) for e in stream.get("values", ())]))
        else:
            raise ValueError(f"not a stream: {stream!r} (PushStream or {{'stream': ..., 'values': ...}})")
    return out


def _labels(value: LabelsLike) -> Labels:
    if isinstance(value, Labels):
        return value
    if isinstance(value, str):
        try:
            return parse_labels(value)
        except SvcError as err:
            raise ValueError(str(err)) from None
    if isinstance(value, Mapping):
        return Labels.from_dict({str(k): str(v) for k, v in value.items()})
    return Labels((str(k), str(v)) for k, v in value)


def _entry(value: EntryLike) -> Entry:
    if isinstance(value, Entry):
        return value
    if len(value) not in (2, 3):
        raise ValueError(f"an entry is (ts, line) or (ts, line, metadata), got {value!r}")
    given: Any = value[2] if len(value) == 3 else {}  # the caller's metadata mapping
    metadata = tuple(sorted((str(k), str(v)) for k, v in given.items()))
    return Entry(to_ns(value[0]), str(value[1]), metadata)
