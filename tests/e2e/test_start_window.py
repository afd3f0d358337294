"""While svclog starts, a shipper's request is refused (before the port is bound) or answered 503
with Retry-After, never 404 (issue 17): the session's own start was polled every 50 ms (conftest)."""

import pytest

pytestmark = pytest.mark.ray


def test_no_request_during_the_start_answered_404(svc):
    seen = svc.start_statuses
    statuses = {status for (_, status) in seen}
    assert 404 not in statuses, seen
    assert statuses <= {"refused", 503, 200, 204}, seen
    assert seen.get(("/loki/api/v1/push", 503), 0) > 0, f"the start was never seen answering 503: {seen}"
