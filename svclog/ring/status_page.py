"""The ring status page: one HTML table row per member, with a Forget button.

Pure: takes ring members (or a snapshot's parts) and a clock reading, returns text.
Health is the heartbeat's age against the ring's timeout, the way lookups judge it;
a member that stopped heart-beating shows "unhealthy" and can be forgotten from the page
(the form POSTs `forget=<id>` back to the same path).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from html import escape

from svclog.ring.ring import TOKEN_SPACE, Member

HEALTHY, UNHEALTHY = "healthy", "unhealthy"
NS = 1_000_000_000


@dataclass(frozen=True)
class RingView:
    """What a status page shows: the members, the timeout that judges them, and whether they
    live in a ring one can forget from (a component without a ring lists its instances)."""

    members: tuple[Member, ...]
    heartbeat_timeout_ns: int
    forgettable: bool = True
    note: str = ""


@dataclass(frozen=True)
class MemberRow:
    id: str
    address: str
    node: str
    state: str
    health: str
    heartbeat: str  # RFC 3339 UTC, empty when never seen
    heartbeat_age_s: float | None
    tokens: int
    ownership: float  # percent of the token space


def member_health(member: Member, now_ns: int, heartbeat_timeout_ns: int) -> str:
    if member.heartbeat_ns <= 0:
        return UNHEALTHY
    return HEALTHY if now_ns - member.heartbeat_ns <= heartbeat_timeout_ns else UNHEALTHY


def ownership(members: list[Member]) -> dict[str, float]:
    """Percent of the token space each member owns (the range ending at each of its tokens)."""
    pairs = sorted((t, m.id) for m in members for t in m.tokens)
    owned = {m.id: 0 for m in members}
    if not pairs:
        return {m.id: 0.0 for m in members}
    previous = pairs[-1][0] - TOKEN_SPACE  # the first token's range wraps around from the last
    for token, member_id in pairs:
        owned[member_id] += token - previous
        previous = token
    return {member_id: 100.0 * size / TOKEN_SPACE for member_id, size in owned.items()}


def member_rows(members: list[Member], now_ns: int, heartbeat_timeout_ns: int) -> list[MemberRow]:
    shares = ownership(members)
    rows = []
    for m in sorted(members, key=lambda m: m.id):
        seen = m.heartbeat_ns > 0
        rows.append(
            MemberRow(
                id=m.id,
                address=m.address,
                node=m.node,
                state=m.state,
                health=member_health(m, now_ns, heartbeat_timeout_ns),
                heartbeat=_rfc3339(m.heartbeat_ns) if seen else "",
                heartbeat_age_s=(now_ns - m.heartbeat_ns) / NS if seen else None,
                tokens=len(m.tokens),
                ownership=shares.get(m.id, 0.0),
            )
        )
    return rows


def rows_as_json(rows: list[MemberRow]) -> list[dict]:
    return [
        {
            "id": r.id,
            "address": r.address,
            "node": r.node,
            "state": r.state,
            "health": r.health,
            "heartbeat": r.heartbeat,
            "heartbeat_age_seconds": r.heartbeat_age_s,
            "tokens": r.tokens,
            "ownership_percent": round(r.ownership, 3),
        }
        for r in rows
    ]


def render_ring_page(
    title: str,
    rows: list[MemberRow],
    *,
    heartbeat_timeout_ns: int,
    now_ns: int,
    forget_enabled: bool = True,
    message: str = "",
    note: str = "",
) -> str:
    """The whole page. `forget_enabled` is False for components that have no ring to forget from."""
    header = ["Instance ID", "Address", "Node", "State", "Health", "Last heartbeat", "Tokens", "Ownership"]
    if forget_enabled:
        header.append("Actions")
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "\n".join(_row(r, forget_enabled) for r in rows) or (f'<tr><td colspan="{len(header)}">no members</td></tr>')
    healthy = sum(1 for r in rows if r.health == HEALTHY)
    parts = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        (
            "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
            "td,th{border:1px solid #999;padding:3px 8px;text-align:left}"
            "tr.unhealthy{background:#fdd}</style>"
        ),
        "</head><body>",
        f"<h1>{escape(title)}</h1>",
        (
            f"<p>Current time: {escape(_rfc3339(now_ns))}. Heartbeat timeout: {heartbeat_timeout_ns / NS:g}s. "
            f"Members: {len(rows)} ({healthy} healthy).</p>"
        ),
    ]
    if note:
        parts.append(f"<p>{escape(note)}</p>")
    if message:
        parts.append(f'<p class="message"><strong>{escape(message)}</strong></p>')
    parts += [f"<table><thead><tr>{head}</tr></thead><tbody>", body, "</tbody></table>", "</body></html>", ""]
    return "\n".join(parts)


def _row(r: MemberRow, forget_enabled: bool) -> str:
    age = "" if r.heartbeat_age_s is None else f" ({r.heartbeat_age_s:.1f}s ago)"
    cells = [
        r.id,
        r.address,
        r.node,
        r.state,
        r.health,
        (r.heartbeat or "never") + age,
        str(r.tokens),
        f"{r.ownership:.1f}%",
    ]
    html = "".join(f"<td>{escape(c)}</td>" for c in cells)
    if forget_enabled:
        html += (
            '<td><form method="POST" action=""><input type="hidden" name="forget" '
            f'value="{escape(r.id, quote=True)}"><button type="submit">Forget</button></form></td>'
        )
    return f'<tr class="{r.health}">{html}</tr>'


def _rfc3339(ns: int) -> str:
    seconds, rest = divmod(ns, NS)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"
