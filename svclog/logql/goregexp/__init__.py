"""Go's regexp/syntax, as far as LogQL needs it: the tree Go's parser builds for a pattern.

The reference decides how to run a regex filter from that tree's shape, and reports a bad
label matcher's regex with Go's parse error for the value alone, so both follow Go's parser
step by step (parser.py, alternation.py, classes.py) rather than RE2's. Pure: no I/O.
"""

from svclog.logql.goregexp.parser import parse_perl
from svclog.logql.goregexp.syntax import FOLD_CASE, GoRegexError, Node, Op, to_re2

__all__ = ["FOLD_CASE", "GoRegexError", "Node", "Op", "parse_perl", "to_re2"]
