"""One logfmt line per query request, in the spirit of the reference's `metrics.go` line.

Operators grep it by `org_id`, `query`, `status` and the client's X-Query-Tags pairs
(`source=grafana-lokiexplore-app`), which is why those pairs are appended verbatim.
"""

from __future__ import annotations

import logging
import re

from svclog.gocompat.durations import format_go_duration
from svclog.gocompat.strconv import quote as go_quote
from svclog.querier.request import RangeRequest
from svclog.serve.query_headers import tag_pairs

log = logging.getLogger("svclog.query")

_BARE = re.compile(r"^[^\s=\"\\]+$")


def logfmt_value(value: object) -> str:
    text = str(value)
    return text if _BARE.match(text) else go_quote(text)


def query_log_line(
    tenants: list[str], request: RangeRequest | None, status: int, seconds: float, data: dict | None, tags: str
) -> str:
    """The line's text (`request` is None when the parameters did not parse)."""
    fields: list[tuple[str, object]] = [("msg", "query"), ("org_id", "|".join(tenants))]
    if request is not None:
        fields += [
            ("query", request.query),
            ("range_type", "instant" if request.instant else "range"),
            ("length", format_go_duration(request.end - request.start)),
            ("step", format_go_duration(request.step)),
            ("limit", request.limit),
        ]
    fields += [("duration", format_go_duration(int(seconds * 1e9))), ("status", status)]
    if data is not None and data.get("resultType") == "streams":
        fields.append(("returned_lines", sum(len(s["values"]) for s in data.get("result", ()))))
    fields += tag_pairs(tags)
    return " ".join(f"{key}={logfmt_value(value)}" for key, value in fields)


def log_query(
    tenants: list[str], request: RangeRequest | None, status: int, seconds: float, data: dict | None, tags: str
) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info("%s", query_log_line(tenants, request, status, seconds, data, tags))


def ensure_output() -> None:
    """A Serve replica starts with no logging handler at all, where the query log's INFO lines
    would vanish: there it writes to stderr (Ray keeps and forwards worker stderr). The gateway
    calls this once when it starts; a host that configured logging (the CLI, tests) keeps its own."""
    if not (logging.getLogger().handlers or logging.getLogger("svclog").handlers or log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
