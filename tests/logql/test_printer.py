"""Printer tests: the canonical text and the pretty form (fixtures), lossless round trips and the Go spellings."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from svclog.gocompat.durations import format_prom_duration
from svclog.gocompat.fmt import format_float_f, format_float_v
from svclog.gocompat.strconv import quote as go_quote
from svclog.gocompat.strconv import unquote_double
from svclog.logql import ast
from svclog.logql.format import MAX_LINE
from svclog.logql.parser import parse
from svclog.logql.printer import format_query, humanize_bytes, print_expr, reference_text
from svclog.model import Matcher, MatchType

FIXTURES = Path(__file__).with_name("fixtures")


def identity_queries() -> list[str]:
    lines = (FIXTURES / "identity.logql").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def pretty_pairs() -> list[tuple[str, str]]:
    """(input, expected) blocks; the expected text runs from `=> ` to the next blank line."""
    pairs: list[tuple[str, str]] = []
    block: list[str] = []
    expected: list[str] | None = None
    for line in (FIXTURES / "pretty.logql").read_text().splitlines() + [""]:
        if expected is not None:
            if line:
                expected.append(line)
                continue
            pairs.append(("\n".join(block), "\n".join(expected)))
            block, expected = [], None
        elif line.startswith("=> "):
            expected = [line[3:]]
        elif block or (line and not line.startswith("##")):
            block.append(line)
    return pairs


def fits_one_line(query: str) -> bool:
    return len(query.encode()) <= MAX_LINE


def test_print_fixture_sizes() -> None:
    assert len(identity_queries()) >= 150
    assert len(pretty_pairs()) >= 50


@pytest.mark.parametrize("query", identity_queries())
def test_print_identity_fixture(query: str) -> None:
    assert print_expr(parse(query)) == query
    assert reference_text(parse(query)) == query
    if fits_one_line(query):
        assert format_query(query) == query
    else:  # the pretty form breaks it; pretty.logql holds the expected text
        assert query in dict(pretty_pairs())


@pytest.mark.parametrize(("text", "expected"), pretty_pairs())
def test_format_pretty_fixture(text: str, expected: str) -> None:
    assert format_query(text) == expected
    if "\n" not in expected:
        assert format_query(expected) == expected  # the canonical form is a fixed point
    else:
        parse(expected)  # still LogQL, though not always the same query (see the quirks below)
    assert parse(print_expr(parse(text))) == parse(text)


def test_pretty_lines_break_only_above_the_limit() -> None:
    exactly_100 = 'sum by (a,b)(rate({app="x"} | json | level="error" | line_format "{{.msg}}" | keep a,b,message[5m]))'
    assert len(exactly_100) == MAX_LINE and format_query(exactly_100) == exactly_100
    query = exactly_100.replace("message", "messages")
    assert format_query(query) == (
        'sum by (a, b)(\n  rate({app="x"} | json | level="error" | line_format "{{.msg}}" | keep a,b,messages[5m])\n)'
    )


def test_pretty_counts_bytes_not_characters() -> None:
    query = '{app="' + "é" * 45 + '"} | json'  # 56 characters, 101 bytes
    assert len(query) <= MAX_LINE < len(query.encode())
    assert format_query(query) == '{app="' + "é" * 45 + '"}\n  | json'


def test_pretty_keeps_the_reference_quirks() -> None:
    # binary operands lose their parentheses, so the text can regroup when parsed again
    lhs = 'sum(rate({app="api", env="production-eu-west"}[5m])) + sum(rate({app="web", env="production-eu-west"}[5m]))'
    pretty = format_query(f"({lhs}) * 2")
    assert pretty.splitlines() == [
        '    sum(rate({app="api", env="production-eu-west"}[5m]))',
        "  +",
        '    sum(rate({app="web", env="production-eu-west"}[5m]))',
        "*",
        "  2",
    ]
    assert parse(pretty) != parse(f"({lhs}) * 2")
    # a line filter chain too long for one line keeps only the first `or` value of the filter that broke it
    chain = '{app="api"} |= "' + "a" * 50 + '" |= "' + "c" * 50 + '" or "d"'
    assert format_query(chain) == '{app="api"}\n  |= "' + "a" * 50 + '"\n  |= "' + "c" * 50 + '"'
    # decolorize is not indented; offsets print as Prometheus durations
    assert format_query('{app="api"} | decolorize | line_format "' + "x" * 80 + '"').splitlines()[1] == "| decolorize"
    assert (
        format_query('count_over_time({app="' + "x" * 80 + '"}[5m] offset 1h)')
        == 'count_over_time(\n  {app="' + "x" * 80 + '"} [5m] offset 1h\n)'
    )


def test_format_query_conformance_examples() -> None:
    assert format_query('sum by(pod)(rate({app="x"}[5m]))') == 'sum by (pod)(rate({app="x"}[5m]))'
    assert format_query('{app="cron"}!="a"or"b"') == '{app="cron"} != "a" != "b"'
    assert format_query('{app="cron"} # comment\n|= "x"') == '{app="cron"} |= "x"'
    assert (
        format_query('{app="cron"}|label_format a=`{{.app}}`|drop b,c="d"')
        == '{app="cron"} | label_format a="{{.app}}" | drop b,c="d"'
    )


def test_print_keeps_filter_values_as_written_but_format_respells_them() -> None:
    text = '{a="b"} | size > 1MiB | took >= 1h30m | n == 5.50'
    assert print_expr(parse(text)) == '{a="b"} | size>1MiB | took>=1h30m | n==5.50'
    assert format_query(text) == '{a="b"} | size>1.0MB | took>=1h30m0s | n==5.5'


def test_print_bare_ignoring_with_group_is_kept_only_when_lossless() -> None:
    text = 'sum(rate({a="b"}[1m])) * ignoring () group_left sum(rate({a="c"}[1m]))'
    assert print_expr(parse(text)) == '(sum(rate({a="b"}[1m])) * ignoring () group_left sum(rate({a="c"}[1m])))'
    assert format_query(text) == '(sum(rate({a="b"}[1m])) * sum(rate({a="c"}[1m])))'


def test_print_any_node() -> None:
    assert print_expr(ast.LineFilter("|~", (ast.FilterValue("a"), ast.FilterValue("b")))) == '|~ "a" or "b"'
    assert (
        print_expr(
            ast.BinaryLabelFilter(
                "or", ast.StringLabelFilter(Matcher("x", MatchType.EQ, "1")), ast.IpLabelFilter("y", "!=", "::1")
            )
        )
        == '( x="1" or y!=ip("::1") )'
    )
    assert print_expr(ast.Literal(-0.25)) == "-0.25"
    assert print_expr(ast.VectorLiteral(2.5)) == "vector(2.500000)"
    with pytest.raises(TypeError):
        print_expr(object())


def test_print_round_trips_all_fixture_inputs() -> None:
    for query in identity_queries() + [text for text, _ in pretty_pairs()]:
        expr = parse(query)
        assert parse(print_expr(expr)) == expr, query


# ------------------------------------------------------------------ Go spellings


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e21, "1e+21"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (math.nan, "NaN"),
        (-0.0, "-0"),
    ],
)
def test_format_float_like_go_v(value: float, expected: str) -> None:
    assert format_float_v(value) == expected


def test_format_float_like_go_f() -> None:
    assert [format_float_f(v) for v in (0.99, 1e6, 1.5e-5, 3.0, -7.25)] == ["0.99", "1000000", "0.000015", "3", "-7.25"]


def test_format_prom_durations() -> None:
    minute, hour, day = 60 * 10**9, 3600 * 10**9, 86400 * 10**9
    assert [format_prom_duration(v) for v in (5 * minute, 90 * minute, day, 7 * day, 90 * day, 0, 250 * 10**6)] == [
        "5m",
        "1h30m",
        "1d",
        "1w",
        "90d",
        "0s",
        "250ms",
    ]
    assert format_prom_duration(365 * day + hour) == "365d1h"


def test_print_strings_like_go_quote() -> None:
    assert go_quote('a"b\\c\n\t\x01\x7f') == '"a\\"b\\\\c\\n\\t\\x01\\x7f"'
    assert go_quote("München 🚀\u00a0\u200b") == '"München 🚀\\u00a0\\u200b"'
    assert go_quote(unquote_double("\\xff")) == '"\\xff"'
    with pytest.raises(ValueError):
        unquote_double("\\ud800")


def test_format_humanized_bytes() -> None:
    assert [humanize_bytes(v) for v in (5, 110, 20_000, 1_048_576, 1_500_000_000)] == [
        "5B",
        "110B",
        "20kB",
        "1.0MB",
        "1.5GB",
    ]
