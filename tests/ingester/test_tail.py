"""Tail subscriptions (ingester side) and the replica merge (reading side), without Ray."""

from __future__ import annotations

import threading
import time

import pytest

from svclog.ingester.ingester import Ingester, IngesterSettings
from svclog.ingester.tail import (
    DroppedEntry,
    MergeSettings,
    TailEntry,
    TailMerger,
    TailRegistry,
    TailSettings,
    tail_message,
)
from svclog.logql.engine.result import EntryLabels
from svclog.model import Labels, LimitError, ParseError, StreamColumns

APP = Labels.from_dict({"app": "api", "env": "prod"})
OTHER = Labels.from_dict({"app": "db", "env": "prod"})


def cols(labels: Labels, rows: list[tuple], metadata: list | None = None) -> StreamColumns:
    return StreamColumns(labels, [r[0] for r in rows], [r[1] for r in rows], metadata)


def drain(registry: TailRegistry, sub_id: str = "s1"):
    result = registry.poll(sub_id, 0)
    assert result is not None
    return result


# ---------------------------------------------------------------- matching and pipeline


def test_matchers_select_streams_and_tenants():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"}', "s1")
    reg.offer("acme", [cols(APP, [(1, "a"), (2, "b")]), cols(OTHER, [(3, "c")])])
    reg.offer("globex", [cols(APP, [(4, "other tenant")])])
    entries, dropped = drain(reg)
    assert [(e.labels, e.ts, e.line) for e in entries] == [(APP, 1, "a"), (APP, 2, "b")]
    assert dropped == []


def test_pipeline_filters_and_adds_parsed_labels_and_metadata():
    reg = TailRegistry()
    reg.subscribe("acme", '{env="prod"} |= "level" | logfmt | level="error"', "s1")
    reg.offer(
        "acme",
        [
            cols(
                APP,
                [(1, "level=info msg=ok"), (2, "level=error msg=boom"), (3, "no match")],
                [None, [("trace_id", "t1")], None],
            )
        ],
    )
    entries, _ = drain(reg)
    assert len(entries) == 1
    assert entries[0].ts == 2
    assert entries[0].labels.to_dict() == {
        "app": "api",
        "env": "prod",
        "level": "error",
        "msg": "boom",
        "trace_id": "t1",
    }


def test_line_format_changes_the_line():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"} | json | line_format "{{.user}}"', "s1")
    reg.offer("acme", [cols(APP, [(5, '{"user":"ann"}')])])
    entries, _ = drain(reg)
    assert [(e.line, e.labels.get("user")) for e in entries] == [("ann", "ann")]


def test_metric_query_and_bad_syntax_are_refused():
    reg = TailRegistry()
    with pytest.raises(ParseError):
        reg.subscribe("acme", 'count_over_time({app="api"}[1m])', "s1")
    with pytest.raises(ParseError):
        reg.subscribe("acme", '{app="api"', "s1")
    assert not reg.active


# ---------------------------------------------------------------- buffer, dropped, poll, lifetime


def test_bounded_buffer_records_dropped_entries():
    reg = TailRegistry(TailSettings(buffer_entries=3, max_dropped_records=2))
    reg.subscribe("acme", '{app="api"}', "s1")
    reg.offer("acme", [cols(APP, [(i, f"line {i}") for i in range(6)])])
    sub = reg._subs["s1"]
    assert sub.dropped_total == 3
    entries, dropped = drain(reg)
    assert [e.ts for e in entries] == [0, 1, 2]
    # the drop records are bounded too: the newest are kept
    assert dropped == [DroppedEntry(APP, 4), DroppedEntry(APP, 5)]
    reg.offer("acme", [cols(APP, [(9, "after a drain")])])
    entries, dropped = drain(reg)
    assert [e.ts for e in entries] == [9] and dropped == []


def test_poll_returns_at_most_max_poll_entries():
    reg = TailRegistry(TailSettings(max_poll_entries=2))
    reg.subscribe("acme", '{app="api"}', "s1")
    reg.offer("acme", [cols(APP, [(i, "x") for i in range(5)])])
    assert [e.ts for e in drain(reg)[0]] == [0, 1]
    assert [e.ts for e in drain(reg)[0]] == [2, 3]


def test_long_poll_wakes_up_when_entries_arrive():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"}', "s1")
    got = {}

    def poll():
        began = time.monotonic()
        got["result"] = reg.poll("s1", 5.0)
        got["waited"] = time.monotonic() - began

    thread = threading.Thread(target=poll)
    thread.start()
    time.sleep(0.1)
    reg.offer("acme", [cols(APP, [(1, "wake")])])
    thread.join(2)
    assert [e.line for e in got["result"][0]] == ["wake"]
    assert got["waited"] < 1.0


def test_close_wakes_a_poll_and_unknown_ids_answer_none():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"}', "s1")
    got = {}
    thread = threading.Thread(target=lambda: got.setdefault("r", reg.poll("s1", 5.0)))
    thread.start()
    time.sleep(0.1)
    assert reg.close("s1")
    thread.join(2)
    assert not thread.is_alive() and got["r"] is None
    assert reg.poll("s1", 0) is None and not reg.close("s1") and not reg.active


def test_idle_subscriptions_expire():
    now = [0.0]
    reg = TailRegistry(TailSettings(idle_timeout_s=30), clock=lambda: now[0])
    reg.subscribe("acme", '{app="api"}', "old")
    reg.subscribe("acme", '{app="api"}', "polled")
    now[0] = 20.0
    reg.poll("polled", 0)
    now[0] = 31.0
    assert reg.expire() == 1
    assert reg.poll("old", 0) is None and reg.poll("polled", 0) is not None


def test_a_touched_subscription_outlives_its_slow_reader_and_records_drops():
    now = [0.0]
    reg = TailRegistry(TailSettings(idle_timeout_s=30, buffer_entries=2), clock=lambda: now[0])
    reg.subscribe("acme", '{app="api"}', "slow")
    for step in range(1, 5):  # the reader is blocked for 80 s; its session touches every 20 s
        now[0] = step * 20.0
        reg.offer("acme", [cols(APP, [(step, f"line {step}")])])
        assert reg.touch("slow")
        assert reg.expire() == 0
    entries, dropped = reg.poll("slow", 0)
    assert [e.line for e in entries] == ["line 1", "line 2"]
    assert [d.ts for d in dropped] == [3, 4]
    assert not reg.touch("unknown")


def test_subscription_limit_and_resubscribe_with_same_id():
    reg = TailRegistry(TailSettings(max_subscriptions=1))
    reg.subscribe("acme", '{app="api"}', "s1")
    reg.subscribe("acme", '{app="db"}', "s1")  # same id: replaces
    with pytest.raises(LimitError):
        reg.subscribe("acme", '{app="api"}', "s2")
    reg.offer("acme", [cols(APP, [(1, "api")]), cols(OTHER, [(2, "db")])])
    assert [e.line for e in drain(reg)[0]] == ["db"]


def test_a_failing_pipeline_never_fails_the_push():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"}', "s1")

    class Boom:
        def process(self, batch):
            raise RuntimeError("boom")

    reg._subs["s1"].pipeline = Boom()
    reg.offer("acme", [cols(APP, [(1, "x")])])  # logged, not raised
    assert drain(reg) == ([], [])


def test_ingester_push_feeds_tails_only_when_someone_tails(tmp_path):
    class Writer:
        def put_chunks(self, tenant, chunks, writer_id):
            return []

    ing = Ingester(IngesterSettings("i0", str(tmp_path), wal_enabled=False), Writer())
    ing.push("acme", [cols(APP, [(1, "before")])])
    ing.tails.subscribe("acme", '{app="api"}', "s1")
    ing.push("acme", [cols(APP, [(2, "after")])])
    entries, _ = ing.tails.poll("s1", 0)
    assert [e.line for e in entries] == ["after"]


# ---------------------------------------------------------------- merge of replicas


def entry(ts: int, line: str, labels: Labels = APP) -> TailEntry:
    return TailEntry(labels, ts, line)


def test_merger_drops_replica_copies_and_orders_by_time():
    merger = TailMerger()
    # the same entries from two ingesters (replication factor 2), in different batches
    merger.add([entry(2, "b"), entry(1, "a")])
    merger.add([entry(1, "a"), entry(2, "b"), entry(3, "c")])
    entries, dropped = merger.release()
    assert [e.line for e in entries] == ["a", "b", "c"] and dropped == []
    assert merger.duplicates == 2
    # labels from another process (a copy, not the same object) are still the same entry
    merger.add([entry(3, "c", Labels(APP.items))])
    assert merger.release() == ([], [])


def test_merger_keeps_distinct_entries_with_equal_timestamps():
    merger = TailMerger()
    merger.add([entry(1, "a"), entry(1, "b"), entry(1, "a", OTHER)])
    assert len(merger.release()[0]) == 3


def test_merger_drops_live_copies_of_replayed_entries():
    merger = TailMerger()
    merger.mark_seen([entry(1, "replayed")])
    merger.add([entry(1, "replayed"), entry(2, "new")])
    assert [e.line for e in merger.release()[0]] == ["new"]


def test_merger_dedupe_memory_is_bounded():
    now = [0]
    merger = TailMerger(MergeSettings(dedupe_keys=3, dedupe_window_ns=100), clock=lambda: now[0])
    merger.add([entry(i, "x") for i in range(5)])
    assert len(merger._seen) == 3
    now[0] = 1000
    merger.add([entry(9, "y")])
    assert len(merger._seen) == 1


def test_merger_delay_for_holds_and_reorders():
    now = [0]
    merger = TailMerger(MergeSettings(delay_ns=2_000), clock=lambda: now[0])
    merger.add([entry(5, "late")])
    now[0] = 1_000
    merger.add([entry(3, "early")])
    assert merger.release() == ([], [])
    assert merger.seconds_to_next() == pytest.approx(1e-6)
    now[0] = 3_000
    assert [e.line for e in merger.release()[0]] == ["early", "late"]
    assert merger.seconds_to_next() is None


def test_merger_held_entries_are_bounded():
    merger = TailMerger(MergeSettings(delay_ns=10**12, max_held=2))
    merger.add([entry(1, "a")])
    merger.add([entry(2, "b")])
    merger.add([entry(3, "c")])
    assert [e.line for e in merger.release()[0]] == ["a"]  # released early, not lost


def test_merger_merges_drop_records_of_replicas():
    merger = TailMerger()
    merger.add([], [DroppedEntry(APP, 7)])
    merger.add([], [DroppedEntry(Labels(APP.items), 7), DroppedEntry(APP, 8)])
    assert merger.release()[1] == [DroppedEntry(APP, 7), DroppedEntry(APP, 8)]


def test_tail_message_shape():
    # one stream object per entry, as the reference's tail writes them, even for equal labels
    msg = tail_message([entry(1, "a"), entry(2, "b", OTHER), entry(3, "c")], [])
    assert msg == {
        "streams": [
            {"stream": {"app": "api", "env": "prod"}, "values": [["1", "a"]]},
            {"stream": {"app": "db", "env": "prod"}, "values": [["2", "b"]]},
            {"stream": {"app": "api", "env": "prod"}, "values": [["3", "c"]]},
        ]
    }
    msg = tail_message([], [DroppedEntry(APP, 9)])
    assert msg == {"streams": [], "dropped_entries": [{"labels": {"app": "api", "env": "prod"}, "timestamp": "9"}]}


def test_categorized_tail_message_keeps_stream_labels_apart():
    sm = Labels.from_dict({"trace": "t1"})
    parsed = Labels.from_dict({"msg": "text"})
    full = Labels((*APP.items, *sm.items, *parsed.items))
    entries = [
        TailEntry(APP, 1, "plain", EntryLabels(Labels(), Labels())),
        TailEntry(full, 2, "both", EntryLabels(sm, parsed)),
        TailEntry(Labels((*APP.items, *sm.items)), 3, "metadata only", EntryLabels(sm, Labels())),
    ]
    msg = tail_message(entries, [DroppedEntry(APP, 9)], flags=("categorize-labels",), categorize=True)
    assert msg == {
        "streams": [
            {"stream": APP.to_dict(), "values": [["1", "plain", {}]]},
            {
                "stream": APP.to_dict(),
                "values": [["2", "both", {"structuredMetadata": {"trace": "t1"}, "parsed": {"msg": "text"}}]],
            },
            {"stream": APP.to_dict(), "values": [["3", "metadata only", {"structuredMetadata": {"trace": "t1"}}]]},
        ],
        "dropped_entries": [{"labels": APP.to_dict(), "timestamp": "9"}],
        "encodingFlags": ["categorize-labels"],
    }
    assert list(msg) == ["streams", "dropped_entries", "encodingFlags"]  # the reference's field order
    # the same entries without the flag: all labels on the stream, no third element
    plain = tail_message(entries, [])
    assert plain["streams"][1] == {"stream": full.to_dict(), "values": [["2", "both"]]}


def test_entries_carry_metadata_and_parsed_labels_apart():
    reg = TailRegistry()
    reg.subscribe("acme", '{app="api"} | logfmt', "s1")
    reg.subscribe("acme", '{app="api"}', "s2")
    reg.offer("acme", [cols(APP, [(1, "a=1"), (2, "a=2")], [[("trace", "t1")], None])])
    (first, second), _ = drain(reg, "s1")
    assert first.entry_labels == EntryLabels(Labels.from_dict({"trace": "t1"}), Labels.from_dict({"a": "1"}))
    assert first.labels == Labels.from_dict({**APP.to_dict(), "trace": "t1", "a": "1"})
    assert second.entry_labels == EntryLabels(Labels(), Labels.from_dict({"a": "2"}))
    # without stages the reference's ingester passes the push through: plain tails show the
    # stream's labels, the metadata only in the categorized encoding
    (first, second), _ = drain(reg, "s2")
    assert first.labels == APP and first.entry_labels == EntryLabels(Labels.from_dict({"trace": "t1"}), Labels())
    assert first.all_labels() == Labels.from_dict({**APP.to_dict(), "trace": "t1"})
    assert second.labels == APP


def test_merger_knows_a_replayed_entry_however_its_labels_are_split():
    sm = EntryLabels(Labels.from_dict({"trace": "t1"}), Labels())
    merger = TailMerger()
    merger.mark_seen([TailEntry(Labels((*APP.items, ("trace", "t1"))), 1, "x")])  # a plain replay
    merger.add([TailEntry(APP, 1, "x", sm)])  # the live copy, stream labels apart
    assert merger.release() == ([], []) and merger.duplicates == 1


def test_pushes_arriving_as_arrow_batches_are_tailed_the_same():
    from svclog.ingester.payload import decode_batch, encode_batch

    reg = TailRegistry()
    reg.subscribe("acme", '{env="prod"} |= "level" | logfmt | level="error"', "s1")
    _, streams = decode_batch(
        encode_batch(
            "acme",
            [
                cols(OTHER, [(4, "level=error msg=db")]),
                cols(APP, [(1, "level=info msg=ok"), (2, "level=error msg=boom")], [None, [("trace_id", "t1")]]),
            ],
        )
    )
    reg.offer("acme", streams)
    entries, _ = drain(reg)
    assert sorted((e.ts, e.labels.to_dict()) for e in entries) == [
        (2, {"app": "api", "env": "prod", "level": "error", "msg": "boom", "trace_id": "t1"}),
        (4, {"app": "db", "env": "prod", "level": "error", "msg": "db"}),
    ]
