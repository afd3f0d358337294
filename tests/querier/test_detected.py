"""Detected fields and labels over plain sampled entries (no backend)."""

from __future__ import annotations

import pytest

from svclog.model import ParseError, ValidationError
from svclog.querier.detected import (
    SampledEntry,
    check_label_matchers,
    check_log_selector,
    detect_fields,
    detect_labels,
    entries_from_streams,
    field_type,
    field_values,
    fields_body,
    labels_body,
    parse_entry,
    query_ready_bytes,
)


def by_label(fields: list[dict]) -> dict[str, dict]:
    return {f["label"]: f for f in fields}


@pytest.mark.parametrize(
    "value, kind",
    [
        ("200", "int"),
        ("-3", "int"),
        ("+7", "int"),
        ("9223372036854775808", "float"),  # past int64: ParseInt fails, ParseFloat does not
        ("1.5", "float"),
        ("1e3", "float"),
        ("inf", "float"),
        ("0x1p-2", "float"),
        ("true", "boolean"),
        ("T", "boolean"),
        ("False", "boolean"),
        ("1", "int"),
        ("150ms", "duration"),
        ("1h30m", "duration"),
        ("-2.5s", "duration"),
        ("12KB", "bytes"),
        ("5 MiB", "bytes"),
        ("3k", "bytes"),
        ("1_000", "float"),  # Go float syntax allows digit separators; ParseInt in base 10 does not
        ("GET", "string"),
        ("", "string"),
        ("yes", "string"),
        ("1.2.3.4", "string"),
    ],
)
def test_field_types_follow_the_go_parsers_in_order(value, kind):
    assert field_type(value) == kind


@pytest.mark.parametrize(
    "value, shown",
    [
        ("12KB", "12kB"),
        ("1.5MiB", "1.6MB"),
        ("2b", "2B"),
        ("1024 KiB", "1.0MB"),
        ("GET", "GET"),
        ("200", "200"),
        ("150ms", "150ms"),
        ("1m", "1.0MB"),  # a bare "m" unit reads as megabytes, as the reference's does
    ],
)
def test_byte_values_are_rendered_for_queries(value, shown):
    assert query_ready_bytes(value) == shown


def test_json_lines_flatten_with_paths_and_rename_stream_label_keys():
    line = (
        '{"level":"info","n":3,"ok":true,"gone":null,"arr":[1,2],'
        '"user":{"id":"u1","tier":"gold"},"request":{"headers":{"User-Agent":"curl"}}}'
    )
    parsed = parse_entry(SampledEntry({"app": "api", "level": "info"}, line))
    assert parsed.parser == "json"
    assert parsed.labels == {
        "level_extracted": {"info"},
        "n": {"3"},
        "ok": {"true"},
        "user_id": {"u1"},
        "user_tier": {"gold"},
        "request_headers_User_Agent": {"curl"},
    }
    assert parsed.json_paths["user_tier"] == ["user", "tier"]
    assert parsed.json_paths["level_extracted"] == ["level"]
    assert parsed.json_paths["request_headers_User_Agent"] == ["request", "headers", "User-Agent"]


def test_json_with_trailing_text_is_still_json_and_broken_json_falls_back_to_logfmt():
    assert parse_entry(SampledEntry({}, '{"a":"b"} trailing')).parser == "json"
    broken = parse_entry(SampledEntry({}, '{"a":"b", level=warn'))
    assert broken.parser == "logfmt" and broken.labels["level"] == {"warn"}


def test_logfmt_skips_empty_values_and_malformed_pairs():
    line = 'level=info msg="hello world" empty= bare bad"x dur=5ms dur=7ms'
    parsed = parse_entry(SampledEntry({"level": "info"}, line))
    assert parsed.parser == "logfmt"
    assert parsed.labels == {"level_extracted": {"info"}, "msg": {"hello world"}, "dur": {"7ms"}}


def test_query_parsed_labels_count_and_errors_do_not():
    entry = SampledEntry(
        {"app": "db", "level": "x"},
        "plain words here",
        parsed={"level": "warn", "code": "E1", "__error__": "LogfmtParserErr"},
    )
    parsed = parse_entry(entry)
    # `level` was made by the query, so it is no stream label for this entry: no `_extracted`
    assert parsed.labels == {"level": {"warn"}, "code": {"E1"}}


def test_detect_fields_types_parsers_paths_and_cardinality():
    entries = [
        SampledEntry({"app": "a"}, '{"status":200,"user":{"tier":"gold"},"latency":"1.5"}', {"trace": "t1"}),
        SampledEntry({"app": "a"}, '{"status":404,"user":{"tier":"free"},"latency":"2"}', {"trace": "t2"}),
        SampledEntry({"app": "b"}, "status=500 size=12KB took=15ms", {"trace": "t1"}),
        SampledEntry({"app": "b"}, "no fields in this one"),
    ]
    fields = by_label(detect_fields(entries, 1000))
    assert set(fields) == {"status", "user_tier", "latency", "size", "took", "trace"}
    assert fields["trace"] == {"label": "trace", "type": "string", "cardinality": 2, "parsers": None}
    assert fields["status"] == {
        "label": "status",
        "type": "int",
        "cardinality": 3,
        "parsers": ["json", "logfmt"],
        "jsonPath": ["status"],
    }
    assert fields["user_tier"]["jsonPath"] == ["user", "tier"] and fields["user_tier"]["cardinality"] == 2
    assert fields["size"] == {"label": "size", "type": "bytes", "cardinality": 1, "parsers": ["logfmt"]}
    assert fields["took"]["type"] == "duration"
    # the type follows the entry read last ("2" after "1.5")
    assert fields["latency"]["type"] == "int"


def test_detect_fields_stops_adding_fields_at_the_limit():
    entries = [SampledEntry({}, "a=1 b=2"), SampledEntry({}, "c=3 a=4")]
    fields = by_label(detect_fields(entries, 2))
    assert set(fields) == {"a", "b"} and fields["a"]["cardinality"] == 2


def test_plain_text_has_no_fields_and_answers_an_empty_object():
    fields = detect_fields([SampledEntry({"app": "db"}, "connection established to db")], 1000)
    assert fields == [] and fields_body(fields, None, 1000) == {}
    assert fields_body([{"label": "x"}], None, 50) == {"fields": [{"label": "x"}], "limit": 50}


def test_field_values_from_metadata_and_lines_with_bytes_rendered():
    entries = [
        SampledEntry({}, "size=12KB", {"size": "3MB"}),
        SampledEntry({}, '{"size":"2 KiB"}'),
        SampledEntry({}, "other=1"),
    ]
    assert field_values(entries, "size", 100) == ["12kB", "2.0kB", "3MB"]
    assert field_values(entries, "missing", 100) == [] and fields_body([], [], 100) == {}
    assert fields_body([], ["a"], 100) == {"values": ["a"], "limit": 100}


def test_field_values_stop_after_the_entry_that_reaches_the_limit():
    entries = [SampledEntry({}, "k=a"), SampledEntry({}, "k=b"), SampledEntry({}, "k=c")]
    assert field_values(entries, "k", 2) == ["a", "b"]


def test_entries_from_categorized_streams():
    result = [
        {
            "stream": {"app": "a"},
            "values": [
                ["2", "x=1", {"structuredMetadata": {"trace": "t"}, "parsed": {"x": "1"}}],
                ["1", "plain", {}],
                ["0", "legacy"],
            ],
        }
    ]
    entries = list(entries_from_streams(result))
    assert [e.line for e in entries] == ["x=1", "plain", "legacy"]
    assert entries[0].metadata == {"trace": "t"} and entries[0].parsed == {"x": "1"}
    assert entries[1].metadata == {} and entries[2].parsed == {}


def test_detected_labels_drop_id_like_labels_but_keep_flags_and_the_always_shown():
    labels = {
        row["label"]: row["cardinality"]
        for row in detect_labels(
            {
                "app": ["api", "db", "api"],
                "request_id": ["1", "2", "3"],
                "trace": ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", "{6ba7b811-9dad-11d1-80b4-00c04fd430c8}"],
                "flag": ["0", "1"],
                "pod": ["1", "2"],
                "mixed": ["1", "x"],
                "empty": [],
            }
        )
    }
    assert labels == {"app": 2, "flag": 2, "pod": 2, "mixed": 2}
    assert labels_body([]) == {}


def test_selector_checks():
    check_label_matchers('{app="a", env=~"p.*"}')
    for query in ('{app="a"} |= "x"', '{app="a"} | json', 'rate({app="a"}[1m])'):
        with pytest.raises(ValidationError, match="only label matchers are supported"):
            check_label_matchers(query)
    check_log_selector('{app="a"} |= "x" | logfmt | status >= 400')
    with pytest.raises(ValidationError, match="only log selector is supported"):
        check_log_selector('count_over_time({app="a"}[1m])')
    with pytest.raises(ParseError):
        check_log_selector("")
