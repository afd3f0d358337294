"""json path expressions: answers and error texts recorded from the reference (v3.7.6) through
`{app="x"} | json v="<path>"`."""

import pytest

from svclog.logql.stages.json_path import parse_json_path
from svclog.model import ParseError

READ = [
    ("a", ["a"]),
    ("a.b[0]", ["a", "b", 0]),
    ('a["b"].c[1]', ["a", "b", "c", 1]),
    ('["app-name"]', ["app-name"]),
    ("[0]", [0]),
    (" a", ["a"]),
    ("a [0]", ["a", 0]),
    ("a. b", ["a", "b"]),
    ("a[ 0 ]", ["a", 0]),
    ("a.b.c_d9", ["a", "b", "c_d9"]),
]

REFUSED = [
    ("a-b", "unexpected char -"),  # a lexer error where a path may end is the answer
    ("a@b", "unexpected char @"),
    ("a\\tb", "unexpected char \\"),
    ("a.0", "syntax error: unexpected $end, expecting FIELD"),  # an index lexed at the end fails
    ("0", "syntax error: unexpected $end, expecting LSB or FIELD"),
    ("", "syntax error: unexpected $end, expecting LSB or FIELD"),
    ("é", "syntax error: unexpected $end, expecting LSB or FIELD"),  # the parser's error replaces the lexer's
    ("a[", "syntax error: unexpected $end, expecting STRING or INDEX"),
    ("a[0", "syntax error: unexpected $end, expecting STRING or INDEX"),
    ("a[0.5]", "syntax error: unexpected $end, expecting STRING or INDEX"),
    ("a[-1]", "syntax error: unexpected $end, expecting STRING or INDEX"),
    ("a[99999999999999999999]", "syntax error: unexpected $end, expecting STRING or INDEX"),
    ("a[x]", "syntax error: unexpected FIELD, expecting STRING or INDEX"),
    ("a[]", "syntax error: unexpected RSB, expecting STRING or INDEX"),
    ("a]", "syntax error: unexpected RSB"),
    ('["a"]]', "syntax error: unexpected RSB"),
    ("a b", "syntax error: unexpected FIELD"),
    ("a[0]b", "syntax error: unexpected FIELD"),
    (".a", "syntax error: unexpected DOT, expecting LSB or FIELD"),
    ('"a"', "syntax error: unexpected STRING, expecting LSB or FIELD"),
    ("a.", "syntax error: unexpected $end, expecting FIELD"),
    ("a..b", "syntax error: unexpected DOT, expecting FIELD"),
    ('["a]', "syntax error: unexpected $end, expecting RSB"),  # a key ends at `]` as well
    ('["a"', "syntax error: unexpected $end, expecting RSB"),
    ('a["b\\"c"]', "syntax error: unexpected FIELD, expecting RSB"),  # no escapes in keys
]


@pytest.mark.parametrize(("expr", "path"), READ)
def test_paths_read_as_the_reference_reads_them(expr, path):
    assert parse_json_path(expr) == path


@pytest.mark.parametrize(("expr", "error"), REFUSED)
def test_malformed_paths_fail_with_the_reference_error(expr, error):
    with pytest.raises(ParseError) as raised:
        parse_json_path(expr)
    assert str(raised.value) == f"cannot parse expression [{expr}]: {error}"
