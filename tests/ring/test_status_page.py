"""The ring status page: rows, health by heartbeat age, the Forget form, ownership."""

from __future__ import annotations

from svclog.ring.ring import LEAVING, TOKEN_SPACE, Member
from svclog.ring.status_page import HEALTHY, UNHEALTHY, member_rows, ownership, render_ring_page, rows_as_json

S = 1_000_000_000
NOW = 1_700_000_000 * S
TIMEOUT = 60 * S


def _members():
    return [
        Member("ingester-1", "ingester-1", "node-b", (10, TOKEN_SPACE // 2), "ACTIVE", NOW - 120 * S, NOW),
        Member("ingester-0", "ingester-0", "node-a", (TOKEN_SPACE // 4,), LEAVING, NOW - 5 * S, NOW),
    ]


def test_rows_judge_health_by_heartbeat_age_against_the_timeout():
    rows = member_rows(_members(), NOW, TIMEOUT)
    assert [r.id for r in rows] == ["ingester-0", "ingester-1"]
    assert rows[0].health == HEALTHY and rows[0].state == LEAVING and rows[0].tokens == 1
    assert rows[1].health == UNHEALTHY and rows[1].heartbeat_age_s == 120.0
    assert rows[0].heartbeat.endswith("Z") and rows[0].heartbeat.startswith("2023-11-14T")


def test_a_member_never_heard_from_is_unhealthy():
    rows = member_rows([Member("m", "m", heartbeat_ns=0)], NOW, TIMEOUT)
    assert rows[0].health == UNHEALTHY and rows[0].heartbeat == "" and rows[0].heartbeat_age_s is None


def test_ownership_covers_the_token_space():
    shares = ownership(_members())
    assert abs(sum(shares.values()) - 100.0) < 1e-9
    assert abs(shares["ingester-0"] - 25.0) < 1e-6  # (10, 2^30]


def test_page_has_a_row_and_a_forget_form_per_member():
    page = render_ring_page(
        "Ingester ring", member_rows(_members(), NOW, TIMEOUT), heartbeat_timeout_ns=TIMEOUT, now_ns=NOW
    )
    assert page.startswith("<!DOCTYPE html>") and "<title>Ingester ring</title>" in page
    assert page.count('name="forget"') == 2 and 'value="ingester-1"' in page
    assert page.count('method="POST"') == 2
    assert '<tr class="unhealthy"><td>ingester-1</td>' in page
    assert "(1 healthy)" in page


def test_page_without_a_ring_has_no_forget_form_and_escapes_text():
    rows = member_rows([Member("<b>x</b>", "a&b", heartbeat_ns=NOW)], NOW, TIMEOUT)
    page = render_ring_page(
        "Compactor",
        rows,
        heartbeat_timeout_ns=TIMEOUT,
        now_ns=NOW,
        forget_enabled=False,
        note="no ring",
        message="forgot <y>",
    )
    assert "forget" not in page.split("<table>")[1]
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "a&amp;b" in page and "forgot &lt;y&gt;" in page


def test_empty_ring_says_so():
    page = render_ring_page("Ruler ring", [], heartbeat_timeout_ns=TIMEOUT, now_ns=NOW)
    assert "no members" in page


def test_rows_as_json():
    data = rows_as_json(member_rows(_members(), NOW, TIMEOUT))
    assert data[1]["health"] == "unhealthy" and data[1]["tokens"] == 2 and data[0]["node"] == "node-a"
