"""Client subcommands of `svclog`: query, query-range, labels, series, tail, push.

Each command talks to a running service through svclog.client. Output is either human
(`default`: timestamp, labels, line, like logcli), `raw` (lines or values only) or
`json` (one JSON object per entry or sample for query and tail; one JSON document for
labels and series). Errors go to stderr with exit status 1; usage errors exit with 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from svclog.client import Client, ClientError, to_push_streams
from svclog.model import NS, Entry, Labels, PushStream, SvcError, format_rfc3339, parse_prom_duration

COMMANDS = ("query", "query-range", "labels", "series", "tail", "push")
DEFAULT_ADDR = "http://127.0.0.1:3100"
OUTPUTS = ("default", "raw", "json")
PUSH_BATCH = 1000


def run(command: str, args: list[str], stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Run one subcommand; returns the process exit status."""
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    parser = build_parser()
    try:
        opts = parser.parse_args([command, *args])
    except SystemExit as exc:  # argparse has printed the usage error (or --help)
        return int(exc.code or 0)
    client = Client(opts.addr, tenant=opts.org_id or None, timeout=opts.timeout)
    try:
        return opts.handler(client, opts, stdin, stdout)
    except ClientError as err:
        print(f"svclog {command}: error: {err}", file=sys.stderr)
        return 1
    except (ValueError, SvcError) as err:  # a bad --since, --labels, timestamp ...
        print(f"svclog {command}: invalid argument: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `svclog query ... | head`
        return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--addr",
        default=os.environ.get("SVCLOG_ADDR", DEFAULT_ADDR),
        help="service address (env SVCLOG_ADDR, default %(default)s)",
    )
    common.add_argument(
        "--org-id",
        default=os.environ.get("SVCLOG_ORG_ID"),
        help="tenant sent as X-Scope-OrgID; several as a|b for queries (env SVCLOG_ORG_ID)",
    )
    common.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default %(default)s)")
    common.add_argument("--output", "-o", choices=OUTPUTS, default="default", help="output format")

    parser = argparse.ArgumentParser(prog="svclog", description="Query and push to a running svclog.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("query", "query-range"):
        cmd = sub.add_parser(name, parents=[common], help="run a LogQL query over a time range (or --instant)")
        cmd.add_argument("logql", help="LogQL log or metric query")
        _time_range_args(cmd, since="1h")
        cmd.add_argument("--limit", type=int, help="maximum entries (service default 100)")
        cmd.add_argument("--step", help="metric query resolution, e.g. 30s")
        cmd.add_argument("--direction", choices=("backward", "forward"), help="entry order (default backward)")
        cmd.add_argument(
            "--forward",
            dest="direction",
            action="store_const",
            const="forward",
            help="oldest first (--direction forward)",
        )
        cmd.add_argument("--instant", action="store_true", help="instant query at --to (or now)")
        cmd.set_defaults(handler=cmd_query)
    cmd = sub.add_parser("labels", parents=[common], help="label names, or the values of one label")
    cmd.add_argument("name", nargs="?")
    cmd.add_argument("--query", help="restrict to streams matching this selector")
    _time_range_args(cmd, since=None)
    cmd.set_defaults(handler=cmd_labels)
    cmd = sub.add_parser("series", parents=[common], help="label sets of the streams matching selectors")
    cmd.add_argument("selectors", nargs="+", metavar="selector")
    _time_range_args(cmd, since=None)
    cmd.set_defaults(handler=cmd_series)
    cmd = sub.add_parser("tail", parents=[common], help="follow new entries of a LogQL log query")
    cmd.add_argument("logql")
    cmd.add_argument("--since", help="replay entries this far back first (service default 1h)")
    cmd.add_argument("--limit", type=int, help="maximum entries replayed")
    cmd.add_argument("--delay-for", type=int, help="seconds to wait for late entries (0..5)")
    cmd.set_defaults(handler=cmd_tail)
    cmd = sub.add_parser("push", parents=[common], help="push stdin, one entry per line, timestamped now")
    cmd.add_argument("--labels", required=True, help="stream labels, e.g. '{app=\"x\"}'")
    cmd.add_argument("--format", choices=("protobuf", "json"), default="protobuf")
    cmd.add_argument("--batch", type=int, default=PUSH_BATCH, help="entries per request (default %(default)s)")
    cmd.set_defaults(handler=cmd_push)
    return parser


def _time_range_args(cmd: argparse.ArgumentParser, since: str | None) -> None:
    default = f" (default {since})" if since else ""
    cmd.add_argument("--since", default=since, help=f"look back this far from --to{default}")
    cmd.add_argument("--from", dest="start", help="start: RFC 3339 or Unix ns (wins over --since)")
    cmd.add_argument("--to", dest="end", help="end: RFC 3339 or Unix ns (default now)")


def _range(opts: argparse.Namespace) -> tuple[str | int | None, str | int | None]:
    """(start, end) for the request: explicit bounds as given, else --since back from now."""
    end: str | int | None = opts.end
    start: str | int | None = opts.start
    if start is None and opts.since:
        end = time.time_ns() if end is None else end
        start = (end if isinstance(end, int) else _ns(end)) - parse_prom_duration(opts.since)
    return start, end


def _ns(text: str) -> int:
    from svclog.model import parse_timestamp

    return parse_timestamp(text, 0)


# ---------------------------------------------------------------- commands


def cmd_query(client: Client, opts: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    if opts.instant:
        data = client.query(opts.logql, time=opts.end, limit=opts.limit, direction=opts.direction)
    else:
        start, end = _range(opts)
        data = client.query_range(
            opts.logql,
            start=start,
            end=end if end is not None else time.time_ns(),
            step=opts.step,
            limit=opts.limit,
            direction=opts.direction,
        )
    _write(out, format_result(data, opts.output, opts.direction or "backward"))
    return 0


def cmd_labels(client: Client, opts: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    start, end = _range(opts)
    if opts.name:
        names = client.label_values(opts.name, start=start, end=end, query=opts.query)
    else:
        names = client.labels(start=start, end=end, query=opts.query)
    _write(out, [json.dumps(names, ensure_ascii=False)] if opts.output == "json" else names)
    return 0


def cmd_series(client: Client, opts: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    start, end = _range(opts)
    series = client.series(*opts.selectors, start=start, end=end)
    if opts.output == "json":
        _write(out, [json.dumps(series, ensure_ascii=False)])
    else:
        _write(out, sorted(str(Labels.from_dict(s)) for s in series))
    return 0


def cmd_tail(client: Client, opts: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    start = time.time_ns() - parse_prom_duration(opts.since) if opts.since else None
    for message in client.tail(opts.logql, delay_for=opts.delay_for, limit=opts.limit, start=start):
        _write(
            out, format_result({"resultType": "streams", "result": message.get("streams", [])}, opts.output, "forward")
        )
        out.flush()
        dropped = message.get("dropped_entries") or []
        if dropped:
            print(f"svclog tail: the service dropped {len(dropped)} entries (reader too slow)", file=sys.stderr)
    return 0


def cmd_push(client: Client, opts: argparse.Namespace, stdin: TextIO, out: TextIO) -> int:
    labels = to_push_streams({opts.labels: []})[0].labels  # validates the label string up front
    if not len(labels):
        raise ValueError("--labels needs at least one label, e.g. '{app=\"x\"}'")
    total = 0
    for batch in _batches(_stamped(stdin), max(1, opts.batch)):
        client.push([PushStream(labels, batch)], format=opts.format)
        total += len(batch)
    print(f"pushed {total} entries to {labels}", file=sys.stderr)
    return 0


def _stamped(lines: Iterable[str]) -> Iterator[Entry]:
    """Entries stamped at read time; strictly increasing so that stdin's order is kept."""
    last = 0
    for line in lines:
        line = line.rstrip("\r\n")
        if not line:
            continue
        last = max(time.time_ns(), last + 1)
        yield Entry(last, line)


def _batches(entries: Iterable[Entry], size: int) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# ---------------------------------------------------------------- output


def format_result(data: dict, output: str, direction: str = "backward") -> list[str]:
    """Lines to print for a query result (`streams`, `vector`, `matrix` or `scalar`)."""
    kind = data.get("resultType")
    result = data.get("result", [])
    if kind == "streams":
        rows = [
            (int(ts), stream.get("stream", {}), line) for stream in result for ts, line, *_ in stream.get("values", [])
        ]
        rows.sort(key=lambda row: row[0], reverse=direction == "backward")
        return [_entry_line(ts, labels, line, output) for ts, labels, line in rows]
    if kind == "vector":
        samples = [(item["value"], item.get("metric", {})) for item in result]
    elif kind == "matrix":
        samples = [(value, item.get("metric", {})) for item in result for value in item.get("values", [])]
    elif kind == "scalar":
        samples = [(result, {})]
    else:
        raise ClientError(0, f"unknown result type {kind!r}")
    return [_sample_line(float(value[0]), labels, value[1], output) for value, labels in samples]


def _entry_line(ts: int, labels: dict, line: str, output: str) -> str:
    if output == "raw":
        return line
    if output == "json":
        return json.dumps(
            {"timestamp": format_rfc3339(ts), "ts": str(ts), "labels": labels, "line": line}, ensure_ascii=False
        )
    return f"{format_rfc3339(ts)} {Labels.from_dict(labels)} {line}"


def _sample_line(seconds: float, labels: dict, value: str, output: str) -> str:
    if output == "raw":
        return value
    ts = round(seconds * 1000) * (NS // 1000)
    if output == "json":
        return json.dumps({"timestamp": format_rfc3339(ts), "labels": labels, "value": value}, ensure_ascii=False)
    return f"{format_rfc3339(ts)} {Labels.from_dict(labels)} {value}"


def _write(out: TextIO, lines: Iterable[Any]) -> None:
    out.writelines(f"{line}\n" for line in lines)
