import pytest

from svclog.logql.stages.ip import parse_ip_pattern, text_contains_ip
from svclog.logql.stages.pattern_parser import Pattern
from svclog.model import ParseError


@pytest.mark.parametrize(
    "pattern,text,expected",
    [
        ("192.168.0.1", "from 192.168.0.1 ok", True),
        ("192.168.0.1", "from 192.168.0.11 ok", False),
        ("192.168.0.0/16", "x=192.168.5.15", True),
        ("192.168.0.0/22", "192.168.6.32", False),
        ("203.0.113.1-203.0.113.40", "203.0.113.21 - -", True),
        ("203.0.113.1-203.0.113.40", "203.0.113.41 - -", False),
        ("2001:db8::/32", "2001:db8:85a3::8a2e:370:c26 - -", True),
        ("fd00::/8", "fd00::348", True),
        ("fd00::/8", "10.0.0.1", False),
        ("::1", "addr ::1 here", True),
    ],
)
def test_ip_patterns(pattern, text, expected):
    assert text_contains_ip(text, parse_ip_pattern(pattern)) is expected


def test_invalid_ip_pattern():
    with pytest.raises(ParseError):
        parse_ip_pattern("not-an-ip")
    with pytest.raises(ParseError):
        parse_ip_pattern("10.0.0.9-10.0.0.1")


def test_pattern_matches_partial_and_unnamed():
    p = Pattern.parse("<ip> - <user> [<ts>]")
    assert p.names == ["ip", "user", "ts"]
    assert p.matches("1.2.3.4 - bob [now] rest") == ["1.2.3.4", "bob", "now"]
    # A missing literal ends matching; the rest of the line is the last capture.
    assert p.matches("1.2.3.4 - bob") == ["1.2.3.4", "bob"]
    assert Pattern.parse("x <a>").matches("y 1") == []
    assert Pattern.parse('<_> "<method> <_>').matches('1.2.3.4 "GET /x HTTP"') == ["GET"]


def test_pattern_test_rules():
    p = Pattern.parse("<_> bar", need_capture=False)
    assert not p.test("foo bar baz")
    assert Pattern.parse("<_> baz", need_capture=False).test("foo bar baz")
    assert Pattern.parse("foo <_>", need_capture=False).test("foo bar baz")
    assert not Pattern.parse("<_> bar <_>", need_capture=False).test(" bar ")
    assert Pattern.parse("<_>bar<_>", need_capture=False).test(" bar ")


def test_pattern_validation():
    with pytest.raises(ParseError):
        Pattern.parse("<a><b>")
    with pytest.raises(ParseError):
        Pattern.parse("<a> <a>")
    with pytest.raises(ParseError):
        Pattern.parse("no captures")
