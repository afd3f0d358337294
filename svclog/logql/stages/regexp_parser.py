"""`| regexp "(?P<name>...)"`: named groups become labels.

A matching line sets every named group (a group that did not take part is ""); a
line that does not match passes through unchanged. A group named like a stream label
(or the entry's structured metadata) is stored as `<name>_extracted`, as every parser
of the reference's 3.7 release does. `pc.extract_regex` (RE2) does the
work; it rejects unnamed groups, so those are rewritten as non-capturing first.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages.batch import EXTRACTED_SUFFIX, LogBatch
from svclog.logql.stages.json_parser import sanitize_key
from svclog.model import ParseError, is_valid_label_name

_NAMED = re.compile(r"\(\?P?<([^>]*)>")


def uncapture_unnamed(pattern: str) -> str:
    """Turn every unnamed `(` group into `(?:`, leaving escapes and classes alone."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
        elif ch == "[":
            in_class = True
            out.append(ch)
            i += 1
            # A `]` right after `[` or `[^` is a literal member.
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):
                out.append("]")
                i += 1
            continue
        elif ch == "(" and not pattern.startswith("?", i + 1):
            out.append("(?:")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class RegexpParserStage:
    def __init__(self, node: ast.RegexpParser):
        names = _NAMED.findall(node.pattern)
        if not names:
            raise ParseError("at least one named capture must be supplied")
        seen: set[str] = set()
        for name in names:
            if not is_valid_label_name(name):
                raise ParseError(f"invalid extracted label name '{name}'")
            if name in seen:
                raise ParseError(f"duplicate extracted label name '{name}'")
            seen.add(name)
        self.names = names
        self.pattern = uncapture_unnamed(node.pattern)
        try:
            pc.extract_regex(pa.array([""], pa.string()), self.pattern)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise ParseError(f"error parsing regexp: {err}") from err

    def process(self, batch: LogBatch) -> LogBatch:
        found = pc.extract_regex(batch.line, self.pattern)
        matched = pc.is_valid(found)
        for name in self.names:
            values = pc.if_else(matched, pc.struct_field(found, name), pa.scalar(None, pa.string()))
            key = sanitize_key(name)
            batch.set_parser_label(key + EXTRACTED_SUFFIX if key in batch.origin else key, values, keep_parsed=True)
        return batch
