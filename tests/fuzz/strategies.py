"""Hypothesis strategies for hostile push bodies, LogQL text and query parameters.

Valid inputs are generated first and then mutated (bit flips, truncation, splices,
recompression), so most examples get past the first parser and reach the deeper layers.
Hypothesis draws a seed and a few top-level choices; the input itself is built with a
seeded `random.Random`, which keeps generation cheap enough for thousands of examples
(failures stay reproducible, but shrink less than fully structured strategies would).
"""

from __future__ import annotations

import functools
import gzip
import json
import random
import zlib
from collections.abc import Callable
from typing import Any

import snappy
from hypothesis import strategies as st

from svclog.model import Entry, Labels, PushStream
from svclog.serve.codecs import push_pb2
from svclog.serve.codecs.push import encode_push_json, encode_push_protobuf

NOW_S = 1_793_491_200  # 2026-11-01T00:00:00Z; the harness config does not reject old samples
NS = 10**9
Rnd = random.Random


def seeded(build: Callable[[Rnd], Any]) -> st.SearchStrategy[Any]:
    return st.builds(build, st.randoms(use_true_random=False))


# ---------------------------------------------------------------- text

_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz_0123456789",
    "abc XYZ 019 {}[]()\"'`\\|=~!<>,.*+-/:;@#$%^&?",
    "\u00e9\u00fc\u4e2d\u6587\U0001f600\u200b\ufeff\u0301",
    "\x00\x01\x1b\x7f\t\n\r",
]


def text(rnd: Rnd, max_size: int = 20) -> str:
    alphabet = "".join(rnd.sample(_ALPHABETS, rnd.randint(1, len(_ALPHABETS))))
    out = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, max_size)))
    if rnd.random() < 0.05:
        out += chr(rnd.choice([0xD800, 0xDFFF]))  # a lone surrogate
    return out


# ---------------------------------------------------------------- tenants

VALID_TENANTS = ["fuzz", "fuzz-b", "t_1", "a.b", "x!*'()", "fuzz|fuzz-b"]
BAD_TENANTS = ["", ".", "..", "a" * 151, "a b", "t/../x", "tenant\u00e9", "a|..", "a||b", "|", "\x7f", "%2e%2e"]


def tenant(rnd: Rnd) -> str:
    roll = rnd.random()
    if roll < 0.6:
        return rnd.choice(VALID_TENANTS)
    if roll < 0.9:
        return rnd.choice(BAD_TENANTS)
    # HTTP clients refuse header values with surrounding blanks, so the random ones have none.
    return "".join(chr(rnd.randint(0x20, 0xFF)) for _ in range(rnd.randint(1, 160))).strip(" \t") or "x"


tenants = seeded(tenant)

# ---------------------------------------------------------------- labels and entries

_NAMES = ["app", "env", "job", "level", "service_name", "__name__", "__tenant_id__", "a-b", "1x", "trace.id"]
_VALUES = ["web", "db", "", "prod", "a" * 3000]
_LINES = [
    '{"level":"error","msg":"x","n":{"m":[1,2]}}',
    "level=info msg=hi x=5ms",
    "x" * 5000,
    "\x1b[31mred\x1b[0m",
    "10.0.0.1 GET /x 200",
]


def _name(rnd: Rnd) -> str:
    return rnd.choice(_NAMES) if rnd.random() < 0.7 else text(rnd, 8)


def _value(rnd: Rnd) -> str:
    return rnd.choice(_VALUES) if rnd.random() < 0.5 else text(rnd, 30)


# Off for a shared long-running service: a stream with entries decades apart makes a flush write
# one index segment per day between them (bounded only by reject_old_samples).
EXTREME_TIMESTAMPS = True


def _timestamp(rnd: Rnd) -> int:
    if rnd.random() < 0.9 or not EXTREME_TIMESTAMPS:
        return rnd.randint(NOW_S * NS, (NOW_S + 3600) * NS)
    return rnd.choice([0, -1, 2**63 - 1, -(2**63), (NOW_S + 86400 * 365) * NS])


def _clean_push_streams(rnd: Rnd) -> list[PushStream]:
    return [
        PushStream(
            Labels({"app": rnd.choice(["web", "db", "api"]), "env": rnd.choice(["prod", "dev"])}.items()),
            [
                Entry(
                    rnd.randint(NOW_S * NS, (NOW_S + 3600) * NS),
                    rnd.choice(_LINES[:2] + _LINES[3:]),
                    (("trace_id", str(rnd.randint(0, 9))),) if rnd.random() < 0.3 else (),
                )
                for _ in range(rnd.randint(1, 5))
            ],
        )
        for _ in range(rnd.randint(1, 3))
    ]


def push_streams(rnd: Rnd) -> list[PushStream]:
    if rnd.random() < 0.35:
        return _clean_push_streams(rnd)
    out = []
    for _ in range(rnd.randint(0, 4)):
        labels = Labels({_name(rnd): _value(rnd) for _ in range(rnd.randint(0, 5))}.items())
        entries = []
        for _ in range(rnd.randint(0, 4)):
            line = rnd.choice(_LINES) if rnd.random() < 0.3 else text(rnd, 60)
            metadata = tuple({_name(rnd): text(rnd, 10) for _ in range(rnd.choice([0, 0, 1, 3]))}.items())
            entries.append(Entry(_timestamp(rnd), line, metadata))
        out.append(PushStream(labels, entries))
    return out


def _clean(value: str) -> str:
    return value.encode("utf-8", "replace").decode("utf-8")


def _without_surrogates(streams: list[PushStream]) -> list[PushStream]:
    return [
        PushStream(
            Labels((_clean(k), _clean(v)) for k, v in s.labels),
            [Entry(e.ts, _clean(e.line), tuple((_clean(k), _clean(v)) for k, v in e.metadata)) for e in s.entries],
        )
        for s in streams
    ]


# ---------------------------------------------------------------- byte mutation

_SPLICES = [b'"', b"{", b"]", b"\\u0000", b"\\ud800", b"1e999", b"null", b"\xff\xff\xff\xff\x0f", b"\x00"]


def mutate(rnd: Rnd, data: bytes) -> bytes:
    """A few random edits of `data`: flips, deletions, insertions, truncation, duplication."""
    out = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.choice(["flip", "delete", "insert", "truncate", "dup"])
        pos = rnd.randint(0, max(0, len(out) - 1))
        if op == "flip" and out:
            out[pos] ^= 1 << rnd.randint(0, 7)
        elif op == "delete" and out:
            del out[pos : pos + rnd.randint(1, 8)]
        elif op == "insert":
            out[pos:pos] = rnd.choice(_SPLICES) if rnd.random() < 0.5 else rnd.randbytes(rnd.randint(1, 8))
        elif op == "truncate":
            del out[pos:]
        elif op == "dup" and out:
            out[pos:pos] = out[: pos + 1]
    return bytes(out)


_ODD_JSON = [
    {"streams": [{"stream": {"a": "b"}, "values": [[NOW_S * NS, "numeric ts"]]}]},
    {"streams": [{"stream": {"a": 1}, "values": [[str(NOW_S * NS), "x"]]}]},
    {"streams": [{"stream": {"a": "b"}, "values": [[str(NOW_S * NS), "x", {"k": {"nested": "no"}}]]}]},
    {"streams": [{"stream": {"a": "b"}, "values": [["99999999999999999999999", "x"]]}]},
    {"streams": [{"stream": {"a": "b"}, "values": [["-9223372036854775809", "x"]]}]},
    {"streams": [{"stream": {"a": "b"}, "values": [[str(NOW_S * NS), "x", {}, "extra"]]}]},
    {"streams": [{"labels": '{a="b"}', "entries": [{"ts": "2026-11-01T00:00:00Z", "line": "legacy"}]}]},
    {"streams": [{"labels": "{a=", "entries": [{"ts": "not a time", "line": 1}]}]},
    {"streams": {"not": "a list"}},
    [],
    "streams",
    None,
    {"streams": [None, 1, "x", []]},
    {"streams": [{"stream": {}, "values": [[str(NOW_S * NS), "no labels"]]}]},
]


def _random_json(rnd: Rnd, depth: int = 0) -> Any:
    kind = rnd.randint(0, 6 if depth < 3 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return rnd.choice([True, False, 0, -1, 1e308, 2**64, "1"])
    if kind in (2, 3, 4):
        return text(rnd, 10)
    if kind == 5:
        return [_random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 3))]
    return {text(rnd, 5): _random_json(rnd, depth + 1) for _ in range(rnd.randint(0, 3))}


def _json_body(rnd: Rnd) -> bytes:
    roll = rnd.random()
    if roll < 0.6:
        document = json.loads(encode_push_json(_without_surrogates(streams := push_streams(rnd))))
        for stream, original in zip(document["streams"], streams, strict=True):  # put lone surrogates back
            stream["values"] = [
                [str(e.ts), e.line, dict(e.metadata)] if e.metadata else [str(e.ts), e.line] for e in original.entries
            ]
        ascii_only = rnd.random() < 0.5  # \ud800 escapes, or raw invalid UTF-8 bytes
        body = json.dumps(document, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
        if rnd.random() < 0.5:
            return body  # intact: it reaches validation and the ingesters
    elif roll < 0.8:
        body = json.dumps(rnd.choice(_ODD_JSON)).encode()
    else:
        body = json.dumps({"streams": [_random_json(rnd)]}).encode()
    return _mutate_keeping_time(rnd, body, _json_times) if rnd.random() < 0.5 else body


def _json_times(body: bytes) -> list[int]:
    document = json.loads(body)
    return [int(v[0]) for stream in document["streams"] for v in stream["values"]]


def _proto_times(raw: bytes) -> list[int]:
    request = push_pb2.PushRequest()
    request.ParseFromString(raw)
    return [e.timestamp.seconds * NS for stream in request.streams for e in stream.entries]


def _mutate_keeping_time(rnd: Rnd, body: bytes, times: Callable[[bytes], list[int]]) -> bytes:
    """A mutation, unless EXTREME_TIMESTAMPS is off and it still decodes to a far-off timestamp."""
    out = mutate(rnd, body)
    if EXTREME_TIMESTAMPS:
        return out
    try:
        stamps = times(out)
    except Exception:  # noqa: BLE001 - undecodable: the service refuses it, any timestamp is harmless
        return out
    return out if all(abs(t - NOW_S * NS) < 86400 * NS for t in stamps) else body


def _protobuf_body(rnd: Rnd) -> bytes:
    if rnd.random() < 0.85:
        raw = snappy.uncompress(encode_push_protobuf(_without_surrogates(push_streams(rnd))))
    else:
        request = push_pb2.PushRequest()
        stream = request.streams.add()
        stream.labels = rnd.choice([b'{app="x", bad}', b"", b"{", b'{a="\xff"}', b"{}"])
        entry = stream.entries.add()
        entry.timestamp.seconds = rnd.choice([-(2**62), 0, 2**40] if EXTREME_TIMESTAMPS else [NOW_S, 2**40])
        entry.timestamp.nanos = rnd.choice([-5, 0, 10**9])
        entry.line = b"\xff\xfe invalid utf8"
        pair = entry.structuredMetadata.add()
        pair.name = b"\xff"
        raw = request.SerializeToString()
    if rnd.random() < 0.3:
        raw = _mutate_keeping_time(rnd, raw, _proto_times)
    return snappy.compress(raw)


SNAPPY_LIE = b"\xff\xff\xff\xff\x0f" + b"\x00" * 16  # claims a 4 GiB block


@functools.cache
def bombs(size: int) -> tuple[tuple[bytes, str], ...]:
    """Small bodies that inflate to `size` bytes: gzip, zlib, raw deflate, many gzip members, a snappy lie."""
    plain = b"\0" * size
    member = gzip.compress(b"[" * (size // 4), compresslevel=9)
    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return (
        (gzip.compress(plain, compresslevel=9), "gzip"),
        (zlib.compress(plain, 9), "deflate"),
        (raw.compress(plain) + raw.flush(), "deflate"),
        (member * 5, "gzip"),
        (SNAPPY_LIE, ""),
    )


_CONTENT_TYPES = [
    "",
    "text/plain",
    "application/json; charset=utf-8",
    "application/x-protobuf;;",
    "/",
    "a/b/c",
    "application/json\u00e9",
    "multipart/form-data; boundary=x",
]
_ENCODINGS = ["gzip", "deflate", "br", "snappy", "identity", "GZIP", "x-gzip, gzip", ""]


def push_request(rnd: Rnd, bomb_size: int) -> tuple[bytes, dict[str, str]]:
    kind = rnd.choice(["json", "json", "proto", "proto", "gzip-json", "deflate-json", "random", "bomb"])
    headers: dict[str, str] = {}
    if kind == "bomb":
        body, encoding = rnd.choice(bombs(bomb_size))
        headers["Content-Type"] = rnd.choice(["application/json", "application/x-protobuf"])
        if encoding:
            headers["Content-Encoding"] = encoding
        return body, headers
    if kind == "proto":
        body = _protobuf_body(rnd)
        headers["Content-Type"] = "application/x-protobuf"
    elif kind == "random":
        body = rnd.randbytes(rnd.randint(0, 300))
    else:
        body = _json_body(rnd)
        headers["Content-Type"] = "application/json"
    if kind == "gzip-json":
        body = gzip.compress(body)
        headers["Content-Encoding"] = "gzip"
    elif kind == "deflate-json":
        body = zlib.compress(body)
        headers["Content-Encoding"] = "deflate"
    if rnd.random() < 0.1:  # the compressed bytes themselves damaged
        body = mutate(rnd, body)
    if rnd.random() < 0.12:
        headers["Content-Type"] = rnd.choice(_CONTENT_TYPES)
    if rnd.random() < 0.12:
        headers["Content-Encoding"] = rnd.choice(_ENCODINGS)
    return body, headers


def push_requests(bomb_size: int = 8 << 20) -> st.SearchStrategy[tuple[bytes, dict[str, str]]]:
    """(body, headers) for POST /push, valid, mutated or hostile, in every encoding;
    `bomb_size` should exceed the service's decompressed-body cap."""
    return seeded(lambda rnd: push_request(rnd, bomb_size))


def otlp_request(rnd: Rnd) -> tuple[bytes, dict[str, str]]:
    valid = json.dumps(
        {
            "resourceLogs": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                    "scopeLogs": [
                        {
                            "logRecords": [
                                {
                                    "timeUnixNano": str(NOW_S * NS),
                                    "body": {"stringValue": "x"},
                                    "attributes": [{"key": "k", "value": {"intValue": "5"}}],
                                }
                            ]
                        }
                    ],
                }
            ]
        }
    ).encode()
    body = rnd.choice([valid, mutate(rnd, valid), rnd.randbytes(rnd.randint(0, 200)), b"", b"{}"])
    headers = {"Content-Type": rnd.choice(["application/json", "application/x-protobuf", "text/plain", ""])}
    encoding = rnd.choice(["", "", "gzip", "deflate"])
    if encoding == "gzip" and rnd.random() < 0.8:
        body = gzip.compress(body)
    if encoding:
        headers["Content-Encoding"] = encoding
    return body, headers


otlp_requests = seeded(otlp_request)

# ---------------------------------------------------------------- LogQL

_STAGES = [
    '|= "error"',
    '!= "x"',
    '|~ "err.*"',
    '!~ "("',
    "| json",
    "| logfmt",
    '| regexp "(?P<x>\\\\w+)"',
    '| pattern "<_> <x>"',
    "| unpack",
    '| line_format "{{.app}} {{ .x | upper }}"',
    '| label_format y="{{.x}}"',
    '| level =~ "e.*"',
    "| x > 10",
    "| x > 10ms",
    "| x > 1KB",
    "| drop x",
    "| keep app",
    "| decolorize",
    '| json a="b.c", d="e[0]"',
    '|= ip("10.0.0.0/8")',
    '| line_format "{{ regexReplaceAll \\"(\\" .x \\"\\" }}"',
    '| __error__ = ""',
    '|> "<_> error"',
    '| x = ip("1.2.3.4")',
    "| logfmt --strict",
    "| json | x > 5 or y < 2",
    '| line_format "{{ .x | div 0 }}"',
    '| line_format "{{ range $i := .x }}{{ end }}"',
    "| label_format x=y",
    '| regexp "(?P<x>"',
    '| pattern "<x"',
    "| x == 1e308",
    "| x > 18446744073709551616",
]
_UNWRAPS = ["| unwrap x", "| unwrap bytes(x)", "| unwrap duration(x)", "| unwrap duration_seconds(x)"]
_RANGE_FNS = ["count_over_time", "rate", "bytes_over_time", "bytes_rate", "absent_over_time"]
_UNWRAP_FNS = [
    "sum_over_time",
    "avg_over_time",
    "max_over_time",
    "min_over_time",
    "quantile_over_time",
    "first_over_time",
    "last_over_time",
    "stddev_over_time",
    "stdvar_over_time",
    "rate_counter",
    "rate",
]
_RANGES = ["1m", "5m", "1s", "0s", "1h", "1y", "30d", "1ms", "999999999h", "1m1s"]
_MATCHER_NAMES = ["app", "env", "job", "__tenant_id__", "level", "trace_id"]
_MATCHER_VALUES = ["web", "db", ".+", "", "(", "a|b", "x.*", "\\\\", ".*", "\u00e9"]
_SNIPPETS = [
    "",
    "{}",
    '{app=""}',
    "vector(1)",
    "1+1",
    '{app=~".*"}',
    'sum(rate({app="web"}[1m])) by (app)',
    "(" * 200 + ")" * 200,
    "{" * 50,
    '{app="web"} | json | line_format "{{"',
    "sum by (",
    '{app="web"} |= `raw`',
    'count_over_time({app="web"}[5m]) / 0',
    'topk(99999999999, {app="web"})',
    'sort_desc(count_over_time({app="web"}[1m]))',
    '{app="web"} | json | __error__ != ""',
]


def selector(rnd: Rnd) -> str:
    pairs = [
        f'{rnd.choice(_MATCHER_NAMES)}{rnd.choice(["=", "!=", "=~", "!~"])}"{rnd.choice(_MATCHER_VALUES)}"'
        for _ in range(rnd.randint(1, 3))
    ]
    return "{" + ", ".join(pairs) + "}"


def log_query(rnd: Rnd) -> str:
    return " ".join([selector(rnd), *(rnd.choice(_STAGES) for _ in range(rnd.randint(0, 4)))])


def metric_query(rnd: Rnd) -> str:
    if rnd.random() < 0.5:
        fn, inner = rnd.choice(_RANGE_FNS), log_query(rnd)
    else:
        fn, inner = rnd.choice(_UNWRAP_FNS), f"{log_query(rnd)} {rnd.choice(_UNWRAPS)}"
    arg = "0.99, " if fn == "quantile_over_time" else ""
    q = f"{fn}({arg}{inner} [{rnd.choice(_RANGES)}]{rnd.choice(['', '', ' offset 5m', ' offset -1h'])})"
    if rnd.random() < 0.5:
        agg = rnd.choice(["sum", "avg", "max", "min", "count", "stddev", "topk", "bottomk", "sort", "approx_topk"])
        param = "2, " if agg in ("topk", "bottomk", "approx_topk") else ""
        q = f"{agg}{rnd.choice(['', ' by (app)', ' without (env)', ' by ()'])}({param}{q})"
    if rnd.random() < 0.4:
        op = rnd.choice(
            [
                " + ",
                " / ",
                " > ",
                " and ",
                " or ",
                " unless ",
                " % ",
                " ^ ",
                " == bool ",
                " / on(app) group_left ",
                " * ignoring(env) ",
            ]
        )
        q = f"{q}{op}{rnd.choice(['1', '0', 'vector(1)', q, '-Inf', 'NaN'])}"
    if rnd.random() < 0.3:
        q = rnd.choice(
            [
                'label_replace({q}, "dst", "$1", "app", "(.*)")',
                "sum_over_time(({q})[5m:1m])",
                "{q} > 0",
                "-{q}",
                "({q})",
                "absent({q})",
                "clamp_min({q}, 1)",
            ]
        ).replace("{q}", q)
    return q


def mutate_text(rnd: Rnd, text_: str) -> str:
    chars = list(text_)
    for _ in range(rnd.randint(1, 3)):
        pos = rnd.randint(0, len(chars))
        op = rnd.choice(["delete", "insert", "swap"])
        if op == "delete" and pos < len(chars):
            del chars[pos]
        elif op == "insert":
            chars.insert(pos, rnd.choice('{}()[]|"`=~!<>,.*+-/ \\0123456789ayz\u00e9\x00'))
        elif op == "swap" and 0 < pos < len(chars):
            chars[pos - 1], chars[pos] = chars[pos], chars[pos - 1]
    return "".join(chars)


def query_text(rnd: Rnd) -> str:
    roll = rnd.random()
    if roll < 0.3:
        return log_query(rnd)
    if roll < 0.6:
        return metric_query(rnd)
    if roll < 0.85:
        return mutate_text(rnd, rnd.choice([log_query, metric_query])(rnd))
    return rnd.choice(_SNIPPETS) if rnd.random() < 0.6 else text(rnd, 60)


def selector_text(rnd: Rnd) -> str:
    roll = rnd.random()
    return selector(rnd) if roll < 0.6 else mutate_text(rnd, selector(rnd)) if roll < 0.9 else text(rnd, 30)


logql = seeded(query_text)
selectors = seeded(selector_text)

# ---------------------------------------------------------------- parameters

_TIMES = [
    str(NOW_S * NS),
    str((NOW_S + 3600) * NS),
    str(NOW_S),
    f"{NOW_S}.5",
    "2026-11-01T00:00:00Z",
    "2026-11-01T00:00:00.123456789+01:00",
    "0",
    "-1",
    "1e30",
    "NaN",
    "inf",
    "-inf",
    "9" * 30,
    "now",
    "2026-13-45T99:99:99Z",
    "",
    " 1 ",
    str(2**63),
    str(-(2**63) - 1),
    "1.7976931348623157e308",
]
_DURATIONS = [
    "1s",
    "15",
    "0",
    "-1",
    "0.001",
    "1ms",
    "1y",
    "1h30m",
    "NaN",
    "inf",
    "1e-300",
    "1e300",
    "",
    "5m",
    "300ms",
    "1.5",
    "1ns",
    "-5m",
    "9999999999999999999h",
]
_LIMITS = ["1", "0", "-1", "100", "5001", "999999999999999999999", "1.5", "", "abc", "2"]
_DIRECTIONS = ["forward", "backward", "FORWARD", "sideways", ""]


def _maybe(rnd: Rnd, choices: list[str], text_size: int = 12) -> str | None:
    roll = rnd.random()
    if roll < 0.35:
        return None
    return rnd.choice(choices) if roll < 0.9 else text(rnd, text_size)


def _clean_query_params(rnd: Rnd, instant: bool) -> dict[str, str]:
    """Well-formed parameters and an unmutated query, so the evaluator runs (not only the parsers)."""
    query = metric_query(rnd) if instant or rnd.random() < 0.5 else log_query(rnd)
    params = {"query": query, "limit": rnd.choice(["1", "2", "100"]), "direction": rnd.choice(_DIRECTIONS[:2])}
    if instant:
        params["time"] = str((NOW_S + rnd.randint(0, 3600)) * NS)
    else:
        params.update(
            start=str(NOW_S * NS),
            end=str((NOW_S + rnd.choice([60, 600, 3600])) * NS),
            step=rnd.choice(["15", "1m", "5m", "10s"]),
        )
    return params


def query_param_set(rnd: Rnd, instant: bool) -> dict[str, str]:
    if rnd.random() < 0.5:
        return _clean_query_params(rnd, instant)
    params = {"query": query_text(rnd), "limit": _maybe(rnd, _LIMITS), "direction": _maybe(rnd, _DIRECTIONS)}
    if instant:
        params["time"] = _maybe(rnd, _TIMES)
    else:
        params.update(
            start=_maybe(rnd, _TIMES),
            end=_maybe(rnd, _TIMES),
            step=_maybe(rnd, _DURATIONS),
            interval=_maybe(rnd, _DURATIONS, 4) if rnd.random() < 0.3 else None,
            since=_maybe(rnd, _DURATIONS, 4) if rnd.random() < 0.3 else None,
        )
        if rnd.random() < 0.5:  # many ranges over the seeded data, so the evaluator does real work
            params.update(start=str(NOW_S * NS), end=str((NOW_S + 3600) * NS))
    return {k: v for k, v in params.items() if v is not None}


def query_params(*, instant: bool) -> st.SearchStrategy[dict[str, str]]:
    return seeded(lambda rnd: query_param_set(rnd, instant))


def metadata_param_set(rnd: Rnd) -> dict[str, str]:
    params = {
        "start": _maybe(rnd, _TIMES),
        "end": _maybe(rnd, _TIMES),
        "since": _maybe(rnd, _DURATIONS, 4),
        "query": selector_text(rnd) if rnd.random() < 0.7 else None,
    }
    return {k: v for k, v in params.items() if v is not None}


def metadata_params() -> st.SearchStrategy[dict[str, str]]:
    return seeded(metadata_param_set)


label_names = st.one_of(
    st.sampled_from(["app", "env", "__name__", "__tenant_id__", "x y", "..", "%2F", "\u00e9"]),
    seeded(lambda rnd: text(rnd, 12).replace("/", "") or "x"),
)
