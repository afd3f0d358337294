"""A tiny script format for engine tests, in the spirit of Prometheus' promqltest.

    # comment
    load
      {app="api", env="prod"} 10 "GET /a"                 # seconds, a line
      {app="api"} 20.5 "GET /b" {trace_id="t1"}          # with structured metadata
      {app="web"} 0+10x5 "tick"                           # 0, 10, ... 50 (six entries)

    eval instant at 60 count_over_time({app="api"}[1m])
      {app="api", env="prod"} 1                           # one line per expected sample

    eval range from 0 to 120 step 60 sum(count_over_time({app="api"}[1m]))
      {} _ 2 0                                            # `_` = no sample at that step

    eval logs from 0 to 100 limit 2 direction forward interval 5 {app="api"}
      {app="api", env="prod"} 10 "GET /a"                 # entries in result order

    eval_ordered instant at 60 sort(...)                  # vector order is checked too
    eval_fail instant at 60 <query>                       # must raise a model error
      error substring                                      # optional expected message part
    eval scalar at 10 1 + 2
      3

Times are seconds (float allowed) since the epoch; values compare with a
relative tolerance of 1e-9. A `load` block replaces the data of earlier ones.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from dataclasses import dataclass, field

from svclog.model import NS, Labels

_LABELS = re.compile(r"\s*\{(.*?)\}(?=\s|$)")
_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("(?:[^"\\]|\\.)*")\s*,?')
_SERIES_TIMES = re.compile(r"^(-?[0-9.]+)\+([0-9.]+)x([0-9]+)$")


def parse_labels(text: str) -> tuple[Labels, str]:
    """`{a="b", c="d"} rest` -> (Labels, rest)."""
    match = _LABELS.match(text)
    if not match:
        raise ValueError(f"expected a label set in {text!r}")
    body, pairs, pos = match.group(1), {}, 0
    while pos < len(body):
        pair = _PAIR.match(body, pos)
        if not pair:
            raise ValueError(f"bad label set {{{body}}}")
        pairs[pair.group(1)] = json.loads(pair.group(2))
        pos = pair.end()
    return Labels.from_dict(pairs), text[match.end() :].strip()


def seconds(text: str) -> int:
    return round(float(text) * NS)


@dataclass
class Expectation:
    labels: Labels
    values: list[float | None] = field(default_factory=list)  # samples (None = absent)
    entries: list[tuple[int, str]] = field(default_factory=list)  # log entries


@dataclass
class EvalCommand:
    kind: str  # instant | range | logs | scalar
    query: str
    line_no: int
    time: int = 0
    start: int = 0
    end: int = 0
    step: int | None = None
    limit: int = 100
    direction: str = "backward"
    interval: int | None = None
    fail: bool = False
    ordered: bool = False
    error: str = ""
    scalar: float | None = None
    expected: list[Expectation] = field(default_factory=list)


@dataclass
class LoadCommand:
    streams: dict[Labels, list[tuple[int, str, dict]]]


def _parse_entry(text: str, streams: dict) -> None:
    labels, rest = parse_labels(text)
    when, rest = rest.split(None, 1)
    line, rest = _take_string(rest)
    metadata = parse_labels(rest)[0].to_dict() if rest.strip() else {}
    series = _SERIES_TIMES.match(when)
    if series:
        first, step, count = float(series.group(1)), float(series.group(2)), int(series.group(3))
        times = [round((first + i * step) * NS) for i in range(count + 1)]
    else:
        times = [seconds(when)]
    streams.setdefault(labels, []).extend((t, line, metadata) for t in times)


def _take_string(text: str) -> tuple[str, str]:
    decoder = json.JSONDecoder()
    value, end = decoder.raw_decode(text.strip())
    return value, text.strip()[end:].strip()


_HEADER_WORDS = {"at", "from", "to", "step", "limit", "direction", "interval"}


def _parse_eval_header(words: list[str], line_no: int) -> EvalCommand:
    keyword, kind = words[0], words[1]
    cmd = EvalCommand(
        kind=kind, query="", line_no=line_no, fail=keyword == "eval_fail", ordered=keyword == "eval_ordered"
    )
    pos = 2
    while pos + 1 < len(words) and words[pos] in _HEADER_WORDS:
        key, value = words[pos], words[pos + 1]
        if key == "at":
            cmd.time = seconds(value)
        elif key == "from":
            cmd.start = seconds(value)
        elif key == "to":
            cmd.end = seconds(value)
        elif key == "step":
            cmd.step = seconds(value)
        elif key == "limit":
            cmd.limit = int(value)
        elif key == "direction":
            cmd.direction = value
        elif key == "interval":
            cmd.interval = seconds(value)
        pos += 2
    cmd.query = " ".join(words[pos:])
    return cmd


def _parse_expectation(cmd: EvalCommand, text: str) -> None:
    if cmd.fail:
        cmd.error = text
        return
    if cmd.kind == "scalar":
        cmd.scalar = float(text)
        return
    labels, rest = parse_labels(text)
    if cmd.kind == "logs":
        when, rest = rest.split(None, 1)
        line, _ = _take_string(rest)
        for exp in cmd.expected:
            if exp.labels == labels:
                exp.entries.append((seconds(when), line))
                return
        cmd.expected.append(Expectation(labels, entries=[(seconds(when), line)]))
        return
    values = [None if v == "_" else float(v) for v in shlex.split(rest)]
    cmd.expected.append(Expectation(labels, values=values))


def parse_script(text: str) -> list[LoadCommand | EvalCommand]:
    commands: list[LoadCommand | EvalCommand] = []
    current: LoadCommand | EvalCommand | None = None
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("  #", 1)[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if not raw[0].isspace():
            words = line.split()
            if words[0] == "load":
                current = LoadCommand({})
            elif words[0] in ("eval", "eval_fail", "eval_ordered"):
                # the query keeps its own spacing: re-split only the header words
                current = _parse_eval_header(_split_header(line), line_no)
            else:
                raise ValueError(f"line {line_no}: unknown command {words[0]!r}")
            commands.append(current)
            continue
        if current is None:
            raise ValueError(f"line {line_no}: indented line outside a command")
        if isinstance(current, LoadCommand):
            _parse_entry(line.strip(), current.streams)
        else:
            _parse_expectation(current, line.strip())
    return commands


def _split_header(line: str) -> list[str]:
    """Header words, then the rest of the line (the query) as one word."""
    words = line.split(None, 2)
    out = words[:2]
    rest = words[2] if len(words) > 2 else ""
    while True:
        parts = rest.split(None, 2)
        if len(parts) >= 2 and parts[0] in _HEADER_WORDS:
            out += parts[:2]
            rest = parts[2] if len(parts) > 2 else ""
        else:
            break
    out.append(rest)
    return out


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(1e-9 * max(abs(a), abs(b)), 1e-12)
