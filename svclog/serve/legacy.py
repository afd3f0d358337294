"""Response shapes of the deprecated /api/legacy/* (and /api/prom/*) endpoints.

The reference answers them with its pre-v1 encodings: streams as `{labels, entries: [{ts, line}]}`
with RFC 3339 timestamps, label lists as `{values}`, tail drops as Go-named `{Timestamp, Labels}`.
"""

from __future__ import annotations

from svclog.ingester.tail import DroppedEntry, TailEntry
from svclog.model import Labels, format_rfc3339


def legacy_query_body(data: dict) -> dict:
    """Convert a v1 `data` object to the legacy `{streams: [{labels, entries: [{ts, line}]}]}` form."""
    if data.get("resultType") != "streams":
        return data
    streams = []
    for stream in data.get("result", []):
        labels = str(Labels.from_dict(stream["stream"]))
        entries = [{"ts": format_rfc3339(int(ts)), "line": line} for ts, line, *_ in stream["values"]]
        streams.append({"labels": labels, "entries": entries})
    return {"streams": streams, "stats": data.get("stats", {})}


def legacy_values_body(values: list[str]) -> dict:
    """The legacy label names and label values answer: `{values: [...]}`."""
    return {"values": list(values)}


def legacy_tail_message(entries: list[TailEntry], dropped: list[DroppedEntry]) -> dict:
    """A legacy tail websocket message; `dropped_entries` keeps the reference's untagged Go field names."""
    # keyed by label items: a Labels' cached hash may come from another process (see tail_message)
    streams: dict[tuple, tuple[Labels, list[dict]]] = {}
    for entry in entries:
        _, items = streams.setdefault(entry.labels.items, (entry.labels, []))
        items.append({"ts": format_rfc3339(entry.ts), "line": entry.line})
    return {
        "streams": [{"labels": str(labels), "entries": items} for labels, items in streams.values()],
        "dropped_entries": [{"Timestamp": format_rfc3339(d.ts), "Labels": str(d.labels)} for d in dropped],
    }
