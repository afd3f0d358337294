"""Template functions and rendering have bounded output: amplifiers fail fast naming the limit."""

import time

import pytest

from svclog.logql.template import Template
from svclog.logql.template.limits import MAX_OUTPUT, MAX_RANGE_ITERATIONS, TemplateLimitError
from svclog.model import LimitError

BIG = 100_000_000


def render(text: str, labels=None, line: str = "line") -> str:
    return Template.parse(text).render(labels or {}, line, 0)


@pytest.mark.parametrize(
    "text",
    [
        f'{{{{ repeat {BIG} "x" }}}}',
        f'{{{{ alignLeft {BIG} "x" }}}}',
        f'{{{{ alignRight {BIG} "x" }}}}',
        f'{{{{ indent {BIG} "x" }}}}',
        '{{ nindent 1000 (repeat 10000 "\\n") }}',
        '{{ replace "" (repeat 1000 "y") (repeat 100000 "x") }}',
        '{{ Replace (repeat 100000 "x") "" (repeat 1000 "y") -1 }}',
        '{{ regexReplaceAll "(.)" (repeat 11000 "a") "' + "$1" * 100 + '" }}',
        '{{ printf "%10000000d" 5 }}',
        '{{ printf "%.9999999f" 1.5 }}',
        f"{{{{ range {BIG} }}}}{{{{ end }}}}",
        "{{ range 60000 }}" + "x" * 100 + "{{ end }}",
        '{{ repeat 1000000 "x" }}{{ repeat 1000000 "x" }}',
    ],
)
def test_amplifiers_fail_fast_with_a_limit_error(text):
    began = time.perf_counter()
    with pytest.raises(TemplateLimitError) as raised:
        render(text)
    assert time.perf_counter() - began < 2.0
    assert isinstance(raised.value, LimitError) and raised.value.status == 400  # a 4xx, not a per-line error
    message = str(raised.value)
    assert str(MAX_OUTPUT) in message or str(MAX_RANGE_ITERATIONS) in message


def test_go_refuses_huge_printf_widths_itself():
    """fmt's parsenum/intFromArg: beyond a million is no width at all."""
    assert render('{{ printf "%099999999d" 5 }}') == "%!(NOVERB)%!(EXTRA int=5)"
    assert render('{{ printf "%*d" 100000000 5 }}') == "%!(BADWIDTH)5"
    assert render('{{ printf "%5d|%-4s|%.2f|%*d" 3 "ab" 1.234 3 7 }}') == "    3|ab  |1.23|  7"


def test_within_the_bounds_nothing_changes():
    assert render('{{ repeat 3 "ab" }}') == "ababab"
    assert render("{{ range 3 }}{{.}}{{ end }}") == "012"
    assert render(f"{{{{ range {BIG} }}}}{{{{ if eq . 3 }}}}{{{{ break }}}}{{{{ end }}}}x{{{{ end }}}}") == "xxx"
    assert len(render(f'{{{{ repeat {MAX_OUTPUT} "x" }}}}')) == MAX_OUTPUT
    assert render('{{ regexReplaceAll "(?P<x>a)(b)?" "abaa" "[${x}|$2|$3|$0]" }}') == "[a|b||ab][a|||a][a|||a]"
    assert render('{{ replace "a" "bb" "aXa" }}|{{ Replace "aaa" "a" "c" 2 }}') == "bbXbb|cca"
    assert render('{{ indent 2 "a\\nb" }}') == "  a\n  b"


def test_regexp_matching_is_linear_in_the_text():
    """Go's match order from one finditer pass (a search per match re-encoded the text: quadratic)."""
    began = time.perf_counter()
    assert render('{{ count "(.)" (repeat 200000 "a") }}') == "200000"
    assert time.perf_counter() - began < 5.0
    assert render('{{ regexReplaceAll "a*" "baaac" "-" }}|{{ regexReplaceAll "(a|)" "aab" "-" }}') == "-b-c-|--b-"
    assert render('{{ regexReplaceAll "é*" "éxé" "-" }}|{{ regexReplaceAll "$" "ab" "-" }}') == "-x-|ab-"
