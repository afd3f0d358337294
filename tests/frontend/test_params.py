import pytest

from svclog.frontend import params as qp
from svclog.model import NS, ParseError, ValidationError

NOW = 1_793_498_400 * NS


def test_range_defaults_one_hour_backward_limit_100():
    req = qp.range_request({"query": '{a="b"}'}, now=NOW)
    assert (req.start, req.end, req.limit, req.direction) == (NOW - 3600 * NS, NOW, 100, "backward")
    assert req.step == 14 * NS  # floor(3600 / 250)


def test_since_and_start_precedence():
    req = qp.range_request({"query": "q", "end": str(NOW), "since": "15m"}, now=NOW)
    assert req.start == NOW - 15 * 60 * NS
    req = qp.range_request({"query": "q", "start": str(NOW - 5), "end": str(NOW), "since": "1h"}, now=NOW)
    assert req.start == NOW - 5


@pytest.mark.parametrize(
    "form",
    [
        {"query": "q", "step": "fast"},
        {"query": "q", "step": "0"},
        {"query": "q", "limit": "x"},
        {"query": "q", "direction": "sideways"},
        {"query": "q", "start": "2026-13-45"},
        {"query": "q", "start": "0", "end": str(NOW), "step": "1"},
    ],
)
def test_bad_parameters_are_validation_errors(form):
    with pytest.raises(ValidationError):
        qp.range_request(form, now=NOW)


def test_a_missing_query_is_the_empty_querys_parse_error():
    # the reference parses an absent query as "", whose error has no position
    for form in ({}, {"query": ""}):
        with pytest.raises(ParseError, match=r"^parse error : syntax error: unexpected \$end$"):
            qp.range_request(form, now=NOW)


def test_float_and_rfc3339_timestamps_and_float_step():
    req = qp.range_request(
        {"query": "q", "start": "1793491200.25", "end": "2026-11-01T01:00:00Z", "step": "450.0"}, now=NOW
    )
    assert req.start == 1793491200 * NS + 250_000_000
    assert req.end == 1793494800 * NS
    assert req.step == 450 * NS


def test_instant_defaults_to_now():
    req = qp.instant_request({"query": "q"}, now=NOW)
    assert req.instant and req.start == req.end == NOW


def test_labels_default_six_hours():
    assert qp.labels_range({}, now=NOW) == (NOW - 6 * 3600 * NS, NOW)


@pytest.mark.parametrize("name", ["step", "interval"])
@pytest.mark.parametrize("value", ["1e19", "-1e19", "1e308", "9223372037", "9223372036854775807"])
def test_durations_beyond_int64_are_refused_as_the_reference_does(name, value):
    with pytest.raises(ValidationError, match=f'cannot parse "{value}" to a valid duration. It overflows int64'):
        qp.range_request({"query": '{a="b"}', "start": "1", "end": "100", name: value})


@pytest.mark.parametrize("value", ["NaN", "Inf", "-Inf", "nan", "1e", "x"])
def test_non_numbers_are_not_durations(value):
    with pytest.raises(ValidationError):
        qp.range_request({"query": '{a="b"}', "start": "1", "end": "100", "step": value})


def test_a_range_that_rounds_past_int64_is_refused():
    with pytest.raises(ValidationError, match="64-bit"):
        qp.range_request({"query": "x", "start": "-9223372036854775808", "end": "100", "step": "1e9"})
    with pytest.raises(ValidationError, match="64-bit"):
        qp.range_request({"query": "x", "start": "9223372036854775000", "end": "9223372036854775807", "step": "7"})


def test_an_interval_longer_than_any_data_span_is_capped_not_overflowing():
    req = qp.range_request({"query": "x", "start": "1", "end": "100", "interval": "9223372036"})
    assert req.interval == qp.MAX_INTERVAL
    assert qp.range_request({"query": "x", "start": "1", "end": "100", "interval": "30"}).interval == 30 * NS
