from svclog.logql import ast
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL
from svclog.logql.stages.logfmt_parser import LogfmtParserStage, _first_error_pairs
from tests.logql.stages.helpers import batch, col, run, series

API = (
    '{"ts":"t1","level":"warn","status":503,"latency_ms":359.295,"cache_hit":true,'
    '"user":{"id":"u-1","roles":["a"]},"request":{"headers":{"User-Agent":"curl/8","X-Request-Id":"r-1"}},'
    '"tags":["x","y"],"nothing":null,"2fa":"on"}'
)


def test_json_flattens_and_sanitises():
    b = run([ast.JsonParser()], API)
    assert col(b, "level_extracted") == ["warn"]  # collides with the stream label
    assert col(b, "level") == ["info"]
    assert col(b, "status") == ["503"]
    assert col(b, "latency_ms") == ["359.295"]  # numbers keep their text
    assert col(b, "cache_hit") == ["true"]
    assert col(b, "user_id") == ["u-1"]
    assert col(b, "request_headers_User_Agent") == ["curl/8"]
    assert col(b, "request_headers_X_Request_Id") == ["r-1"]
    assert col(b, "_2fa") == ["on"]
    assert not b.has_label("tags") and not b.has_label("user_roles") and not b.has_label("nothing")
    assert col(b, ERROR_LABEL) == [None]


def test_json_error_on_non_json_keeps_entry():
    b = run([ast.JsonParser()], "ts=1 level=info", '{"a":"b"}')
    assert col(b, ERROR_LABEL) == ["JSONParserErr", None]
    assert col(b, ERROR_DETAILS_LABEL) == ["Value looks like object, but can't find closing '}' symbol", None]
    assert col(b, "a") == [None, "b"]


def test_json_partial_fields_before_error():
    b = run([ast.JsonParser()], '{"a":"1","b":2,"c" 3}')
    assert col(b, "a") == ["1"] and col(b, "b") == ["2"]
    assert col(b, ERROR_LABEL) == ["JSONParserErr"]
    assert col(b, ERROR_DETAILS_LABEL) == ["Malformed JSON error"]


def test_json_escapes_and_trailing_text():
    b = run([ast.JsonParser()], '{"msg":"a \\"q\\" \\u00e9"} trailing')
    assert col(b, "msg") == ['a "q" é']
    assert col(b, ERROR_LABEL) == [None]


def test_json_params():
    params = (
        ast.LabelExtraction("lat", "latency_ms"),
        ast.LabelExtraction("tags"),
        ast.LabelExtraction("agent", 'request.headers["User-Agent"]'),
        ast.LabelExtraction("first", "tags[0]"),
        ast.LabelExtraction("u", "user"),
        ast.LabelExtraction("missing", "no.such"),
        ast.LabelExtraction("level"),
    )
    b = run([ast.JsonParser(params)], API)
    assert col(b, "lat") == ["359.295"]
    assert col(b, "tags") == ['["x","y"]']
    assert col(b, "agent") == ["curl/8"]
    assert col(b, "first") == ["x"]
    assert col(b, "u") == ['{"id":"u-1","roles":["a"]}']
    assert col(b, "missing") == [""]
    assert col(b, "level_extracted") == ["warn"] and col(b, "level") == ["info"]
    assert not b.has_label("status")


def test_json_params_on_non_json_line():
    b = run([ast.JsonParser((ast.LabelExtraction("x"),))], "plain text")
    assert col(b, ERROR_LABEL) == ["JSONParserErr"]
    assert col(b, ERROR_DETAILS_LABEL) == [None]


LOGFMT = 'ts=2026 level=error caller=cart.go:88 msg="payment \\"declined\\"" dry_run status=500 empty= size=12KB'


def test_logfmt_basic():
    b = run([ast.LogfmtParser()], LOGFMT)
    assert col(b, "level_extracted") == ["error"]
    assert col(b, "msg") == ['payment "declined"']
    assert col(b, "caller") == ["cart.go:88"]
    assert col(b, "status") == ["500"]
    assert not b.has_label("dry_run") and not b.has_label("empty")


def test_logfmt_keep_empty():
    b = run([ast.LogfmtParser(keep_empty=True)], LOGFMT)
    assert col(b, "dry_run") == [""]
    assert col(b, "empty") == [""]


def test_logfmt_malformed_pairs_skipped_without_strict():
    line = 'ts=1 level=debug msg="retrying" attempt=2 foo=bar=buzz after=1'
    b = run([ast.LogfmtParser()], line)
    assert col(b, "attempt") == ["2"] and col(b, "after") == ["1"]
    assert not b.has_label("foo")
    assert col(b, ERROR_LABEL) == [None]


def test_logfmt_strict_error_position_in_bytes():
    line = "a=1 b=x=y c=2"
    b = run([ast.LogfmtParser(strict=True)], line)
    assert col(b, ERROR_LABEL) == ["LogfmtParserErr"]
    assert col(b, ERROR_DETAILS_LABEL) == ["logfmt syntax error at pos 8 : unexpected '='"]
    assert col(b, "a") == ["1"] and not b.has_label("c")
    _pairs, err = _first_error_pairs("é=1 b=x=y", True)
    assert err == "logfmt syntax error at pos 9 : unexpected '='"


def test_logfmt_plain_text_and_unterminated_quote():
    pairs, _ = _first_error_pairs("2026-11-01 01:58:49,041 INFO [w-4] x - processed id=3218 took=8.3s", False)
    assert [p for p in pairs if p[1]] == [("id", "3218"), ("took", "8.3s")]
    _, err = _first_error_pairs('a="open', True)
    assert err == "logfmt syntax error at pos 8 : unterminated quoted value"


def test_logfmt_params_fill_missing_with_empty():
    node = ast.LogfmtParser(params=(ast.LabelExtraction("method"), ast.LabelExtraction("st", "status")))
    b = LogfmtParserStage(node).process(batch("method=GET status=200", "other=1"))
    assert col(b, "method") == ["GET", ""]
    assert col(b, "st") == ["200", ""]
    assert not b.has_label("other")


def test_regexp_parser():
    node = ast.RegexpParser(r"(?P<level>[A-Z]+) +\[(?P<thread>[\w-]+)\](x)?(?P<opt>y)?")
    b = run([node], "2026 INFO [w-1] done", "nothing here")
    # a capture named like a stream label is `<name>_extracted` (the reference's 3.7 rule)
    assert col(b, "level") == ["info", "info"]
    assert col(b, "level_extracted") == ["INFO", None]
    assert col(b, "thread") == ["w-1", None]
    assert col(b, "opt") == ["", None]


def test_pattern_parser():
    node = ast.PatternParser('<ip> - <user> [<ts>] "<method> <uri> <_>" <status>')
    b = run([node], '10.0.0.1 - - [01/Nov/2026] "GET /x HTTP/1.1" 200 12', "garbage")
    assert col(b, "ip") == ["10.0.0.1", "garbage"]
    assert col(b, "method") == ["GET", None]
    assert col(b, "status") == ["200 12", None]


def test_unpack():
    lines = ('{"_entry":"original line","container":"exporter","app":"x","n":1}', '{"a":"b"}', "not json")
    b = run([ast.UnpackParser()], *lines)
    assert b.line.to_pylist() == ["original line", '{"a":"b"}', "not json"]
    assert col(b, "container") == ["exporter", None, None]
    assert col(b, "app_extracted") == ["x", None, None]
    assert not b.has_label("n") and not b.has_label("a")
    assert col(b, ERROR_LABEL) == [None, None, "JSONParserErr"]
    assert col(b, ERROR_DETAILS_LABEL)[2] == "expecting json object(6), but it is not"


def test_series_after_parse():
    out = series(run([ast.LogfmtParser(keep_empty=True)], "a=1 flag", "a=1 flag"))
    assert list(out) == ['{a="1", app="checkout", env="prod", flag="", level="info"}']
