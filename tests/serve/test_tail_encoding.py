"""Tail message encodings: v1 and legacy, plain and with categorize-labels; the replay's entries."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

from svclog.ingester.tail import DroppedEntry, TailEntry
from svclog.logql.engine.result import EntryLabels
from svclog.model import Labels
from svclog.serve.legacy import legacy_tail_message
from svclog.serve.tail_encoding import replayed_entry, tail_encoding
from svclog.serve.tail_routes import TailRequest, TailSession

APP = Labels.from_dict({"app": "a"})
TRACE = Labels.from_dict({"trace": "t"})
CATEGORIZE = {"X-Loki-Response-Encoding-Flags": "categorize-labels"}


def test_legacy_tail_message_shape():
    other = Labels.from_dict({"app": "b"})
    entries = [
        TailEntry(APP, 1_500_000_000_000_000_001, "one"),
        TailEntry(other, 2 * 10**18, "two"),
        TailEntry(APP, 2 * 10**18, "three"),
    ]
    message = legacy_tail_message(entries, [DroppedEntry(other, 10**18)])
    # one stream per entry, as the reference sends them
    assert message == {
        "streams": [
            {"labels": '{app="a"}', "entries": [{"ts": "2017-07-14T02:40:00.000000001Z", "line": "one"}]},
            {"labels": '{app="b"}', "entries": [{"ts": "2033-05-18T03:33:20Z", "line": "two"}]},
            {"labels": '{app="a"}', "entries": [{"ts": "2033-05-18T03:33:20Z", "line": "three"}]},
        ],
        "dropped_entries": [{"Timestamp": "2001-09-09T01:46:40Z", "Labels": '{app="b"}'}],
    }
    assert legacy_tail_message([], [])["dropped_entries"] is None  # Go's nil slice


def test_legacy_tail_with_categorize_header_shows_stream_labels_only():
    with_trace = TailEntry(Labels((*APP.items, *TRACE.items)), 1, "x", EntryLabels(TRACE, Labels()))
    encode, categorize = tail_encoding("/api/prom/tail", CATEGORIZE)
    assert categorize and encode([with_trace], [])["streams"][0]["labels"] == '{app="a"}'
    encode, categorize = tail_encoding("/api/legacy/tail", {})
    assert not categorize and encode([with_trace], [])["streams"][0]["labels"] == '{app="a", trace="t"}'


def test_v1_paths_honour_either_header_name():
    entry = TailEntry(Labels((*APP.items, *TRACE.items)), 1, "x", EntryLabels(TRACE, Labels()))
    for path in ("/loki/api/v1/tail", "/svc/api/v1/tail"):
        for header in ("X-Loki-Response-Encoding-Flags", "X-Svc-Response-Encoding-Flags"):
            encode, categorize = tail_encoding(path, {header: "categorize-labels"})
            assert categorize
            assert encode([entry], []) == {
                "streams": [{"stream": {"app": "a"}, "values": [["1", "x", {"structuredMetadata": {"trace": "t"}}]]}],
                "encodingFlags": ["categorize-labels"],
            }
        encode, categorize = tail_encoding(path, {})
        assert not categorize and encode([entry], []) == {
            "streams": [{"stream": {"app": "a", "trace": "t"}, "values": [["1", "x"]]}]
        }


def test_replayed_entries_keep_categorized_labels_apart():
    assert replayed_entry({"app": "a"}, ["5", "plain"]) == TailEntry(APP, 5, "plain")
    entry = replayed_entry({"app": "a"}, ["5", "x", {"structuredMetadata": {"trace": "t"}, "parsed": {"k": "v"}}])
    assert entry == TailEntry(APP, 5, "x", EntryLabels(TRACE, Labels.from_dict({"k": "v"})))
    assert entry.all_labels() == Labels.from_dict({"app": "a", "trace": "t", "k": "v"})


def test_categorized_tail_replays_a_categorized_query():
    asked = []

    async def query(tenants, request):
        asked.append(request.encoding_flags)
        return {"result": [{"stream": {"app": "a"}, "values": [[str(request.end - 5), "hi", {"parsed": {"k": "v"}}]]}]}

    ring = SimpleNamespace(healthy_members=list, members={})
    pool = SimpleNamespace(ring=SimpleNamespace(get=lambda: ring))
    request = TailRequest("t1", '{app="a"} | logfmt', 0, 10, 1)
    encode, categorize = tail_encoding("/loki/api/v1/tail", CATEGORIZE)
    replayed = asyncio.run(TailSession(request, pool, query, encode, categorize).replay())
    assert asked == [("categorize-labels",)]
    assert encode(replayed, [])["streams"][0]["values"][0][1:] == ["hi", {"parsed": {"k": "v"}}]
    asyncio.run(TailSession(request, pool, query).replay())
    assert asked[-1] == ()


def test_a_live_categorized_tail_from_an_ingester_registry():
    """The live path without Ray: an ingester's TailRegistry behind a client that pickles every
    answer (as a Ray call does), a TailSession following it, the frame the socket would send."""
    import pickle

    from svclog.ingester.tail import TailRegistry
    from svclog.model import StreamColumns

    registry = TailRegistry()

    class Client:  # the shape of svclog.actors.clients.IngesterTail
        async def subscribe(self, tenant, query, sub_id):
            registry.subscribe(tenant, query, sub_id)

        async def poll(self, sub_id, max_wait_s):
            answer = await asyncio.to_thread(registry.poll, sub_id, min(max_wait_s, 0.2))  # a remote call
            return pickle.loads(pickle.dumps(answer))

        async def touch(self, sub_id):
            return registry.touch(sub_id)

        async def close(self, sub_id):
            registry.close(sub_id)

    member = SimpleNamespace(address="i0")
    ring = SimpleNamespace(healthy_members=lambda: [member], members={"i0": member})
    pool = SimpleNamespace(ring=SimpleNamespace(get=lambda: ring), tail=lambda address: Client())

    async def no_replay(tenants, request):
        return {"result": []}

    class Socket:
        def __init__(self):
            self.sent: list[str] = []

        async def send_text(self, text):
            self.sent.append(text)

    async def run(query: str, headers: dict) -> dict:
        encode, categorize = tail_encoding("/svc/api/v1/tail", headers)
        session = TailSession(TailRequest("t1", query, 0, 10, 1), pool, no_replay, encode, categorize)
        await session.start()
        metadata = [[("trace", "t")], None]
        registry.offer("t1", [StreamColumns(APP, [5, 6], ["k=v one", "k=w two"], metadata)])
        socket = Socket()
        sender = asyncio.ensure_future(session.send_loop(socket))
        for _ in range(100):
            if socket.sent:
                break
            await asyncio.sleep(0.05)
        sender.cancel()
        await session.close()
        return json.loads(socket.sent[0])

    frame = asyncio.run(run('{app="a"} | logfmt', CATEGORIZE))
    assert frame == {
        "streams": [
            {
                "stream": {"app": "a"},
                "values": [["5", "k=v one", {"structuredMetadata": {"trace": "t"}, "parsed": {"k": "v"}}]],
            },
            {"stream": {"app": "a"}, "values": [["6", "k=w two", {"parsed": {"k": "w"}}]]},
        ],
        "encodingFlags": ["categorize-labels"],
    }
    # a plain tail without stages: the stream's own labels, as the reference's ingester sends them
    frame = asyncio.run(run('{app="a"}', {}))
    assert frame == {
        "streams": [
            {"stream": {"app": "a"}, "values": [["5", "k=v one"]]},
            {"stream": {"app": "a"}, "values": [["6", "k=w two"]]},
        ]
    }
