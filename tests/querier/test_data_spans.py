"""Querier.data_spans: where a tenant holds entries, from the ingesters and the index alike."""

from __future__ import annotations

import asyncio
import time

from svclog.model import Entry, Labels, PushStream
from tests.fuzz.harness import InProcessBackend, harness_config

S = 1_000_000_000
T0 = (time.time_ns() // S - 86400) * S  # within the accepted age


def _push(backend: InProcessBackend, tenant: str, stamps: list[int]) -> None:
    streams = [PushStream(Labels({"app": "x"}.items()), [Entry(ts, "line") for ts in stamps])]
    asyncio.run(backend.push_decoded(tenant, streams))


def test_spans_cover_flushed_and_unflushed_entries_of_the_asked_tenants(tmp_path) -> None:
    backend = InProcessBackend(harness_config(str(tmp_path)), str(tmp_path))
    _push(backend, "a", [T0, T0 + 10 * S])
    asyncio.run(backend.flush())  # now in the index only (and the ingesters' retained chunks)
    _push(backend, "a", [T0 + 5000 * S])
    _push(backend, "b", [T0 + 50_000 * S])
    querier = backend.querier
    wide = (T0 - 86400 * S, T0 + 2 * 86400 * S)
    assert querier.data_spans(["a"], *wide) == [(T0, T0 + 10 * S), (T0 + 5000 * S, T0 + 5000 * S)]
    assert querier.data_spans(["b"], *wide) == [(T0 + 50_000 * S, T0 + 50_000 * S)]
    assert querier.data_spans(["a", "b"], *wide) == [
        (T0, T0 + 10 * S),
        (T0 + 5000 * S, T0 + 5000 * S),
        (T0 + 50_000 * S, T0 + 50_000 * S),
    ]
    assert querier.data_spans(["nobody"], *wide) == []


def test_flushed_entries_are_found_once_the_ingesters_forgot_them(tmp_path) -> None:
    backend = InProcessBackend(harness_config(str(tmp_path)), str(tmp_path))
    _push(backend, "a", [T0, T0 + 10 * S])
    asyncio.run(backend.flush())
    for ing in backend.ingesters.values():
        ing.tenants.clear()  # as after the retain period: only the index knows them
    assert backend.querier.data_spans(["a"], T0 - S, T0 + S) == [(T0, T0 + 10 * S)]


def test_an_ingester_reader_that_cannot_tell_means_unknown(tmp_path) -> None:
    backend = InProcessBackend(harness_config(str(tmp_path)), str(tmp_path))

    class Silent:
        def select(self, *args, **kwargs):
            return [], 0

    backend.querier.ingesters = Silent()
    assert backend.querier.data_spans(["a"], T0, T0 + S) is None
