"""Stage build errors read as the reference's: `parse error : stage '<stage>' : <error>`, the
first found in the order it builds the stages (engine/stages pipeline.check_stages)."""

import re

import pytest

from svclog.logql import parser
from svclog.logql.stages import build_pipeline, check_stages
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL
from svclog.model import ParseError
from tests.logql.stages.helpers import col, run


def _error(query: str) -> str:
    with pytest.raises(ParseError) as info:
        check_stages(parser.parse(query).stages)
    return info.value.message


def test_template_errors_name_their_stage():
    assert _error('{a="b"} | line_format "{{.x"') == (
        "parse error : stage '| line_format \"{{.x\"' : invalid line template: template: line:1: unclosed action"
    )
    assert _error('{a="b"} | label_format a="{{.x", b=c') == (
        "parse error : stage '| label_format a=\"{{.x\",b=c' : "
        "invalid template for label 'a': template: label:1: unclosed action"
    )
    assert _error('{a="b"} | addr=ip("foo")') == 'parse error : stage \'| addr=ip("foo")\' : ip: invalid pattern: "foo"'


def test_first_error_in_the_reference_build_order():
    # a run's line filters build first, but not across the line_format that ends the run
    assert "line_format" in _error('{a="b"} | line_format "{{.x" |~ "(a"')
    assert "|~" in _error('{a="b"} | label_format a="{{.x" |~ "(a"')
    # stages build in written order otherwise
    assert "label_format" in _error('{a="b"} | label_format a="{{.x" | line_format "{{.x"')


def test_build_pipeline_checks_too():
    with pytest.raises(ParseError, match=re.escape("parse error : stage '| line_format")):
        build_pipeline(parser.parse('{a="b"} | line_format "{{.x"').stages)


def test_label_format_template_is_named_label():
    stages = list(parser.parse('{a="b"} | label_format a="{{ index .app 100 }}"').stages)
    details = col(run(stages, "x"), ERROR_DETAILS_LABEL)
    assert details[0].startswith('template: label:1:3: executing "label" at <index .app 100>')


@pytest.mark.parametrize(
    "expression, error",
    [
        ("b c", "syntax error: unexpected KEY"),
        ('\\"x\\" b', "syntax error: unexpected KEY"),
        ("b.c", "unexpected char ."),
        ("b-c", "unexpected char -"),
        ("", "syntax error: unexpected $end, expecting STRING or KEY"),
        ("[b", "syntax error: unexpected $end, expecting STRING or KEY"),
        ("1b", "syntax error: unexpected $end, expecting STRING or KEY"),
    ],
)
def test_logfmt_expressions_parse_as_the_reference_parses_them(expression: str, error: str):
    text = expression.replace('\\"', '"')
    assert _error(f'{{a="b"}} | logfmt a="{expression}"') == (
        f"parse error : stage '| logfmt a=\"{expression}\"' : cannot parse expression [{text}]: {error}"
    )


@pytest.mark.parametrize("expression", ["b", " b ", 'b \\"y\\"', '\\"x\\" \\"y\\"', '\\"x'])
def test_logfmt_expressions_the_reference_accepts(expression: str):
    check_stages(parser.parse(f'{{a="b"}} | logfmt a="{expression}"').stages)
