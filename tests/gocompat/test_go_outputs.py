"""svclog.gocompat against Go's own answers: each expected value is what the Go function prints or
returns for the input (strconv.Quote, time.ParseDuration, time.Duration.String, Prometheus
model.Duration.String, go-humanize ParseBytes), errors included."""

import pytest

from svclog.gocompat.durations import format_go_duration, format_prom_duration, parse_go_duration
from svclog.gocompat.fmt import format_float_f, format_float_v
from svclog.gocompat.humanize import parse_bytes
from svclog.gocompat.strconv import parse_float, quote, quote_rune, unquote_double

NS, MS, S, M, H, D = 1, 10**6, 10**9, 60 * 10**9, 3600 * 10**9, 86400 * 10**9

# strconv.Quote / QuoteToASCII
QUOTE = [
    ("", '""'),
    ("plain", '"plain"'),
    ('a"b\\c', r'"a\"b\\c"'),
    ("\a\b\f\n\r\t\v", r'"\a\b\f\n\r\t\v"'),  # Go names \v; it is not \x0b
    ("\x00\x1f\x7f", r'"\x00\x1f\x7f"'),
    ("é日本", '"é日本"'),
    ("\u00a0", r'"\u00a0"'),  # no-break space: not printable in Go's sense
    ("\u2028", r'"\u2028"'),
    ("\ufeff", r'"\ufeff"'),
    ("😀", '"😀"'),
    (b"a\xffb".decode("utf-8", "surrogateescape"), r'"a\xffb"'),  # a byte that is not UTF-8
]
QUOTE_ASCII = [("é", r'"\u00e9"'), ("😀", r'"\U0001f600"'), ("\n", r'"\n"')]


@pytest.mark.parametrize("value,expected", QUOTE)
def test_quote(value, expected):
    assert quote(value) == expected


@pytest.mark.parametrize("value,expected", QUOTE_ASCII)
def test_quote_to_ascii(value, expected):
    assert quote(value, ascii_only=True) == expected


def test_quote_rune():
    assert [quote_rune(c) for c in (ord("a"), ord("'"), 0x0B, -1, 0xD800)] == [
        "'a'",
        r"'\''",
        r"'\v'",
        "'\ufffd'",
        "'\ufffd'",
    ]


def test_unquote_undoes_quote():
    for value, quoted in QUOTE:
        assert unquote_double(quoted[1:-1]) == value


# time.ParseDuration
DURATIONS = [
    ("0", 0),
    ("+0", 0),
    ("-0", 0),
    ("1ns", 1),
    ("1.5h", 90 * M),
    ("1h30m", 90 * M),
    (".5s", 500 * MS),
    ("1.s", S),
    ("-1.5m", -90 * S),
    ("+5s", 5 * S),
    ("1h1h", 2 * H),
    ("1µs", 1000),
    ("1μs", 1000),
    ("1us", 1000),
    ("1.0000000001s", S),  # the fraction scales through float64 and truncates
    ("9223372036854775807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)),
    ("2562047h47m16.854775807s", (1 << 63) - 1),
]
DURATION_ERRORS = [
    ("", 'time: invalid duration ""'),
    ("-", 'time: invalid duration "-"'),
    (".", 'time: invalid duration "."'),
    ("1", 'time: missing unit in duration "1"'),
    ("1x", 'time: unknown unit "x" in duration "1x"'),
    ("1e3s", 'time: unknown unit "e" in duration "1e3s"'),
    ("5µ", r'time: unknown unit "\xc2\xb5" in duration "5\xc2\xb5"'),  # the time package's own quoting
    ('1"s', r'time: unknown unit "\"s" in duration "1\"s"'),
    ("9223372036854775808ns", 'time: invalid duration "9223372036854775808ns"'),
    ("2562048h", 'time: invalid duration "2562048h"'),
]


@pytest.mark.parametrize("text,ns", DURATIONS)
def test_parse_duration(text, ns):
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize("text,message", DURATION_ERRORS)
def test_parse_duration_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_go_duration(text)
    assert str(err.value) == message


# time.Duration.String
GO_STRINGS = [
    (0, "0s"),
    (1, "1ns"),
    (1500, "1.5µs"),
    (250 * MS, "250ms"),
    (1500 * MS, "1.5s"),
    (90 * M, "1h30m0s"),
    (-90 * S, "-1m30s"),
    (H, "1h0m0s"),
    ((1 << 63) - 1, "2562047h47m16.854775807s"),
]


@pytest.mark.parametrize("ns,text", GO_STRINGS)
def test_go_duration_string(ns, text):
    assert format_go_duration(ns) == text


# Prometheus model.Duration.String: years and weeks only when they divide exactly
PROM_STRINGS = [
    (0, "0s"),
    (500_000, "0s"),
    (250 * MS, "250ms"),
    (1500 * MS, "1s500ms"),
    (5 * M, "5m"),
    (90 * M, "1h30m"),
    (D, "1d"),
    (14 * D, "2w"),
    (28 * D, "4w"),
    (30 * D + H, "30d1h"),
    (90 * D, "90d"),
    (365 * D, "1y"),
    (366 * D, "366d"),
    (730 * D, "2y"),
]


@pytest.mark.parametrize("ns,text", PROM_STRINGS)
def test_prom_duration_string(ns, text):
    assert format_prom_duration(ns) == text


# go-humanize ParseBytes
BYTES = [
    ("42", 42),
    ("42B", 42),
    ("42 MB", 42_000_000),
    ("42 mib", 44_040_192),
    ("1,000", 1000),
    ("1.5KiB", 1536),
    ("1KB ", 1000),
    ("1 kb", 1000),
    ("0", 0),
    ("5 EiB", 5 * 1024**6),
]
BYTE_ERRORS = [
    (" 1KB", 'strconv.ParseFloat: parsing "": invalid syntax'),
    ("9XB", "unhandled size name: xb"),
    ("KB", 'strconv.ParseFloat: parsing "": invalid syntax'),
    ("20000EB", "too large: 20000EB"),
    ("1.2.3", 'strconv.ParseFloat: parsing "1.2.3": invalid syntax'),
]


@pytest.mark.parametrize("text,n", BYTES)
def test_parse_bytes(text, n):
    assert parse_bytes(text) == n


@pytest.mark.parametrize("text,message", BYTE_ERRORS)
def test_parse_bytes_errors(text, message):
    with pytest.raises(ValueError) as err:
        parse_bytes(text)
    assert str(err.value) == message


# strconv.ParseFloat and fmt
def test_parse_float():
    assert [parse_float(t) for t in ("1", "-0.5", "1e3", "0x1p-2", "1_000", "Inf")] == [
        1.0,
        -0.5,
        1000.0,
        0.25,
        1000.0,
        float("inf"),
    ]
    for text, message in (
        ("1__000", 'strconv.ParseFloat: parsing "1__000": invalid syntax'),
        ("1e400", 'strconv.ParseFloat: parsing "1e400": value out of range'),
        ("\v", r'strconv.ParseFloat: parsing "\v": invalid syntax'),
    ):
        with pytest.raises(ValueError) as err:
            parse_float(text)
        assert str(err.value) == message


def test_float_formatting():
    assert [format_float_v(v) for v in (0.1, 1e21, 1e-5, 123456.0, 1234567.0, -0.0)] == [
        "0.1",
        "1e+21",
        "1e-05",
        "123456",
        "1.234567e+06",
        "-0",
    ]
    assert [format_float_f(v) for v in (1e21, 0.000001, 2.5)] == ["1000000000000000000000", "0.000001", "2.5"]
