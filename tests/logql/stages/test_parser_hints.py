"""Parser hints: the hinted paths (RE2 kernels for logfmt, wanted fields only for json) give the full parse's labels."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svclog.logql import ast
from svclog.logql.parser import parse as parse_query
from svclog.logql.stages import build_pipeline
from svclog.logql.stages.logfmt_kernels import Haystack
from svclog.logql.stages.logfmt_parser import LogfmtParserStage, _read_key
from tests.logql.stages.helpers import STREAM, batch

KEYS = ["duration", "level", "msg", "a", "app", "b_2", "_x", "du-ration", "9k", "k\ufffd", "app_extracted"]
VALUES = [
    "",
    "5ms",
    "x y",
    "a=b",
    '"quoted"',
    '"with \\"esc\\""',
    '"unterminated',
    "\ufffd",
    'v"q',
    "=",
    "1.5s",
    '"sp ace"',
    '"multi word = sign"',
    '""',
    "\t",
]


def _line(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(0, 7)):
        key = rnd.choice(KEYS)
        shape = rnd.random()
        if shape < 0.1:
            parts.append(key)
        else:
            value = rnd.choice(VALUES)
            parts.append(
                f"{key}={value}"
                if not value.startswith('"') or " " not in value or rnd.random() < 0.8
                else f"{key}={value[1:]}"
            )
    sep = rnd.choice([" ", " ", "  ", "\t", ""])
    return sep.join(parts) + rnd.choice(["", " ", "\n"])


def _labels(stage: LogfmtParserStage, lines: list[str], names: frozenset[str]) -> dict[str, list]:
    b = stage.process(batch(*lines, stream=STREAM))
    return {name: b.label(name).to_pylist() for name in sorted(names)}


@pytest.mark.parametrize("seed", range(80))
def test_hinted_labels_equal_full_parse(seed):
    rnd = random.Random(seed)
    lines = [_line(rnd) for _ in range(60)]
    names = frozenset(
        rnd.sample(
            ["duration", "msg", "a", "b_2", "_x", "du_ration", "_9k", "app", "app_extracted", "level", "missing"], 4
        )
    )
    full = _labels(LogfmtParserStage(ast.LogfmtParser()), lines, names)
    hinted = _labels(LogfmtParserStage(ast.LogfmtParser(), only=names), lines, names)
    assert hinted == full, lines


def test_last_non_empty_occurrence_wins_and_quoted_text_is_not_a_key():
    lines = [
        'duration=5 msg="x duration=7 y" duration=',
        'msg="duration=1" duration="2 s"',
        "duration=3 duration=4",
        'msg="only duration=8 in quotes" a=1',
        'msg="a" duration=',
        'duration="" x=1 duration=6',
    ]
    hinted = _labels(
        LogfmtParserStage(ast.LogfmtParser(), only=frozenset({"duration"})), lines, frozenset({"duration"})
    )
    assert hinted == {"duration": ["5", "2 s", "4", None, None, "6"]}


def test_flags_and_parameters_ignore_hints():
    node = ast.LogfmtParser(strict=True)
    assert LogfmtParserStage(node, only=frozenset({"a"})).only is None


def test_logfmt_parameters_under_hints_stop_at_the_first_parameter_key_like_the_reference():
    params = (ast.LabelExtraction("latency", None), ast.LabelExtraction("currency", None))
    lines = ["latency=0.5 currency=EUR", "currency=USD latency=2", "other=1"]
    hinted = LogfmtParserStage(ast.LogfmtParser(params=params), only=frozenset({"latency", "currency"}))
    assert _labels(hinted, lines, frozenset({"latency", "currency"})) == {
        "latency": ["0.5", "", ""],
        "currency": ["", "USD", ""],
    }
    full = LogfmtParserStage(ast.LogfmtParser(params=params))
    assert _labels(full, lines, frozenset({"currency"})) == {"currency": ["EUR", "USD", ""]}
    wider = LogfmtParserStage(ast.LogfmtParser(params=params), only=frozenset({"latency", "app"}))
    assert not wider.first_key_only


# Plain-looking lines built to probe the two-pass kernels (logfmt_kernels): the key at the
# start, after tabs, bare, empty, repeated, inside quoted values, as part of longer keys.
PLAIN_KEYS = ["duration", "myduration", "durationx", "dur", "d", "a", "msg", "duration_ms"]
PLAIN_VALUES = [
    "5ms",
    "",
    '""',
    '"x duration=9 y"',
    '"duration=1"',
    '"a\tduration=2"',
    "1.5s",
    '"sp ace"',
    '"duration"',
    "duration",
    '"\u00e9t\u00e9"',
    '"say \\"hi\\""',
    "a=b",
    '"x',
    "\ufffd",
]


def _plain_line(rnd: random.Random) -> str:
    parts = []
    for _ in range(rnd.randint(0, 6)):
        key = rnd.choice(PLAIN_KEYS)
        parts.append(key if rnd.random() < 0.1 else f"{key}={rnd.choice(PLAIN_VALUES)}")
    seps = [" ", " ", " ", "\t", "  ", " \t"]
    text = ""
    for i, part in enumerate(parts):
        text += (rnd.choice(seps) if i else rnd.choice(["", "", " ", "\t"])) + part
    return text + rnd.choice(["", "", " ", "\n"])


@pytest.mark.parametrize("seed", range(60))
def test_two_pass_kernels_equal_full_parse(seed):
    rnd = random.Random(1000 + seed)
    lines = [_plain_line(rnd) for _ in range(80)]
    names = frozenset({"duration", rnd.choice(["dur", "myduration", "d", "msg", "duration_ms"])})
    full = _labels(LogfmtParserStage(ast.LogfmtParser()), lines, names)
    hinted = _labels(LogfmtParserStage(ast.LogfmtParser(), only=names), lines, names)
    assert hinted == full, lines


def test_kernels_decide_reachable_tokens_and_leave_the_rest():
    lines = [
        "a=1 duration=5ms b=2",
        "duration=7 x=1",
        "x=1\tduration=3",
        'msg="duration=1" duration=4',
        'msg="x duration=1" duration=4',
        "duration=1 duration=2",  # a later token: the exact kernels
        "a=1 b=2",
        'a="duration=1"',  # the needle but no token reached: the exact kernels
        "a=b=c duration=1",  # a malformed pair before the key
        "a=b=c x=1",
        'msg="x"duration=5',  # a token right after a closing quote
        "duration= x=1",  # an empty value
        'duration="" x=1',
        'duration="a b" x=1',
        'duration="say \\"hi\\"" x=1',  # escapes: the exact kernels
        "duration=5ms mydurationx=1",  # a later key holding the needle, not the key itself
        "duration=5ms \u00a0duration=6",  # a later key that sanitises to the key
        "duration=5\ufffd",
        "",
        'k\ufffd="a b=" duration=5 c"',  # the decoder skips to the space after `"a`: `b=" ... c"` is quoted
    ]
    values, decided = _read_key(pa.array(lines), "duration")
    assert [v if d else "?" for v, d in zip(values.to_pylist(), decided)] == [
        "5ms",
        "7",
        "3",
        "4",
        "4",
        "?",
        None,
        "?",
        "?",
        None,
        "?",
        "?",
        "?",
        "a b",
        "?",
        "?",
        "?",
        "?",
        None,
        "?",
    ]
    hinted = _labels(
        LogfmtParserStage(ast.LogfmtParser(), only=frozenset({"duration"})), lines, frozenset({"duration"})
    )
    full = _labels(LogfmtParserStage(ast.LogfmtParser()), lines, frozenset({"duration"}))
    assert hinted == full
    assert hinted["duration"][:6] == ["5ms", "7", "3", "4", "4", "2"]


# Lines built around the key-reading kernels' safety conditions: the key inside quoted values
# (escaped quotes too), repeated, bare, empty, after malformed pairs, right after a closing
# quote, under keys that sanitise to it (`dura-tion`, non-breaking spaces), with U+FFFD, with
# non-ASCII text and with values no duration parser accepts.
EDGE_PIECES = [
    "duration=5ms",
    "duration=150ms",
    "duration=1.5s",
    "duration=100ms",
    "duration=100",
    "duration=oops",
    "duration=1e3ms",
    "duration=-1s",
    "duration=.5s",
    "duration=\uff15ms",
    'duration="2s"',
    'duration=""',
    "duration=",
    "duration",
    "duration==5",
    'duration=5"',
    "duration=\ufffd",
    "duration=5ms\u00e9",
    "\u00a0duration=7s",
    "duration\u00a0=8s",
    "dura-tion=9s",
    "dura_tion=10s",
    "xduration=11s",
    "duration_ms=12",
    'msg="took duration=13s"',
    'msg="say \\"duration=14s\\""',
    'msg="a\tduration=15s b"',
    'msg="x"duration=16s',
    'msg="unterminated duration=17s',
    "a=b=c",
    'a"b',
    "=v",
    'k\ufffd="x duration=18s"',
    "k\ufffd=1",
    'k\ufffd="a b="',
    'c"',
    'msg="\u00e9t\u00e9 \u2603"',
    "level=info",
    "_9k=1",
    "9k=2",
]


def _edge_line(rnd: random.Random) -> str:
    parts = [rnd.choice(EDGE_PIECES) for _ in range(rnd.randint(0, 6))]
    seps = [" ", " ", " ", "\t", "  ", "\n", ""]
    text = ""
    for i, part in enumerate(parts):
        text += (rnd.choice(seps) if i else rnd.choice(["", "", " ", "\t"])) + part
    return text + rnd.choice(["", "", " ", "\n"])


@pytest.mark.parametrize("seed", range(60))
def test_key_kernels_equal_full_parse_on_edge_lines(seed):
    rnd = random.Random(5000 + seed)
    lines = [_edge_line(rnd) for _ in range(80)]
    names = frozenset({"duration", rnd.choice(["dura_tion", "msg", "_9k", "level", "k_"])})
    full = _labels(LogfmtParserStage(ast.LogfmtParser()), lines, names)
    hinted = _labels(LogfmtParserStage(ast.LogfmtParser(), only=names), lines, names)
    assert hinted == full, lines


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("condition", ["duration > 100ms", "duration <= 1s", "duration > 1s or duration < 2ms"])
def test_hinted_duration_filter_keeps_what_the_full_parse_keeps(seed, condition):
    """`| logfmt | duration > 100ms`: the same entries kept, with the same errors (bad durations keep
    their entry with LabelFilterErr; lines without the key are dropped without one)."""
    rnd = random.Random(9000 + seed)
    lines = [_edge_line(rnd) for _ in range(80)]
    stages = parse_query(f'{{app="checkout"}} | logfmt | {condition}').stages

    def kept(parser_labels):
        out = build_pipeline(stages, parser_labels=parser_labels).process(batch(*lines, stream=STREAM))
        return out.line.to_pylist(), out.label("__error__").to_pylist(), out.label("__error_details__").to_pylist()

    assert kept(frozenset({"duration"})) == kept(None), lines


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=64),
    st.binary(min_size=1, max_size=4),
    st.integers(0, 70),
    st.integers(0, 70),
)
def test_haystack_finds_what_bytes_find_finds(data, needle, start, end):
    """The memmem search on a buffer's memory answers as bytes.find over the same range."""
    start = min(start, len(data))
    buffer = pa.py_buffer(data)
    assert Haystack(buffer).find(needle, start, end) == data.find(needle, start, end)
    assert Haystack(buffer, memmem=None).find(needle, start, end) == data.find(needle, start, end)
