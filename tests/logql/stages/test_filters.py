from svclog.logql import ast
from svclog.logql.stages import label_filter_mask
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL
from svclog.logql.stages.pipeline import reorder_stages
from tests.logql.stages.helpers import col, lf, m, run, series, sf

LOGFMT = [ast.LogfmtParser()]
LINES = (
    "method=GET status=200 duration=250ms size=110B user=u-1042 items=12 client_ip=192.168.6.32",
    "method=POST status=503 duration=1.5s size=12KB user=u-2077 items=3 client_ip=10.0.0.1",
    "method=DELETE status=429 duration=900us size=1MiB user=u-1001 items=x client_ip=2001:db8::1",
    "no pairs here",
)


def lines(*stages):
    return run(LOGFMT + list(stages), *LINES).line.to_pylist()


def num(name, op, value):
    return ast.NumericLabelFilter(name, op, float(value), str(value))


def test_string_filters():
    assert lines(lf(sf("method", "=", "GET"))) == [LINES[0]]
    assert lines(lf(sf("method", "!=", "GET"))) == list(LINES[1:])
    assert lines(lf(sf("user", "!~", "u-10.*"))) == [LINES[1], LINES[3]]
    # Regex matchers are anchored.
    assert lines(lf(sf("method", "=~", "GE"))) == []
    # An absent label compares as "".
    assert lines(lf(sf("method", "=", ""))) == [LINES[3]]


def test_numeric_filters():
    assert lines(lf(num("status", ">=", 500))) == [LINES[1]]
    assert lines(lf(num("status", "==", 429))) == [LINES[2]]
    assert lines(lf(num("status", "!=", 200))) == [LINES[1], LINES[2]]
    assert lines(lf(num("status", "<", 300))) == [LINES[0]]


def test_numeric_conversion_error_keeps_entry_with_error():
    b = run(LOGFMT + [lf(num("items", ">", 11))], *LINES)
    assert b.line.to_pylist() == [LINES[0], LINES[2]]
    assert col(b, ERROR_LABEL) == [None, "LabelFilterErr"]
    assert col(b, ERROR_DETAILS_LABEL) == [None, 'strconv.ParseFloat: parsing "x": invalid syntax']


def test_duration_and_bytes_filters():
    dur = ast.DurationLabelFilter("duration", ">=", 250_000_000, "250ms")
    assert lines(lf(dur)) == [LINES[0], LINES[1]]
    dur_lt = ast.DurationLabelFilter("duration", "<", 1_000_000, "1ms")
    assert lines(lf(dur_lt)) == [LINES[2]]
    size = ast.BytesLabelFilter("size", "<=", 110, "110B")
    assert lines(lf(size)) == [LINES[0]]
    big = ast.BytesLabelFilter("size", ">", 12_000, "12KB")
    assert lines(lf(big)) == [LINES[2]]


def test_ip_label_filter():
    expr = ast.IpLabelFilter("client_ip", "=", "192.168.0.0/16")
    assert lines(lf(expr)) == [LINES[0]]
    neq = ast.IpLabelFilter("client_ip", "!=", "192.168.0.0/16")
    assert lines(lf(neq)) == [LINES[1], LINES[2]]
    v6 = ast.IpLabelFilter("client_ip", "=", "2001:db8::/32")
    assert lines(lf(v6)) == [LINES[2]]


def test_and_or():
    both = ast.BinaryLabelFilter("and", sf("method", "=", "POST"), num("status", "==", 503))
    assert lines(lf(both)) == [LINES[1]]
    either = ast.BinaryLabelFilter(
        "or",
        num("status", ">=", 500),
        ast.BinaryLabelFilter("and", sf("method", "=", "DELETE"), num("status", "==", 429)),
    )
    assert lines(lf(either)) == [LINES[1], LINES[2]]


def test_or_only_evaluates_right_side_where_left_failed():
    b = run(LOGFMT + [lf(ast.BinaryLabelFilter("or", sf("method", "=", "DELETE"), num("items", ">", 1)))], *LINES)
    # The DELETE line passed on the left, so its bad `items` never recorded an error.
    assert b.line.to_pylist() == [LINES[0], LINES[1], LINES[2]]
    assert col(b, ERROR_LABEL) == [None, None, None]


def test_error_label_filters():
    b = run([ast.JsonParser(), lf(sf(ERROR_LABEL, "=", ""))], '{"a":"1"}', "not json")
    assert b.line.to_pylist() == ['{"a":"1"}']
    b = run([ast.JsonParser(), lf(sf(ERROR_LABEL, "=", "JSONParserErr"))], '{"a":"1"}', "not json")
    assert b.line.to_pylist() == ["not json"]


def test_first_error_wins_for_label_filters():
    b = run([ast.JsonParser(), lf(num("x", ">", 1))], '{"x":"abc"}', "plain")
    assert col(b, ERROR_LABEL) == ["LabelFilterErr"]  # "plain" has no x: dropped
    b = run([ast.JsonParser(), lf(ast.IpLabelFilter("x", "=", "10.0.0.0/8"))], "plain", '{"x":"1.1.1.1"}')
    assert b.line.to_pylist() == ["plain"]  # entries with errors pass ip filters


def test_label_filter_mask_records_errors_on_batch():
    b = run(LOGFMT, *LINES)
    mask = label_filter_mask(num("items", ">=", 3), b)
    assert mask.to_pylist() == [True, True, True, False]
    assert col(b, ERROR_LABEL) == [None, None, "LabelFilterErr", None]


def test_stream_and_metadata_filters():
    meta = [{"customer_id": "u-2077"}, {}, {"customer_id": "u-1"}]
    b = run([lf(sf("customer_id", "=", "u-2077"))], "a", "b", "c", metadata=meta)
    assert b.line.to_pylist() == ["a"]
    assert series(b) == {'{app="checkout", customer_id="u-2077", env="prod", level="info"}': ["a"]}
    assert run([lf(sf("env", "=", "prod"))], "a", "b").line.to_pylist() == ["a", "b"]


def test_drop_and_keep():
    b = run(
        LOGFMT + [ast.Drop((ast.DropKeepItem("user"), ast.DropKeepItem("method", m("method", "=", "GET"))))], *LINES[:2]
    )
    assert col(b, "user") == [None, None]
    assert col(b, "method") == [None, "POST"]
    b = run(
        LOGFMT + [ast.Keep((ast.DropKeepItem("app"), ast.DropKeepItem("method", m("method", "=", "GET"))))], *LINES[:2]
    )
    assert series(b) == {'{app="checkout", method="GET"}': [LINES[0]], '{app="checkout"}': [LINES[1]]}


def test_keep_retains_and_drop_removes_error_labels():
    b = run([ast.JsonParser(), ast.Keep((ast.DropKeepItem("app"),))], "not json")
    assert list(series(b)) == [
        (
            '{__error__="JSONParserErr", __error_details__="Value looks like object, '
            "but can't find closing '}' symbol\", app=\"checkout\"}"
        )
    ]
    b = run([ast.JsonParser(), ast.Drop((ast.DropKeepItem(ERROR_LABEL), ast.DropKeepItem(ERROR_DETAILS_LABEL)))], "x")
    assert list(series(b)) == ['{app="checkout", env="prod", level="info"}']
    b = run([ast.JsonParser(), ast.Drop((ast.DropKeepItem(ERROR_LABEL, m(ERROR_LABEL, "=", "JSONParserErr")),))], "x")
    assert col(b, ERROR_LABEL) == [None]


def test_decolorize():
    b = run([ast.Decolorize()], "\x1b[31mERROR\x1b[0m boom", "plain")
    assert b.line.to_pylist() == ["ERROR boom", "plain"]


def test_line_filters_run_before_decolorize():
    # the reference moves a run's line filters ahead of its other stages: the filter sees the raw line
    b = run([ast.Decolorize(), ast.LineFilter("|=", (ast.FilterValue("\x1b[31mERROR"),))], "\x1b[31mERROR\x1b[0m boom")
    assert b.line.to_pylist() == ["ERROR boom"]
    b = run([ast.Decolorize(), ast.LineFilter("|=", (ast.FilterValue("ERROR boom"),))], "\x1b[31mERROR\x1b[0m boom")
    assert b.line.to_pylist() == []
    # a label filter ends the run: a line filter after it still reads the decolorized line
    stages = [ast.Decolorize(), lf(sf("app", "=", "checkout")), ast.LineFilter("|=", (ast.FilterValue("ERROR boom"),))]
    assert run(stages, "\x1b[31mERROR\x1b[0m boom").line.to_pylist() == ["ERROR boom"]


def test_reorder_stages_keeps_run_ends_in_place():
    f1, f2 = ast.LineFilter("|=", (ast.FilterValue("a"),)), ast.LineFilter("!=", (ast.FilterValue("b"),))
    label = lf(sf("app", "=", "x"))
    stages = (ast.JsonParser(), f1, label, ast.Decolorize(), ast.LineFormat("{{.a}}"), f2, ast.UnpackParser())
    want = (f1, ast.JsonParser(), label, ast.Decolorize(), ast.LineFormat("{{.a}}"), f2, ast.UnpackParser())
    assert reorder_stages(stages) == want
