"""Regex filters as the reference builds them: Go's parse tree, its literal rewrites, their quirks."""

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from svclog.chunk.regex_literals import required_literals
from svclog.logql.goregexp.parser import parse_perl
from svclog.logql.goregexp.syntax import FOLD_CASE, GoRegexError, Node, Op, to_re2
from svclog.logql.stages.regex_filter import (
    ALWAYS,
    Contains,
    Equal,
    Exists,
    Not,
    Or,
    Regex,
    filter_mask,
    regex_filter,
)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def shape(re: Node) -> str:
    """A compact form of Go's tree: Op[runes](subs), /i when case-folded."""
    name = re.op.name.lower() + ("/i" if re.flags & FOLD_CASE and re.op == Op.LITERAL else "")
    if re.op == Op.LITERAL:
        name += repr("".join(map(chr, re.runes)))
    elif re.op == Op.CHAR_CLASS:
        name += "[" + ",".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in zip(re.runes[::2], re.runes[1::2])) + "]"
    return name + ("(" + " ".join(shape(s) for s in re.subs) + ")" if re.subs else "")


@pytest.mark.parametrize(
    ("pattern", "tree"),
    [
        # common prefixes are factored out of alternations, single characters become a class
        ("bar|b|buzz", "concat(literal'b' alternate(literal'ar' empty_match literal'uzz'))"),
        ("a|b", "char_class[a-b]"),
        ("ab|ac", "concat(literal'a' char_class[b-c])"),
        ("abc|abd|aef", "concat(literal'a' alternate(concat(literal'b' char_class[c-d]) literal'ef'))"),
        # [a] is a literal and [Aa] a case-folded one, but [Kk] stays a class (k folds to the Kelvin sign)
        ("x[a]y", "literal'xay'"),
        ("[Aa][Bb]", "literal/i'AB'"),
        ("[kK]", "char_class[K-K,k-k]"),
        ("(?i)abc", "literal/i'ABC'"),
        # a group's lone [^\n] is "anything but a newline", a bare one stays a class
        ("(?:[^\\n])*x", "concat(star(any_char_not_nl) literal'x')"),
        ("[^\\n]*x", "concat(star(char_class[\x00-\t,\x0b-\U0010ffff]) literal'x')"),
        # Simplify spells counted repetitions out
        ("a{2}", "concat(literal'a' literal'a')"),
        ("x.{0}", "concat(literal'x' empty_match)"),
        ("a{2,}", "concat(literal'a' plus(literal'a'))"),
        # a leading literal is compared by runes only: the [Aa] leg loses its case folding
        (
            "A[^\\n]b|[Aa]",
            "concat(literal'A' alternate(concat(char_class[\x00-\t,\x0b-\U0010ffff] literal'b') empty_match))",
        ),
    ],
)
def test_go_parse_tree(pattern, tree):
    assert shape(parse_perl(pattern)) == tree


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("a)|(b", "unexpected ): `a)|(b`"),
        ("a**", "invalid nested repetition operator: `**`"),
        ("a{1001}", "invalid repeat count: `{1001}`"),
        ("(?P=x)", "invalid or unsupported Perl syntax: `(?P`"),
        ("[z-a]", "invalid character class range: `z-a`"),
        ("\\1", "invalid escape sequence: `\\1`"),
        ("\\x{zz}", "invalid escape sequence: `\\x{z`"),
        ("(a{2}){501}", "invalid repeat count: `{501}`"),
    ],
)
def test_go_parse_errors(pattern, message):
    with pytest.raises(GoRegexError) as err:
        parse_perl(pattern)
    assert str(err.value) == "error parsing regexp: " + message


@pytest.mark.parametrize(
    ("pattern", "label", "found"),
    [
        ("miss", True, Equal(b"miss", False)),
        ("miss", False, Contains(b"miss", False)),
        ("miss.*", True, Contains(b"miss", False)),
        (".*miss.*", True, Contains(b"miss", False)),
        ("(miss)", True, Equal(b"miss", False)),
        ("", True, ALWAYS),
        (".*", True, ALWAYS),
        (".+", True, Exists()),
        ("(?i)ABC", True, Equal(b"abc", True)),
        ("foo|bar", True, Or(Equal(b"foo", False), Equal(b"bar", False))),
        ("bar|b|buzz", True, Or(Or(Contains(b"bar", False), Contains(b"b", False)), Contains(b"buzz", False))),
        # an always-true leg is dropped from an `or`
        ("cache miss|", False, Contains(b"cache miss", False)),
        ("JSON.*|", True, Contains(b"JSON", False)),
        # a case-sensitive prefix and a folded leg: no literal filter
        ("f|f(?i)oo", False, Regex("(?:(?:\\x{66})(?:(?:)|(?i:\\x{4f}\\x{4f})))")),
        # two literals, a class: real regexes (anchored for labels)
        ("a.*b", True, Regex("^(?:(?:(?:\\x{61})(?:(?-s:.))*(?:\\x{62})))$")),
        ("a|b", False, Regex("(?:(?:)[\\x{61}-\\x{62}])")),
        # legs extending one literal share its buffer: "qux" overwrites "bar" (8 bytes of capacity)...
        ("foo(?:bar.*|qux.*)", False, Or(Contains(b"fooqux", False), Contains(b"fooqux", False))),
        # ...unless the first leg does not fit the buffer and gets one of its own
        ("abcdef(?:bar.*|qux.*)", False, Or(Contains(b"abcdefbar", False), Contains(b"abcdefqux", False))),
        ("a(?:bcdefgh.*|qux.*)", False, Or(Contains(b"aquxefgh", False), Contains(b"aqux", False))),
    ],
)
def test_reference_filter(pattern, label, found):
    assert regex_filter(pattern, label=label, negate=False) == found


def test_negated_filter_is_the_negation():
    assert regex_filter("miss.*", label=True, negate=True) == Not(Contains(b"miss", False))
    assert regex_filter("", label=True, negate=True) == Not(ALWAYS)


def hits(found, *values):
    return filter_mask(found, pa.array(values, pa.string())).to_pylist()


def test_case_folded_contains_follows_the_reference():
    found = regex_filter("(?i)ok", label=False, negate=False)
    # the Kelvin sign lowers to k, but a match cannot start on it (first bytes are compared first)
    assert hits(found, "OK", "xoK", "o\u212a", "\u212a") == [True, True, True, False]
    equal = regex_filter("(?i)ok", label=True, negate=False)
    assert hits(equal, "OK", "oK", "o\u212a", "ok!") == [True, True, False, False]


def test_case_folded_non_ascii_needles_run_per_value():
    # U+023A lowers to the longer U+2C65: the reference compares rune by rune, but only where
    # as many bytes as the needle's are left
    found = regex_filter("(?i)x\u2c65", label=False, negate=False)
    assert found == Contains("x\u2c65".encode(), True)
    assert hits(found, "X\u023a", "x\u2c65", "X\u023ay", "zzX\u023ay", "x") == [False, True, True, True, False]
    equal = regex_filter("(?i)x\u2c65", label=True, negate=False)
    assert hits(equal, "x\u023ay", "x\u023a", "X\u2c65") == [True, False, True]


def test_label_regexes_do_not_match_newlines_with_a_dot():
    assert hits(regex_filter("a.b", label=True, negate=False), "a\nb", "axb") == [False, True]


# ---------------------------------------------------------------- properties

PIECES = "a b ab foo x . .* .+ | ( ) (?: [ab] [^a] \\d ? * {2} ^ $".split()
PROBES = ["", "a", "b", "ab", "ba", "foo", "xfoo", "a\nb", "aab", "x", "1", "fooab", "abab", "zz"]


@st.composite
def patterns(draw):
    text = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=8)))
    try:
        parse_perl(text)
        pc.match_substring_regex(pa.array([""]), text)
    except (GoRegexError, pa.ArrowInvalid):
        return "a"
    return text


@FAST
@given(patterns())
def test_rendered_tree_matches_what_the_pattern_matches(pattern):
    # without case folding Go's rewrites keep the meaning: the rendered tree is the same regex
    values = pa.array(PROBES)
    rendered = to_re2(parse_perl(pattern))
    assert rendered is not None
    want = pc.match_substring_regex(values, pattern).to_pylist()
    assert pc.match_substring_regex(values, rendered).to_pylist() == want


@FAST
@given(patterns())
def test_kept_lines_hold_the_literals_block_probes_rely_on(pattern):
    # chunk/pushdown.py skips blocks without the pattern's required literals
    found = regex_filter(pattern, label=False, negate=False)
    needed = required_literals(pattern)
    for line, kept in zip(PROBES, hits(found, *PROBES)):
        assert not kept or all(literal in line for literal in needed), (pattern, line)
