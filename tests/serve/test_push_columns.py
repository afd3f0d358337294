"""The JSON fast path (one Arrow batch per push) answers exactly as the general decoder does."""

from __future__ import annotations

import json

import pytest

from svclog.distributor.validate import ValidationLimits
from svclog.distributor.validate_columns import validate_columns
from svclog.ingester.payload import BatchStream, decode_batch, encode_batch
from svclog.model import StreamColumns, ValidationError
from svclog.serve.codecs.push import decode_push
from svclog.serve.codecs.push_columns import decode_push_columns

JSON = "application/json"
LIMIT = 1 << 20


def fast(body: bytes) -> list:
    return decode_push_columns(body, JSON, None, max_decompressed_bytes=LIMIT)


def general(body: bytes) -> list[StreamColumns]:
    return [StreamColumns.from_push(s) for s in decode_push(body, JSON, None, max_decompressed_bytes=LIMIT)]


def rows(streams: list) -> list:
    return [(s.labels, s.columns().ts, s.columns().lines, s.columns().metadata) for s in streams]


def body(streams: list) -> bytes:
    return json.dumps({"streams": streams}).encode()


def test_common_body_is_one_batch_of_zero_copy_slices():
    data = body(
        [
            {"stream": {"app": "api", "env": "prod"}, "values": [["3", 'a "quoted" line'], ["1", "b"]]},
            {"stream": {"app": "web"}, "values": [["-2", "héllo ✓"], ["9223372036854775807", ""]]},
        ]
    )
    streams = fast(data)
    assert all(isinstance(s, BatchStream) for s in streams)
    assert rows(streams) == rows(general(data))
    assert streams[0].ts_bounds() == (1, 3) and streams[1].ts_bounds() == (-2, 9223372036854775807)
    assert [s.raw_bytes() for s in streams] == [len('a "quoted" line') + 1, len("héllo ✓".encode())]
    assert not any(s.has_metadata() for s in streams)
    assert streams[1].fits_line_size(len("héllo ✓".encode())) and not streams[1].fits_line_size(8)


@pytest.mark.parametrize(
    "values",
    [
        [["0x10", "hex is not a timestamp"]],
        [["+5", "sign"]],
        [["5-", "minus at the end"]],
        [["", "empty"]],
        [["12345678901234567890", "20 digits: the general rule decides"]],
        [["9223372036854775808", "beyond int64"]],
        [[5, "a number"]],
        [["5", None]],
        [["5", "x", {"trace_id": "t"}]],
        [["5"]],
        [],
        [{"ts": "5", "line": "an object"}],
    ],
)
def test_unusual_values_answer_as_the_general_decoder(values):
    data = body([{"stream": {"app": "api"}, "values": [["1", "fine"]]}, {"stream": {"app": "x"}, "values": values}])
    try:
        expected = rows(general(data))
    except ValidationError as err:
        with pytest.raises(ValidationError, match=str(err)[:40]):
            fast(data)
        return
    assert rows(fast(data)) == expected


def test_repeated_label_sets_are_merged_by_validation():
    data = body(
        [
            {"stream": {"app": "api"}, "values": [["2", "first"]]},
            {"stream": {"app": "web"}, "values": [["1", "other"]]},
            {"stream": {"app": "api"}, "values": [["3", "second"]]},
        ]
    )
    accepted, report = validate_columns(fast(data), ValidationLimits(reject_old_samples=False), 10**19)
    assert not report.errors
    assert [(s.labels.get("app"), s.columns().ts, s.columns().lines) for s in accepted] == [
        ("api", [2, 3], ["first", "second"]),
        ("web", [1], ["other"]),
    ]


def test_too_long_line_goes_to_the_per_entry_checks():
    data = body([{"stream": {"app": "api"}, "values": [["1", "ok"], ["2", "é" * 6]]}])
    accepted, report = validate_columns(
        fast(data), ValidationLimits(max_line_size=10, reject_old_samples=False), 10**19
    )
    assert report.rejected_entries == 1 and "Max entry size '10' bytes exceeded" in report.message()
    assert [s.columns().lines for s in accepted] == [["ok"]]


def test_samples_and_wire_form_of_decoded_streams():
    values = [[str(i), f"line {i}"] for i in range(10)]
    data = body([{"stream": {"app": "a"}, "values": values[:4]}, {"stream": {"app": "b"}, "values": values[4:]}])
    streams = fast(data)
    picked = streams[1].sample(3)
    assert (picked.ts, picked.lines) == ([4, 7], ["line 4", "line 7"])
    tenant, back = decode_batch(encode_batch("t", streams))
    assert tenant == "t" and rows(back) == rows(general(data))
    # a stream decoded from the wire (no Python lines kept) samples the same rows
    again = back[1].sample(3)
    assert (again.ts, again.lines) == (picked.ts, picked.lines)
