"""Recorded samples -> Prometheus remote-write (protobuf WriteRequest, snappy, HTTP POST).

A batch that could not be delivered after the retries is kept (up to `backlog_limit`
samples, oldest dropped first) and sent ahead of the next batch, so a short outage of
the receiver loses nothing.
"""

from __future__ import annotations

import threading

import snappy

from svclog.model import Labels
from svclog.ruler import remote_write_pb2 as pb
from svclog.ruler.delivery import DEFAULT_POLICY, DeliveryError, RetryPolicy, post

HEADERS = {
    "Content-Type": "application/x-protobuf",
    "Content-Encoding": "snappy",
    "X-Prometheus-Remote-Write-Version": "0.1.0",
    "User-Agent": "svclog-ruler",
}

Sample = tuple[Labels, float, int]  # series labels (with __name__), value, timestamp ns


def encode_write_request(samples: list[Sample]) -> bytes:
    """Snappy-compressed WriteRequest: one series per label set, samples oldest first."""
    series: dict[Labels, list[tuple[int, float]]] = {}
    for labels, value, ts_ns in samples:
        series.setdefault(labels, []).append((ts_ns // 1_000_000, value))
    request = pb.WriteRequest()
    for labels in sorted(series):
        ts = request.timeseries.add()
        for name, text in labels.items:
            ts.labels.add(name=name, value=text)
        for ms, value in sorted(series[labels]):
            ts.samples.add(value=value, timestamp=ms)
    return snappy.compress(request.SerializeToString())


def decode_write_request(body: bytes) -> list[Sample]:
    """The inverse of encode_write_request (used by tests and debugging receivers)."""
    request = pb.WriteRequest()
    request.ParseFromString(snappy.uncompress(body))
    out: list[tuple[Labels, float, int]] = []
    for ts in request.timeseries:
        labels = Labels((label.name, label.value) for label in ts.labels)
        out.extend((labels, sample.value, sample.timestamp * 1_000_000) for sample in ts.samples)
    return out


class RemoteWriter:
    def __init__(
        self,
        url: str,
        policy: RetryPolicy = DEFAULT_POLICY,
        headers: dict[str, str] | None = None,
        add_org_id_header: bool = True,
        proxy_url: str = "",
        backlog_limit: int = 100_000,
    ):
        self.url = url
        self.policy = policy
        self.headers = {**HEADERS, **(headers or {})}
        self.add_org_id_header = add_org_id_header
        self.proxy_url = proxy_url
        self.backlog_limit = backlog_limit
        self._backlog: dict[str, list[Sample]] = {}
        self._lock = threading.Lock()

    def write(self, tenant: str, samples: list[Sample]) -> None:
        with self._lock:
            batch = self._backlog.pop(tenant, []) + list(samples)
        if not batch:
            return
        headers = dict(self.headers)
        if self.add_org_id_header:
            headers["X-Scope-OrgID"] = tenant
        try:
            post(self.url, encode_write_request(batch), headers, self.policy, self.proxy_url)
        except DeliveryError as err:
            if not err.retryable:  # the receiver refused this content: sending it again cannot help
                raise
            with self._lock:
                kept = batch + self._backlog.get(tenant, [])
                self._backlog[tenant] = kept[-self.backlog_limit :]
            raise

    def backlog(self, tenant: str) -> int:
        with self._lock:
            return len(self._backlog.get(tenant, []))


class FanoutWriter:
    """Several remote-write targets (`remote_write.clients`); each keeps its own backlog."""

    def __init__(self, writers: list[RemoteWriter]):
        self.writers = writers

    def write(self, tenant: str, samples: list[Sample]) -> None:
        errors = []
        for writer in self.writers:
            try:
                writer.write(tenant, samples)
            except DeliveryError as err:
                errors.append(str(err))
        if errors:
            raise DeliveryError("; ".join(errors))
