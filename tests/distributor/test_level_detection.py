"""detected_level at ingest: answers recorded from the reference (Loki 3.7.6) for labels, metadata,
OTLP severities, JSON, logfmt and plain lines, and the kernels checked against scalar readers."""

import json
import random
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from svclog.config.limits import DEFAULT_LOG_LEVEL_FIELDS
from svclog.distributor import level_detection as ld
from svclog.distributor.distributor import Distributor
from svclog.model import Entry, Labels, PushStream, StreamColumns
from svclog.ring.ring import Ring

# Each line: a pushed entry (stream labels, line, structured metadata), optional tenant settings
# (`fields` = log_level_fields, `depth` = log_level_from_json_max_depth) and the metadata the
# reference stored for it (read back with categorize-labels; `x_extracted` renamed to `x`).
FIXTURE = Path(__file__).parent / "fixtures" / "detected_level.jsonl"
CASES = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]


def _settings(case) -> ld.LevelSettings:
    return ld.LevelSettings(tuple(case.get("fields") or DEFAULT_LOG_LEVEL_FIELDS), case.get("depth", 2))


def _columns(case) -> StreamColumns:
    md = [list(case["metadata"].items())] if case["metadata"] else None
    return StreamColumns(Labels.from_dict(case["labels"]), [1], [case["line"]], md)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c['line'][:40]!r}" for i, c in enumerate(CASES)])
def test_matches_the_reference(case):
    (out,) = ld.detect_levels([_columns(case)], _settings(case))
    assert dict(out.metadata[0]) == case["want"]


def test_whole_push_at_once_matches_case_by_case():
    # one call over every default-settings case (one kernel pass) answers as the cases one by one
    cases = [c for c in CASES if "fields" not in c and "depth" not in c]
    out = ld.detect_levels([_columns(c) for c in cases], _settings({}))
    assert [dict(s.metadata[0]) for s in out] == [c["want"] for c in cases]


def test_streams_with_several_entries_and_mixed_metadata():
    stream = StreamColumns(
        Labels.from_dict({"app": "a"}),
        [1, 2, 3, 4],
        ["level=warn", "boom error", "x", '{"level":"DEBUG"}'],
        [None, [("trace_id", "t")], [("detected_level", "Err")], None],
    )
    (out,) = ld.detect_levels([stream], _settings({}))
    assert out.metadata == [
        [("detected_level", "warn")],
        [("trace_id", "t"), ("detected_level", "error")],
        [("detected_level", "error")],
        [("detected_level", "debug")],
    ]
    # the caller's lists are left as they were
    assert stream.metadata == [None, [("trace_id", "t")], [("detected_level", "Err")], None]


def test_a_level_label_decides_for_the_whole_stream():
    stream = StreamColumns(Labels.from_dict({"app": "a", "level": "WARNING"}), [1, 2], ["error", "x"], None)
    (out,) = ld.detect_levels([stream], _settings({}))
    assert out.metadata == [[("detected_level", "warn")]] * 2


@pytest.mark.parametrize(
    "limits, enabled",
    [
        ({"discover_log_levels": True, "allow_structured_metadata": True}, True),
        ({"discover_log_levels": False, "allow_structured_metadata": True}, False),
        ({"discover_log_levels": True, "allow_structured_metadata": False}, False),
    ],
)
def test_settings_follow_the_limits(limits, enabled):
    settings = ld.LevelSettings.from_limits(
        SimpleNamespace(log_level_fields=(), log_level_from_json_max_depth=2, **limits)
    )
    assert (settings is not None) == enabled
    if enabled:
        assert settings.fields == DEFAULT_LOG_LEVEL_FIELDS  # an empty list means the defaults
    stream = StreamColumns(Labels.from_dict({"app": "a"}), [1], ["x"], [[("detected_level", "WRN")]])
    (out,) = ld.detect_levels([stream], settings)
    assert out.metadata == [[("detected_level", "warn" if enabled else "WRN")]]


@pytest.mark.parametrize(
    "text, level",
    [
        ("0", "unknown"),
        ("1", "trace"),
        ("4", "trace"),
        ("5", "debug"),
        ("9", "info"),
        ("13", "warn"),
        ("17", "error"),
        ("21", "fatal"),
        ("24", "fatal"),
        ("25", "unknown"),
        ("-3", "trace"),
        ("+9", "info"),
        ("09", "info"),
        (" 9", "info"),
        ("1.5", "info"),
        ("x", "info"),
        ("99999999999999999999", "info"),
    ],
)
def test_otlp_severity_numbers(text, level):
    assert ld.severity_level(text) == level


# ---- the kernels against scalar readers, over generated lines


def _random_json(rng: random.Random, depth: int = 0):
    keys = ["level", "lvl", "msg", "a", "Level", "severity", "log", "x y", "level "]
    obj = {}
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.35:
            value = rng.choice(["info", "WARN", "error", "dbg", "", "hello", 'q"uote', "back\\slash", "Ünï"])
        elif kind < 0.55:
            value = rng.choice([30, -1.5, True, False, None])
        elif kind < 0.75 and depth < 4:
            value = _random_json(rng, depth + 1)
        else:
            value = [rng.choice([1, "level", {"level": "error"}, [2, {"a": "}"}]]) for _ in range(rng.randint(0, 3))]
        obj[rng.choice(keys)] = value
    return obj


def _mangle(rng: random.Random, text: str) -> str:
    """Malformed variants: a character dropped, doubled or replaced by structure."""
    if rng.random() < 0.5 or len(text) < 3:
        return text
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + rng.choice(["", text[i] * 2, "{", "}", "[", "]", '"', ",", ":", "\\", " "]) + text[i + 1 :]


@pytest.mark.parametrize("depth", [1, 2, 3, 0])
def test_json_kernels_answer_as_the_walker(depth):
    rng = random.Random(depth)
    lines = []
    for _ in range(3000):
        text = json.dumps(_random_json(rng), separators=rng.choice([(",", ":"), (", ", ": ")]), ensure_ascii=False)
        lines.append(_mangle(rng, text))
    fields = DEFAULT_LOG_LEVEL_FIELDS
    got = ld._json_values(pa.array(lines), fields, depth)
    want = [ld.walk_json(line, frozenset(fields), depth) for line in lines]
    diff = [(line, g, w) for line, g, w in zip(lines, got, want) if g != w]
    assert not diff, diff[:5]


def _decoder_value(line: str, hints: list[str]) -> str | None:
    """The reference's logfmt level read, scalar: pairs up to the first syntax error, keys equal
    to a hint ignoring case, the earliest hint wins (its first occurrence)."""
    pos, n, best, value = 0, len(line), len(hints), None
    while pos < n:
        while pos < n and ord(line[pos]) <= 32:
            pos += 1
        if pos >= n:
            break
        start = pos
        while pos < n and ord(line[pos]) > 32 and line[pos] not in '="':
            pos += 1
        key = line[start:pos]
        if (pos < n and line[pos] == '"') or (pos < n and line[pos] == "=" and not key) or "\ufffd" in key:
            break
        val = ""
        if pos < n and line[pos] == "=":
            pos += 1
            if pos < n and line[pos] == '"':
                m = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL).match(line, pos)
                if m is None:
                    break
                body = m.group(1)
                if "\\" in body:
                    if not re.fullmatch(r'(?:[^\\]|\\(?:["\\/\'bfnrt]|u[0-9A-Fa-f]{4}))*', body, re.DOTALL):
                        break
                    body = ld._unquote('"' + body + '"')
                val, pos = body, m.end()
            else:
                vstart = pos
                while pos < n and ord(line[pos]) > 32 and line[pos] not in '="':
                    pos += 1
                if pos < n and line[pos] in '="':
                    break
                val = line[vstart:pos]
        for i, hint in enumerate(hints):
            if i < best and key.casefold() == hint.casefold():
                best, value = i, val
                break
    return value


def test_logfmt_kernels_answer_as_the_decoder():
    rng = random.Random(7)
    words = ["level", "LEVEL", "lvl", "severity", "msg", "a", "log.level", "x"]
    values = ["info", "warn", '"error"', '"a b"', '"esc \\" q"', '"bad \\q"', "", "=", '"', "dbg", "x=y"]
    lines = []
    for _ in range(3000):
        parts = [rng.choice(words) + rng.choice(["=", "=", ""]) + rng.choice(values) for _ in range(rng.randint(1, 5))]
        lines.append(rng.choice([" ", "  ", "\t", ""]).join(parts))
    hints = ld._logfmt_hints(DEFAULT_LOG_LEVEL_FIELDS)
    got = ld._logfmt_values(pa.array(lines), DEFAULT_LOG_LEVEL_FIELDS)
    want = [_decoder_value(line, hints) for line in lines]
    diff = [(line, g, w) for line, g, w in zip(lines, got, want) if g != w]
    assert not diff, diff[:5]


# ---- the distributor hook


def _limits(**overrides):
    base = {
        "max_line_size": 256 * 1024,
        "max_line_size_truncate": False,
        "max_label_names_per_series": 15,
        "max_label_name_length": 1024,
        "max_label_value_length": 2048,
        "reject_old_samples": False,
        "reject_old_samples_max_age": 7 * 86400 * 10**9,
        "creation_grace_period": 600 * 10**9,
        "allow_structured_metadata": True,
        "max_structured_metadata_size": 64 * 1024,
        "max_structured_metadata_entries_count": 128,
        "ingestion_rate_mb": 4.0,
        "ingestion_burst_size_mb": 6.0,
        "block_ingestion_until": None,
        "block_ingestion_status_code": 260,
        "ingestion_rate_strategy": "global",
        "discover_log_levels": True,
        "log_level_fields": list(DEFAULT_LOG_LEVEL_FIELDS),
        "log_level_from_json_max_depth": 2,
    }
    base.update(overrides)
    return SimpleNamespace(**base)


class _Pusher:
    def __init__(self):
        self.received = []

    def push_many(self, tenant, assignments):
        for streams in assignments.values():
            self.received.extend(streams)
        return {member: None for member in assignments}


@pytest.mark.parametrize("discover", [True, False])
def test_distributor_adds_detected_level_when_enabled(discover):
    ring = Ring()
    ring.register("i0", "i0", node="n0")
    pusher = _Pusher()
    dist = Distributor(
        ring=lambda: ring,
        pusher=pusher,
        limits_for=lambda t: _limits(discover_log_levels=discover),
        replication_factor=1,
    )
    now = time.time_ns()
    dist.push("t", [PushStream(Labels.from_dict({"app": "a"}), [Entry(now, "level=error boom"), Entry(now + 1, "ok")])])
    (stream,) = pusher.received
    if discover:
        assert stream.metadata == [[("detected_level", "error")], [("detected_level", "unknown")]]
    else:
        assert not stream.metadata
