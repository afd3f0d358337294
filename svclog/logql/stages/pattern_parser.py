"""`| pattern "<ip> - <_> [<ts>]"` parser and the `|>` / `!>` pattern line filters.

A pattern is literals and captures (`<name>`, or `<_>` which captures nothing).
Matching follows the reference: the first literal must be a prefix, each later
literal is found at its first occurrence, and a missing literal ends matching with
the rest of the line as the last capture (so a partial match still sets labels).
The filter form (`|>`) is stricter: no empty captures and a trailing literal must
end the line. Both walk each line with `str.find`; a greedy first-occurrence walk
has no regex equivalent, so it is a per-entry loop over distinct lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from svclog.logql import ast
from svclog.logql.stages.batch import EXTRACTED_SUFFIX, LogBatch
from svclog.model import ParseError

_CAPTURE = re.compile(r"<([a-zA-Z_][a-zA-Z0-9_]*)>")


@dataclass(frozen=True)
class Pattern:
    parts: tuple[tuple[bool, str], ...]  # (is_capture, literal text or capture name)

    @property
    def names(self) -> list[str]:
        return [text for cap, text in self.parts if cap and text != "_"]

    @classmethod
    def parse(cls, text: str, *, need_capture: bool = True) -> Pattern:
        parts: list[tuple[bool, str]] = []
        pos = 0
        for m in _CAPTURE.finditer(text):
            if m.start() > pos:
                parts.append((False, text[pos : m.start()]))
            parts.append((True, m.group(1)))
            pos = m.end()
        if pos < len(text):
            parts.append((False, text[pos:]))
        pattern = cls(tuple(parts))
        pattern._validate(need_capture)
        return pattern

    def _validate(self, need_capture: bool) -> None:
        if need_capture and not self.names:
            raise ParseError("at least one capture is required")
        for (a, x), (b, y) in zip(self.parts, self.parts[1:]):
            if a and b:
                raise ParseError(f"found consecutive capture '<{x}><{y}>': invalid expression")
        seen: set[str] = set()
        for name in self.names:
            if name in seen:
                raise ParseError(f"duplicate capture name ({name}): invalid expression")
            seen.add(name)

    def matches(self, line: str) -> list[str]:
        """Captured values of the named captures, in order; fewer on a partial match."""
        if not line or not self.parts:
            return []
        parts = list(self.parts)
        if not parts[0][0]:
            if not line.startswith(parts[0][1]):
                return []
            line = line[len(parts[0][1]) :]
            parts = parts[1:]
        out: list[str] = []
        while parts:
            (_, name), rest = parts[0], parts[1:]
            if not rest:
                if name != "_":
                    out.append(line)
                return out
            literal = rest[0][1]
            parts = rest[1:]
            i = line.find(literal)
            if i < 0:
                if name != "_":
                    out.append(line)
                return out
            if name != "_":
                out.append(line[:i])
            line = line[i + len(literal) :]
        return out

    def test(self, line: str) -> bool:
        """The `|>` filter's match test."""
        if not line or not self.parts:
            return not line and not self.parts
        off = 0
        for i, (cap, literal) in enumerate(self.parts):
            if cap:
                continue
            j = line.find(literal, off)
            if j < 0 or (i != 0 and j == off):
                return False
            off = j + len(literal)
        return self.parts[-1][0] == (off != len(line))


def pattern_line_mask(lines: pa.Array, text: str) -> pa.Array:
    """`|> "pattern"` per line (a filter pattern needs no named capture)."""
    pattern = Pattern.parse(text, need_capture=False)
    return pa.array([pattern.test(line) if line is not None else False for line in lines.to_pylist()], pa.bool_())


class PatternParserStage:
    def __init__(self, node: ast.PatternParser):
        self.pattern = Pattern.parse(node.pattern)

    def process(self, batch: LogBatch) -> LogBatch:
        names = self.pattern.names
        columns: list[list[str | None]] = [[None] * len(batch) for _ in names]
        for row, line in enumerate(batch.line.to_pylist()):
            for j, value in enumerate(self.pattern.matches(line or "")):
                columns[j][row] = value
        for name, values in zip(names, columns):
            target = name + EXTRACTED_SUFFIX if name in batch.origin else name
            batch.set_parser_label(target, pa.array(values, pa.string()), keep_parsed=True)
        return batch
