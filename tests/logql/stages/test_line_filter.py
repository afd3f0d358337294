import pytest

from svclog.logql import ast
from svclog.logql.stages.line_filter import LineFilterStage
from svclog.model import ParseError
from tests.logql.stages.helpers import batch, run

LINES = ("GET /a 200", "post /b 500", "GET /c 503 deadlock", "Ünïcode 漢字 line")


def lines(op, *values, ip=False):
    node = ast.LineFilter(op, tuple(ast.FilterValue(v, ip) for v in values))
    return run([node], *LINES).line.to_pylist()


def test_contains_is_case_sensitive():
    assert lines("|=", "GET") == ["GET /a 200", "GET /c 503 deadlock"]
    assert lines("|=", "get") == []


def test_contains_or():
    assert lines("|=", "/a", "/b") == ["GET /a 200", "post /b 500"]


def test_not_contains_or_means_none_of_them():
    assert lines("!=", "/a", "/b") == ["GET /c 503 deadlock", "Ünïcode 漢字 line"]


def test_regex_unanchored_and_case_insensitive_flag():
    assert lines("|~", "5\\d\\d") == ["post /b 500", "GET /c 503 deadlock"]
    assert lines("|~", "(?i)post") == ["post /b 500"]
    assert lines("!~", "(?i)get|post") == ["Ünïcode 漢字 line"]


def test_regex_or_and_unicode_class():
    assert lines("|~", "deadlock", "^post") == ["post /b 500", "GET /c 503 deadlock"]
    assert lines("|~", "\\p{Han}+") == ["Ünïcode 漢字 line"]


def test_empty_contains_keeps_everything():
    assert len(lines("|=", "")) == 4


def test_invalid_regex_is_a_parse_error():
    with pytest.raises(ParseError):
        LineFilterStage(ast.LineFilter("|~", (ast.FilterValue("(unclosed"),)))


def test_multiline_dotall():
    b = batch("failed: x\n\tat Thread.run", "failed: x")
    node = ast.LineFilter("|~", (ast.FilterValue("(?s)failed:.*Thread\\.run"),))
    assert LineFilterStage(node).process(b).line.to_pylist() == ["failed: x\n\tat Thread.run"]
    plain = ast.LineFilter("|~", (ast.FilterValue("failed:.*Thread"),))
    assert LineFilterStage(plain).process(batch("failed: x\nThread")).line.to_pylist() == []


def test_pattern_filter():
    b = batch('ts=1 level=error msg="x"', "ts=2 level=info msg=y", "level=error")
    node = ast.LineFilter("|>", (ast.FilterValue("<_> level=error <_>"),))
    assert LineFilterStage(node).process(b).line.to_pylist() == ['ts=1 level=error msg="x"']
    neg = ast.LineFilter("!>", (ast.FilterValue("<_> level=info <_>"),))
    assert len(LineFilterStage(neg).process(batch("a level=info b", "a level=error b"))) == 1


def test_ip_line_filter():
    b = batch("10.0.4.159 - - GET", "2001:db8::241 - - GET", "fd00::1 x", "client=10.1.0.1", "no ip")
    cidr = ast.LineFilter("|=", (ast.FilterValue("10.0.0.0/16", True),))
    assert LineFilterStage(cidr).process(b).line.to_pylist() == ["10.0.4.159 - - GET"]
    v6 = ast.LineFilter("|=", (ast.FilterValue("2001:db8::/32", True),))
    assert LineFilterStage(v6).process(b).line.to_pylist() == ["2001:db8::241 - - GET"]
    not_v4 = ast.LineFilter("!=", (ast.FilterValue("10.0.0.0/8", True),))
    assert LineFilterStage(not_v4).process(b).line.to_pylist() == ["2001:db8::241 - - GET", "fd00::1 x", "no ip"]


def test_literal_regex_matches_exactly_what_a_substring_search_does():
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from svclog.logql.stages.line_filter import literal_regex

    rnd = random.Random(5)
    alphabet = list("ab.*+?()[]{}|^$\\/\"' \t\n\x00é€😀-=_0:")
    lines = pa.array(["".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 12))) for _ in range(2000)])
    for _ in range(500):
        literal = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 3)))
        assert (
            pc.match_substring_regex(lines, literal_regex(literal)).to_pylist()
            == pc.match_substring(lines, literal).to_pylist()
        ), repr(literal)
