"""Parser tests: the AST built for each construct, the reference's rules, and error reporting."""

from __future__ import annotations

import glob
import json
import math
import os

import pytest

from svclog.logql import ast
from svclog.logql.lexer import tokenize
from svclog.logql.parser import MAX_QUERY_LENGTH, parse, parse_log_query, parse_selector
from svclog.model import Matcher, MatchType, ParseError

CASES = "/work/shared/conformance/cases"


def sel(**labels: str) -> ast.StreamSelector:
    return ast.StreamSelector(tuple(Matcher(k, MatchType.EQ, v) for k, v in labels.items()))


def stages(text: str) -> tuple:
    expr = parse(text)
    assert isinstance(expr, ast.LogQuery)
    return expr.stages


def label_filter(text: str) -> object:
    (stage,) = stages('{a="b"} | ' + text)
    assert isinstance(stage, ast.LabelFilter)
    return stage.expr


def s(name: str, value: str, op: MatchType = MatchType.EQ) -> ast.StringLabelFilter:
    return ast.StringLabelFilter(Matcher(name, op, value))


def and_(left: object, right: object) -> ast.BinaryLabelFilter:
    return ast.BinaryLabelFilter("and", left, right)  # type: ignore[arg-type]


def or_(left: object, right: object) -> ast.BinaryLabelFilter:
    return ast.BinaryLabelFilter("or", left, right)  # type: ignore[arg-type]


# ------------------------------------------------------------------ conformance corpus


def _conformance_queries() -> list[tuple[int, str]]:
    found = []
    for path in sorted(glob.glob(os.path.join(CASES, "*", "*.json"))):
        with open(path) as handle:
            case = json.load(handle)
        for step in case.get("steps", [case]):
            pairs = (step.get("params") or []) + (step.get("form") or [])
            for key, value in pairs:
                if key in ("query", "match[]"):
                    found.append((step["expect"].get("status"), value))
    return found


@pytest.mark.skipif(not os.path.isdir(CASES), reason="conformance cases not available")
def test_parse_every_successful_conformance_query() -> None:
    # an empty `query` is "no query" (detected_labels, labels), not an expression
    queries = [q for status, q in _conformance_queries() if status in (200, 204) and q.strip()]
    assert len(queries) > 150
    for query in queries:
        parse(query)


# ------------------------------------------------------------------ selectors and line filters


def test_parse_selector_matchers_and_string_forms() -> None:
    expr = parse('{app="a", env!="b", pod=~`c.*`, ns!~"d|e"}')
    assert expr == ast.LogQuery(
        ast.StreamSelector(
            (
                Matcher("app", MatchType.EQ, "a"),
                Matcher("env", MatchType.NEQ, "b"),
                Matcher("pod", MatchType.RE, "c.*"),
                Matcher("ns", MatchType.NRE, "d|e"),
            )
        )
    )


def test_parse_go_string_escapes_and_raw_strings() -> None:
    (f1, f2) = stages('{a="b"} |= "q\\"\\t\\u00e9\\x41\\101" |= `raw\\d\n"`')
    assert f1 == ast.LineFilter("|=", (ast.FilterValue('q"\té' + "AA"),))
    assert f2 == ast.LineFilter("|=", (ast.FilterValue('raw\\d\n"'),))


def test_parse_line_filters_or_chains() -> None:
    assert stages('{a="b"} |= "x" or "y" or ip("1.2.3.4")') == (
        ast.LineFilter("|=", (ast.FilterValue("x"), ast.FilterValue("y"), ast.FilterValue("1.2.3.4", ip=True))),
    )
    # not (x or y) is (not x) and (not y): the reference splits negative chains
    assert stages('{a="b"} != "x" or "y"') == (
        ast.LineFilter("!=", (ast.FilterValue("x"),)),
        ast.LineFilter("!=", (ast.FilterValue("y"),)),
    )
    ops = [f.op for f in stages('{a="b"} |= "1" != "2" |~ "3" !~ "4" |> "<_>5" !> "<_>6"')]
    assert ops == ["|=", "!=", "|~", "!~", "|>", "!>"]


def test_parse_comments_whitespace_and_newlines() -> None:
    text = '{ app = "cron" ,\n env="dev" }  # trailing comment\n  |= "x" # another\n'
    assert parse(text) == ast.LogQuery(sel(app="cron", env="dev"), (ast.LineFilter("|=", (ast.FilterValue("x"),)),))


# ------------------------------------------------------------------ parser stages


def test_parse_json_and_logfmt_parameters() -> None:
    (json_stage,) = stages('{a="b"} | json first="items[0].name", tags, same="same"')
    assert json_stage == ast.JsonParser(
        (
            ast.LabelExtraction("first", "items[0].name"),
            ast.LabelExtraction("tags"),
            ast.LabelExtraction("same"),
        )
    )
    (plain, strict, both) = stages('{a="b"} | logfmt | logfmt --strict | logfmt --keep-empty --strict x, y="z"')
    assert plain == ast.LogfmtParser()
    assert strict == ast.LogfmtParser(strict=True)
    assert both == ast.LogfmtParser(True, True, (ast.LabelExtraction("x"), ast.LabelExtraction("y", "z")))


def test_parse_other_stages() -> None:
    got = stages(
        '{a="b"} | regexp `(?P<x>\\d+)` | pattern "<ip> <_>" | unpack | decolorize'
        ' | line_format "{{.x}}" | label_format a=b, c="{{.d}}"'
        ' | drop a, b="v", c=~"re" | keep x, y!="z"'
    )
    assert got == (
        ast.RegexpParser("(?P<x>\\d+)"),
        ast.PatternParser("<ip> <_>"),
        ast.UnpackParser(),
        ast.Decolorize(),
        ast.LineFormat("{{.x}}"),
        ast.LabelFormat((ast.LabelFormatOp("a", "b", False), ast.LabelFormatOp("c", "{{.d}}", True))),
        ast.Drop(
            (
                ast.DropKeepItem("a"),
                ast.DropKeepItem("b", Matcher("b", MatchType.EQ, "v")),
                ast.DropKeepItem("c", Matcher("c", MatchType.RE, "re")),
            )
        ),
        ast.Keep((ast.DropKeepItem("x"), ast.DropKeepItem("y", Matcher("y", MatchType.NEQ, "z")))),
    )


# ------------------------------------------------------------------ label filters


def test_parse_label_filter_value_kinds() -> None:
    assert label_filter("x >= 250ms") == ast.DurationLabelFilter("x", ">=", 250_000_000, "250ms")
    assert label_filter("x < -1.5s") == ast.DurationLabelFilter("x", "<", -1_500_000_000, "-1.5s")
    assert label_filter("x == 1h30m") == ast.DurationLabelFilter("x", "==", 5_400_000_000_000, "1h30m")
    assert label_filter("x > 20KB") == ast.BytesLabelFilter("x", ">", 20_000, "20KB")
    assert label_filter("x <= 1MiB") == ast.BytesLabelFilter("x", "<=", 1_048_576, "1MiB")
    assert label_filter("x = 5.5") == ast.NumericLabelFilter("x", "==", 5.5, "5.5")
    assert label_filter("x != -2") == ast.NumericLabelFilter("x", "!=", -2.0, "-2")
    assert label_filter('x = ip("10.0.0.0/8")') == ast.IpLabelFilter("x", "=", "10.0.0.0/8")
    assert label_filter('x !~ "a.*"') == s("x", "a.*", MatchType.NRE)


def test_parse_label_filter_precedence_like_the_reference() -> None:
    a, b, c = s("a", "1"), s("b", "2"), s("c", "3")
    assert label_filter('a="1" and b="2" or c="3"') == or_(and_(a, b), c)
    assert label_filter('a="1" or b="2" and c="3"') == or_(a, and_(b, c))
    assert label_filter('(a="1" or b="2") and c="3"') == and_(or_(a, b), c)
    # a comma or plain juxtaposition takes the whole rest as its right operand
    assert label_filter('a="1", b="2" or c="3"') == and_(a, or_(b, c))
    assert label_filter('a="1" b="2" c="3"') == and_(a, and_(b, c))
    assert label_filter('a="1" or b="2", c="3"') == or_(a, and_(b, c))


def test_parse_function_names_are_labels_unless_called() -> None:
    expr = parse('{rate="x", ip="y"} | sum > 5 | count = "c"')
    assert isinstance(expr, ast.LogQuery)
    assert [m.name for m in expr.selector.matchers] == ["rate", "ip"]
    assert expr.stages[0] == ast.LabelFilter(ast.NumericLabelFilter("sum", ">", 5.0, "5"))


# ------------------------------------------------------------------ log ranges and unwrap


def test_parse_range_positions_are_equivalent() -> None:
    forms = [
        'count_over_time({a="b"} |= "x" [5m])',
        'count_over_time({a="b"}[5m] |= "x")',
        'count_over_time(({a="b"} |= "x")[5m])',
        'count_over_time((({a="b"} |= "x")[5m]))',
    ]
    parsed = {parse(f) for f in forms}
    assert len(parsed) == 1
    (expr,) = parsed
    assert isinstance(expr, ast.RangeAggregation)
    assert expr.range.range == 300 * 10**9 and expr.range.query.stages[0].op == "|="  # type: ignore[union-attr]


def test_parse_unwrap_conversions_post_filters_and_offset() -> None:
    expr = parse('sum_over_time({a="b"} | logfmt | unwrap duration_seconds(t) | __error__="" | t > 0 [1h] offset 5m)')
    assert isinstance(expr, ast.RangeAggregation)
    log_range = expr.range
    assert log_range.offset == 300 * 10**9 and log_range.range == 3600 * 10**9
    assert log_range.unwrap == ast.Unwrap(
        "t", "duration_seconds", (s("__error__", ""), ast.NumericLabelFilter("t", ">", 0.0, "0"))
    )
    assert log_range.query.stages == (ast.LogfmtParser(),)
    for conversion in ("bytes", "duration", ""):
        target = f"{conversion}(x)" if conversion else "x"
        unwrapped = parse(f'max_over_time({{a="b"}} | unwrap {target} [1m]) by (c)')
        assert unwrapped.range.unwrap == ast.Unwrap("x", conversion)  # type: ignore[union-attr]


def test_parse_range_aggregation_parameters_and_grouping() -> None:
    expr = parse('quantile_over_time(0.99, {a="b"} | unwrap x [5m]) without (pod, ns)')
    assert isinstance(expr, ast.RangeAggregation)
    assert expr.param == 0.99 and expr.grouping == ast.Grouping(True, ("pod", "ns"))
    assert parse('rate({a="b"} | unwrap x [5m])').range.unwrap == ast.Unwrap("x")  # type: ignore[union-attr]


# ------------------------------------------------------------------ metric expressions


def test_parse_vector_aggregation_forms() -> None:
    inner = parse('rate({a="b"}[5m])')
    before = parse('sum by (x) (rate({a="b"}[5m]))')
    after = parse('sum(rate({a="b"}[5m])) by (x)')
    assert before == after == ast.VectorAggregation("sum", inner, ast.Grouping(False, ("x",)))  # type: ignore[arg-type]
    assert parse('sum by () (rate({a="b"}[5m]))') == ast.VectorAggregation("sum", inner)  # type: ignore[arg-type]
    assert parse('topk by (x) (3, rate({a="b"}[5m]))') == ast.VectorAggregation(
        "topk", inner, ast.Grouping(False, ("x",)), 3.0
    )  # type: ignore[arg-type]
    assert parse('SUM WITHOUT (y) (RATE({a="b"}[5m]))') == ast.VectorAggregation(
        "sum", inner, ast.Grouping(True, ("y",))
    )  # type: ignore[arg-type]


def test_parse_binary_operator_precedence_and_associativity() -> None:
    a, b, c = (parse(f'sum(rate({{a="{n}"}}[1m]))') for n in "abc")
    assert parse('sum(rate({a="a"}[1m])) + sum(rate({a="b"}[1m])) * sum(rate({a="c"}[1m]))') == ast.BinaryOp(
        "+", a, ast.BinaryOp("*", b, c)
    )  # type: ignore[arg-type]
    assert parse('sum(rate({a="a"}[1m])) - sum(rate({a="b"}[1m])) - sum(rate({a="c"}[1m]))') == ast.BinaryOp(
        "-", ast.BinaryOp("-", a, b), c
    )  # type: ignore[arg-type]
    assert parse('sum(rate({a="a"}[1m])) ^ sum(rate({a="b"}[1m])) ^ sum(rate({a="c"}[1m]))') == ast.BinaryOp(
        "^", a, ast.BinaryOp("^", b, c)
    )  # type: ignore[arg-type]
    assert parse('sum(rate({a="a"}[1m])) or sum(rate({a="b"}[1m])) and sum(rate({a="c"}[1m]))') == ast.BinaryOp(
        "or", a, ast.BinaryOp("and", b, c)
    )  # type: ignore[arg-type]
    assert parse('sum(rate({a="a"}[1m])) > 1 + 2') == ast.BinaryOp(">", a, ast.Literal(3.0))  # type: ignore[arg-type]


def test_parse_vector_matching_and_bool() -> None:
    expr = parse('sum by (x) (rate({a="b"}[1m])) / on (x) group_left (y, z) sum by (x) (rate({a="c"}[1m]))')
    assert isinstance(expr, ast.BinaryOp)
    assert expr.matching == ast.VectorMatching(True, ("x",), "many-to-one", ("y", "z"))
    right = parse('sum(rate({a="b"}[1m])) * ignoring (p) group_right sum(rate({a="c"}[1m]))')
    assert right.matching == ast.VectorMatching(False, ("p",), "one-to-many")  # type: ignore[union-attr]
    cmp = parse('sum(rate({a="b"}[1m])) > bool 5')
    assert cmp.return_bool and cmp.matching is None  # type: ignore[union-attr]
    assert parse('sum(rate({a="b"}[1m])) + ignoring () sum(rate({a="c"}[1m]))').matching is None  # type: ignore[union-attr]


def test_parse_folds_literal_arithmetic_like_the_reference() -> None:
    assert parse("1 + 2 / 4 * 2 ^ 2") == ast.Literal(3.0)
    assert parse("2 ^ 3 ^ 2") == ast.Literal(512.0)
    assert parse("-2 ^ 2") == ast.Literal(4.0)  # the sign belongs to the literal
    assert parse("1 - -1") == ast.Literal(2.0)
    assert parse("2 > bool 1") == ast.Literal(1.0)
    assert parse("1.5e3") == ast.Literal(1500.0)
    assert math.isnan(parse("1 / 0").value)  # type: ignore[union-attr]
    assert math.isnan(parse("5 % 0").value)  # type: ignore[union-attr]


def test_parse_vector_and_label_replace() -> None:
    assert parse("vector(42)") == ast.VectorLiteral(42.0)
    expr = parse('label_replace(rate({a="b"}[1m]), "dst", "$1", "src", "(.*)")')
    assert expr == ast.LabelReplace(parse('rate({a="b"}[1m])'), "dst", "$1", "src", "(.*)")  # type: ignore[arg-type]


# ------------------------------------------------------------------ errors

INVALID = [
    '{app="api"',
    "",
    "{}",
    '{app!="x"}',
    '{a=~".*"}',
    '{a=~".*", b!="c"}',
    'sum(count_over_time({app="api"}))',
    'rate({app="cron"})',
    'count_over_time({app="cron"}[5m]) offset 5m',
    'max_over_time(rate({app="nginx"}[1m])[10m:1m])',
    'topk(sum by (pod) (count_over_time({app="cron"}[5m])))',
    'topk(1.5, rate({a="b"}[1m]))',
    'topk(0, rate({a="b"}[1m]))',
    'sum(2, rate({a="b"}[1m]))',
    'approx_topk by (a) (2, rate({a="b"}[1m]))',
    'sort by (a) (rate({a="b"}[1m]))',
    'foo_over_time({app="cron"}[5m])',
    '{app="cron"} | label_format a=app, a="x"',
    'sum_over_time({a="b"}[5m])',
    'rate_counter({a="b"}[5m])',
    'count_over_time({a="b"} | unwrap x [5m])',
    'bytes_rate({a="b"} | unwrap x [5m])',
    'sum_over_time({a="b"} | unwrap x [5m]) by (c)',
    'count_over_time({a="b"}[5m]) by (c)',
    'quantile_over_time({a="b"} | unwrap x [5m])',
    'rate(0.5, {a="b"}[5m])',
    '{a="b"} | regexp "no named groups"',
    '{a="b"} | regexp "(?P<x>unclosed"',
    '{a="b"} | pattern "no captures"',
    '{a="b"} | pattern "<a><b>"',
    '{a="b"} | pattern "<a> <a>"',
    '{a="b"} | logfmt --nope',
    '{a="b"} | json --strict',
    '{a="b"}[5m]',
    '{a="b"} + 1',
    'sum(rate({a="b"}[1m])) and 1',
    '1 or sum(rate({a="b"}[1m]))',
    'rate({a="b"}[5m]',
    'rate({a="b"}[5x])',
    '{a="b"} |= "unterminated',
    '{a="b"} |= `unterminated',
    '{a="b"} |= "bad \\q escape"',
    '{a="b"} |= "line\nbreak"',
    "{a='b'}",
    '{a="b"} | x > 08',
    '{a="b"} | x > 1_000',
    "vector(1e999)",
    'label_replace(rate({a="b"}[1m]), "d", "r", "s", "(")',
    '{a="b"} /* never closed',
    '{a="b"} | unwrap x',
]


@pytest.mark.parametrize("query", INVALID)
def test_parse_rejects_invalid_queries(query: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(query)
    assert info.value.message.startswith("parse error")


def test_parse_error_messages_carry_positions() -> None:
    with pytest.raises(ParseError) as info:
        parse('{app="api"')
    err = info.value
    assert (err.line, err.column) == (1, 11)
    assert err.message == "parse error at line 1, col 11: syntax error: unexpected $end, expecting , or }"
    with pytest.raises(ParseError) as info:
        parse('{app="api"}\n  | json | x > ')
    assert info.value.line == 2 and "unexpected $end" in info.value.message
    with pytest.raises(ParseError) as info:
        parse('sum(rate({a="b"}[5m])) by (x) offset 5m')
    assert info.value.column == 31 and "unexpected offset" in info.value.message


def test_parse_semantic_error_messages_match_the_reference() -> None:
    with pytest.raises(ParseError, match="queries require at least one regexp or equality matcher"):
        parse('{app!="x"}')
    with pytest.raises(ParseError, match="parameter required for operation topk"):
        parse('topk(rate({a="b"}[1m]))')
    with pytest.raises(ParseError, match="invalid aggregation sum_over_time without unwrap"):
        parse('sum_over_time({a="b"}[1m])')
    with pytest.raises(ParseError, match="multiple label name 'a' appears in formatting"):
        parse('{a="b"} | label_format a=b, a="c"')


def test_parse_rejects_overlong_input() -> None:
    query = '{a="' + "x" * MAX_QUERY_LENGTH + '"}'
    with pytest.raises(ParseError, match="input size too long"):
        parse(query)


# ------------------------------------------------------------------ entry points


def test_parse_selector_and_parse_log_query() -> None:
    assert parse_selector('{app="a", env="b"}') == sel(app="a", env="b")
    with pytest.raises(ParseError):
        parse_selector('{app="a"} |= "x"')
    with pytest.raises(ParseError):
        parse_selector('rate({app="a"}[1m])')
    assert parse_selector('{app=~".*"}', validate=False).matchers[0].type is MatchType.RE
    query = parse_log_query('{app="a"} | json')
    assert query.stages == (ast.JsonParser(),)
    with pytest.raises(ParseError):
        parse_log_query('sum(rate({app="a"}[1m]))')


def test_parse_lexer_units_only_when_glued_to_numbers() -> None:
    kinds = [(t.type, str(t)) for t in tokenize("5m 5 m 20KB 1.5s -2h 5min 0x1p3 --strict")]
    assert kinds == [
        ("DURATION", "5m"),
        ("NUMBER", "5"),
        ("IDENTIFIER", "m"),
        ("BYTES", "20KB"),
        ("DURATION", "1.5s"),
        ("DURATION", "-2h"),
        ("DURATION", "5m"),
        ("IDENTIFIER", "in"),
        ("NUMBER", "0x1p3"),
        ("FLAG", "--strict"),
    ]


def test_parse_ip_ends_an_or_segment_like_the_reference() -> None:
    # lineFilter: filter STRING OR orFilter; lineFilters: lineFilter OR orFilter | lineFilters lineFilter
    ok = [
        '{a="b"} |= "a" or ip("1.1.1.1") or "c"',
        '{a="b"} |= ip("1.1.1.1") or "c" or ip("2.2.2.2")',
        '{a="b"} |= "x" |= "c" or ip("1.1.1.1")',
        '{a="b"} | json |= ip("1.1.1.1") or "c"',
    ]
    for text in ok:
        parse(text)
    bad = {
        '{a="b"} |= "a" or ip("1.1.1.1") or ip("2.2.2.2") or "c"': 50,
        '{a="b"} |= ip("1.1.1.1") or ip("2.2.2.2") or "c"': 43,
        '{a="b"} |= "x" |= ip("1.1.1.1") or "c"': 33,
        '{a="b"} != "x" != "c" or ip("1.1.1.1") or "d"': 40,
    }
    for text, column in bad.items():
        with pytest.raises(ParseError) as info:
            parse(text)
        assert str(info.value) == f"parse error at line 1, col {column}: syntax error: unexpected or"


def _tokens_in(node: object) -> list[object]:
    from lark import Token

    if isinstance(node, Token):
        return [node]
    if isinstance(node, Matcher):
        return [v for v in (node.name, node.value) if isinstance(v, Token)]
    if isinstance(node, (tuple, list)):
        return [t for item in node for t in _tokens_in(item)]
    if hasattr(node, "__dataclass_fields__"):
        return [t for name in node.__dataclass_fields__ for t in _tokens_in(getattr(node, name))]
    return []


def test_parse_keeps_no_lexer_tokens_in_the_ast() -> None:
    path = os.path.join(os.path.dirname(__file__), "fixtures", "identity.logql")
    with open(path) as handle:
        queries = [line.strip() for line in handle if line.strip() and not line.startswith("#")]
    queries += [
        'absent_over_time({app="zzz"}[1m])',
        '(sum(rate({a="b"}[1m])) or vector(0)) ^ 2',
        '{a=~"x"} | b!~"y" | drop c=~"z"',
    ]
    for text in queries:
        assert _tokens_in(parse(text, validate=False)) == [], text


def test_parse_regex_errors_name_the_pattern_not_a_token() -> None:
    with pytest.raises(ParseError) as info:
        parse('{app=~"(?P<x"}')
    assert "Token" not in str(info.value)
    assert str(info.value).startswith("parse error : error parsing regexp: ")
