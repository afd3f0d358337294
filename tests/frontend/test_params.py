import pytest

from svclog.frontend import params as qp
from svclog.model import NS, ValidationError

NOW = 1_793_498_400 * NS


def test_range_defaults_one_hour_backward_limit_100():
    req = qp.range_request({"query": "{a=\"b\"}"}, now=NOW)
    assert (req.start, req.end, req.limit, req.direction) == (NOW - 3600 * NS, NOW, 100, "backward")
    assert req.step == 14 * NS  # floor(3600 / 250)


def test_since_and_start_precedence():
    req = qp.range_request({"query": "q", "end": str(NOW), "since": "15m"}, now=NOW)
    assert req.start == NOW - 15 * 60 * NS
    req = qp.range_request({"query": "q", "start": str(NOW - 5), "end": str(NOW), "since": "1h"}, now=NOW)
    assert req.start == NOW - 5


@pytest.mark.parametrize("form", [
    {"query": "q", "step": "fast"}, {"query": "q", "step": "0"}, {"query": "q", "limit": "x"},
    {"query": "q", "direction": "sideways"}, {"query": "q", "start": "2026-13-45"}, {},
    {"query": "q", "start": "0", "end": str(NOW), "step": "1"},
])
def test_bad_parameters_are_validation_errors(form):
    with pytest.raises(ValidationError):
        qp.range_request(form, now=NOW)


def test_float_and_rfc3339_timestamps_and_float_step():
    req = qp.range_request({"query": "q", "start": "1793491200.25", "end": "2026-11-01T01:00:00Z",
                            "step": "450.0"}, now=NOW)
    assert req.start == 1793491200 * NS + 250_000_000
    assert req.end == 1793494800 * NS
    assert req.step == 450 * NS


def test_instant_defaults_to_now():
    req = qp.instant_request({"query": "q"}, now=NOW)
    assert req.instant and req.start == req.end == NOW


def test_labels_default_six_hours():
    assert qp.labels_range({}, now=NOW) == (NOW - 6 * 3600 * NS, NOW)
