"""`| json` has bounded output and depth: no RecursionError (a 500), no quadratic label names."""

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from svclog.logql import ast
from svclog.logql.stages.json_parser import MAX_DEPTH, MAX_EXTRACTED, TOO_DEEP, JsonParserStage, parse_json_line
from svclog.model import LimitError
from tests.logql.stages.helpers import batch, col


@pytest.mark.parametrize(
    "line",
    [
        '{"a":' * 5000 + "1" + "}" * 5000,  # valid, deeper than the recursive walk allows
        '{"a":' * 50000 + "1" + "}" * 50000,  # too deep even for the strict decoder: the scan path
        '{"a":[' * 20000 + "]}" * 20000,
    ],
)
def test_deep_nesting_is_a_parser_error_not_a_crash(line):
    began = time.perf_counter()
    labels, error = parse_json_line(line)
    assert error == TOO_DEEP and labels == {}
    assert time.perf_counter() - began < 2.0


def test_nesting_within_the_bound_flattens():
    line = '{"a":' * (MAX_DEPTH - 1) + '{"b":1}' + "}" * (MAX_DEPTH - 1)
    labels, error = parse_json_line(line)
    assert error is None and labels == {"_".join(["a"] * (MAX_DEPTH - 1) + ["b"]): "1"}


def test_quadratic_label_names_fail_the_query_naming_the_limit():
    obj: dict = {f"l{i}": "v" for i in range(2000)}
    for _ in range(60):
        obj = {"k" * 3000: obj}
    with pytest.raises(LimitError, match=str(MAX_EXTRACTED)):
        parse_json_line(json.dumps(obj))


def test_malformed_lines_keep_the_reference_details():
    assert parse_json_line('{"a":{"b":1,"c":"x"},"d":tru') == ({"a_b": "1", "a_c": "x"}, "Unknown value type")
    assert parse_json_line('{"a":"{{{{","b":{"c":2}}') == ({"a": "{{{{", "b_c": "2"}, None)


NOT_OBJECTS_AND_OBJECTS = [
    'ts=1 level=info msg="done" duration=3ms',
    "",
    "   ",
    " \t{}",
    '  {"a": 1}',
    '{"a":1, bad',
    "[1, 2]",
    "  [" * 40 + "]" * 40,
    "[" * MAX_DEPTH,  # as many opening brackets as MAX_DEPTH: told apart in the one pass
    "[" * (MAX_DEPTH + 1),  # no object, but deeper than MAX_DEPTH: the nesting error, not the object one
    "x" + "[]" * (MAX_DEPTH + 5),  # more brackets than MAX_DEPTH, nested one deep: the object error
    'level=info msg="[brackets] {inside}"',
    '10.1.2.3 - - [30/Nov/2026:04:30:00 +0000] "GET /a HTTP/1.1" 200 512 "-" "curl/8" rt=0.001',
    "x" + "[" * 200,
    '"a string"',
    "null",
    "\u00e9t\u00e9=1",
    '{"a":{"b":"}}}"}, "c": [1, {"d": true}]}',
]


@pytest.mark.parametrize("only", [None, frozenset(), frozenset({"a", "a_b"})])
def test_the_stage_answers_per_line_parsing_for_lines_that_are_no_objects(only):
    """The stage tells lines that are no object apart in one pass: labels and errors as parse_json_line's."""
    lines = NOT_OBJECTS_AND_OBJECTS * 3
    out = JsonParserStage(ast.JsonParser(params=()), only=only).process(batch(*lines))
    expected = [parse_json_line(line) for line in lines]
    assert col(out, "__error_details__") == [error for _, error in expected]
    assert col(out, "__error__") == [None if error is None else "JSONParserErr" for _, error in expected]
    for name in {name for labels, _ in expected for name in labels if only is None or name in only}:
        assert col(out, name) == [labels.get(name) for labels, _ in expected], name


_LINE_CHARS = st.sampled_from(list(' \t{}[]"\\:,=ax1'))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_LINE_CHARS, max_size=90) | st.builds(lambda n: "[" * n, st.integers(60, 70)), max_size=12))
def test_lines_told_apart_in_one_pass_get_the_per_line_answers(lines):
    """Random lines heavy in brackets and quotes: errors and labels as parse_json_line's."""
    out = JsonParserStage(ast.JsonParser(params=()), only=frozenset()).process(batch(*lines))
    expected = [parse_json_line(line) for line in lines]
    assert col(out, "__error_details__") == [error for _, error in expected]
