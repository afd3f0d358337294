"""Response shapes of the deprecated /api/legacy/* (and /api/prom/*) endpoints.

The reference answers them with its pre-v1 encodings: streams as `{labels, entries: [{ts, line}]}`
with RFC 3339 timestamps, label lists as `{values}`, tail drops as Go-named `{Timestamp, Labels}`.
"""

from __future__ import annotations

from svclog.ingester.tail import DroppedEntry, TailEntry, entry_stream_labels
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


def legacy_tail_message(entries: list[TailEntry], dropped: list[DroppedEntry], categorize: bool = False) -> dict:
    """A legacy tail websocket message: one stream per entry, as the reference sends them, and
    `dropped_entries` with the reference's untagged Go field names (null when none).

    With `categorize` (the encoding-flags header) a stream's labels leave out the entry's
    structured metadata and parsed labels, which this shape has no place for."""
    streams = [
        {"labels": str(entry_stream_labels(e) if categorize else e.labels), "entries": [_legacy_entry(e)]}
        for e in entries
    ]
    drops = [{"Timestamp": format_rfc3339(d.ts), "Labels": str(d.labels)} for d in dropped]
    return {"streams": streams, "dropped_entries": drops or None}


def _legacy_entry(entry: TailEntry) -> dict:
    return {"ts": format_rfc3339(entry.ts), "line": entry.line}
