"""Push validation: the reference's per-stream and per-entry checks, partial acceptance, messages."""

from __future__ import annotations

from dataclasses import replace

from svclog.distributor.validate import (
    ValidationLimits,
    ValidationReport,
    validate_push,
)
from svclog.model import NS, Entry, Labels, PushStream

NOW = 1_793_494_800 * NS  # 2026-11-01T01:00:00Z
LIMITS = ValidationLimits()


def stream(labels: dict[str, str], *entries: Entry) -> PushStream:
    return PushStream(Labels.from_dict(labels), list(entries))


def entry(line: str = "line", ts: int = NOW, **metadata: str) -> Entry:
    return Entry(ts, line, tuple(metadata.items()))


def run(*streams: PushStream, **limits) -> ValidationReport:
    return validate_push(list(streams), replace(LIMITS, **limits), NOW)


def test_valid_push_is_accepted_unchanged():
    pushed = [stream({"app": "a"}, entry("x"), entry("", NOW - 1)), stream({"app": "b"}, entry("y"))]
    report = validate_push(pushed, LIMITS, NOW)
    assert report.accepted == pushed
    assert report.errors == [] and report.message() == ""
    assert (report.rejected_entries, report.rejected_bytes) == (0, 0)


def test_streams_with_equal_labels_are_merged_in_order():
    report = run(
        stream({"app": "a"}, entry("1")),
        stream({"app": "b"}, entry("2")),
        stream({"app": "a", "empty": ""}, entry("3"), entry("4")),
    )
    assert [(str(s.labels), [e.line for e in s.entries]) for s in report.accepted] == [
        ('{app="a"}', ["1", "3", "4"]),
        ('{app="b"}', ["2"]),
    ]


def test_empty_streams_are_skipped_silently_even_with_bad_labels():
    report = run(stream({}), stream({"bad-name": "x"}), stream({"app": "a"}))
    assert report.accepted == [] and report.errors == []


def test_reserved_looking_names_are_accepted():
    report = run(stream({"__tenant_id__": "spoofed", "app": "tid"}, entry()))
    assert len(report.accepted) == 1 and not report.errors


def test_missing_labels():
    report = run(stream({}, entry()), stream({"only": ""}, entry("abc")))
    assert report.errors == ["error at least one label pair is required per stream"] * 2
    assert report.message() == "2 errors like: error at least one label pair is required per stream"
    assert (report.rejected_entries, report.rejected_bytes) == (2, 7)


def test_invalid_label_name():
    report = run(stream({"foo-bar": "x", "app": "a"}, entry()))
    assert report.errors == [
        """Error parsing labels '{app="a", foo-bar="x"}' with error: invalid label name 'foo-bar'"""
    ]
    assert report.rejected_by_reason == {"invalid_labels": 1}


def test_too_many_label_names_not_counting_service_name():
    labels = {f"l{i}": "v" for i in range(3)}
    assert not run(stream({**labels, "service_name": "s"}, entry()), max_label_names_per_series=3).errors
    report = run(stream({**labels, "l3": "v"}, entry()), max_label_names_per_series=3)
    assert report.errors == ["""entry for stream '{l0="v", l1="v", l2="v", l3="v"}' has 4 label names; limit 3"""]


def test_label_name_and_value_length_in_bytes():
    assert run(stream({"abcd": "é" * 2}, entry()), max_label_name_length=4, max_label_value_length=4).errors == []
    report = run(stream({"abcde": "x"}, entry()), max_label_name_length=4)
    assert report.errors == ["""stream '{abcde="x"}' has label name too long: 'abcde'"""]
    report = run(stream({"a": "ééé"}, entry()), max_label_value_length=5)
    assert report.errors == ["""stream '{a="ééé"}' has label value too long: 'ééé'"""]
    assert report.rejected_by_reason == {"label_value_too_long": 1}


def test_timestamp_too_old_and_too_new():
    old = NOW - 7 * 24 * 3600 * NS - 1
    new = NOW + 10 * 60 * NS + 1
    edge_ok = [entry("old edge", NOW - 7 * 24 * 3600 * NS), entry("new edge", NOW + 10 * 60 * NS)]
    report = run(stream({"app": "a"}, entry("old", old), *edge_ok, entry("new", new)))
    assert [e.line for e in report.accepted[0].entries] == ["old edge", "new edge"]
    assert report.errors == [
        (
            "entry for stream '{app=\"a\"}' has timestamp too old: 2026-10-25T00:59:59Z, "
            "oldest acceptable timestamp is: 2026-10-25T01:00:00Z"
        ),
        "entry for stream '{app=\"a\"}' has timestamp too new: 2026-11-01T01:10:00Z",
    ]
    assert report.message().startswith("1 errors like: entry for stream")
    assert "; 1 errors like: " in report.message()
    assert run(stream({"app": "a"}, entry("old", 0)), reject_old_samples=False).errors == []


def test_line_too_long_counts_bytes():
    assert run(stream({"app": "a"}, entry("éé")), max_line_size=4).errors == []
    report = run(stream({"app": "a"}, entry("ééé"), entry("ok")), max_line_size=5)
    assert report.errors == [
        "Max entry size '5' bytes exceeded for stream '{app=\"a\"}' while adding an entry with length '6' bytes"
    ]
    assert [e.line for e in report.accepted[0].entries] == ["ok"]
    assert (report.rejected_entries, report.rejected_bytes) == (1, 6)
    assert run(stream({"app": "a"}, entry("x" * 10_000)), max_line_size=0).errors == []


def test_truncation_instead_of_rejection():
    report = run(
        stream({"app": "a"}, entry("abcdef"), entry("aéé"), entry("ok")), max_line_size=4, max_line_size_truncate=True
    )
    assert report.errors == []
    # Cut at 4 bytes, never inside a multi-byte character.
    assert [e.line for e in report.accepted[0].entries] == ["abcd", "aé", "ok"]
    assert report.truncated_entries == 2


def test_structured_metadata_limits():
    with_meta = entry("l", trace_id="abc")
    report = run(stream({"app": "a"}, with_meta, entry("plain")), allow_structured_metadata=False)
    assert [e.line for e in report.accepted[0].entries] == ["plain"]
    assert report.errors[0].startswith(
        "stream '{app=\"a\"}' includes structured metadata, but this feature is disallowed."
    )
    report = run(stream({"app": "a"}, with_meta), max_structured_metadata_size=10)
    assert report.errors[0].startswith(
        "stream '{app=\"a\"}' has structured metadata too large: '11' bytes, limit: '10' bytes."
    )
    report = run(stream({"app": "a"}, entry(a="1", b="2")), max_structured_metadata_entries_count=1)
    assert report.errors[0].startswith("stream '{app=\"a\"}' has too many structured metadata labels: '2', limit: '1'.")
    assert (
        run(
            stream({"app": "a"}, with_meta), max_structured_metadata_size=0, max_structured_metadata_entries_count=0
        ).errors
        == []
    )


def test_metadata_names_are_normalized():
    report = run(stream({"app": "a"}, Entry(NOW, "l", (("trace.id", "x"), ("1st", "y"), ("ok_1", "z")))))
    assert report.accepted[0].entries[0].metadata == (("trace_id", "x"), ("key_1st", "y"), ("ok_1", "z"))


def test_partial_acceptance_reports_everything():
    report = run(
        stream({"app": "good"}, entry("a"), entry("toolong!"), entry("b")),
        stream({}, entry("lost")),
        stream({"app": "other"}, entry("c")),
        max_line_size=5,
    )
    assert [(s.labels.get("app"), [e.line for e in s.entries]) for s in report.accepted] == [
        ("good", ["a", "b"]),
        ("other", ["c"]),
    ]
    assert report.rejected_entries == 2
    assert report.rejected_bytes == len("toolong!") + len("lost")
    assert report.rejected_by_reason == {"line_too_long": 1, "missing_labels": 1}
    assert report.message() == (
        "1 errors like: Max entry size '5' bytes exceeded for stream '{app=\"good\"}' while adding "
        "an entry with length '8' bytes; 1 errors like: error at least one label pair is required per stream"
    )


def test_single_error_message_is_plain():
    report = run(stream({}, entry()))
    assert report.message() == "error at least one label pair is required per stream"


def test_rejected_bytes_include_metadata():
    report = run(stream({"app": "a"}, entry("line", NOW + NS * 3600, k="vv")))
    assert (report.rejected_entries, report.rejected_bytes) == (1, 4 + 3)


def test_empty_metadata_values_are_dropped_after_validation():
    # the reference's label builder drops empty values; its limits still count them
    report = run(stream({"app": "a"}, entry("l", empty="", kept="v"), entry("m", only="")))
    assert [e.metadata for e in report.accepted[0].entries] == [(("kept", "v"),), ()]
    report = run(stream({"app": "a"}, entry("l", empty="", kept="v")), max_structured_metadata_entries_count=1)
    assert report.rejected_entries == 1


def test_replacement_characters_in_metadata_values_become_spaces():
    report = run(stream({"app": "a"}, entry("l", k="a\ufffdb")))
    assert report.accepted[0].entries[0].metadata == (("k", "a b"),)
