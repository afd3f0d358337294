"""The label/annotation template expander."""

import pytest

from svclog.ruler.template import TemplateData, TemplateError, check_template, expand

DATA = TemplateData({"instance": "web-1", "job": "api", "path": "/x"}, 12345.678, {"cluster": "eu"}, "http://r")


@pytest.mark.parametrize(
    "text, want",
    [
        ("plain", "plain"),
        ("{{ $labels.instance }} down", "web-1 down"),
        ("{{ .Labels.job }}={{ .Value }}", "api=12345.678"),
        ("value {{ $value }}", "value 12345.678"),
        ("{{ $labels.missing }}|", "|"),
        ("{{ $value | humanize }}", "12.35k"),
        ("{{ humanize 0.001234 }}", "1.234m"),
        ('{{ printf "%.1f" $value }}', "12345.7"),
        ("{{ 0.25 | humanizePercentage }}", "25%"),
        ("{{ humanizeDuration 3661 }}", "1h 1m 1s"),
        ("{{ humanize1024 2048 }}", "2ki"),
        ('{{ index $labels "job" }}', "api"),
        ("{{ $labels.job | toUpper }}", "API"),
        ("{{ $externalLabels.cluster }} {{ $externalURL }}", "eu http://r"),
        ("a  {{- $labels.job -}}  b", "aapib"),
        ("{{/* comment */}}x", "x"),
        ("{{ `raw` }}", "raw"),
    ],
)
def test_expands(text, want):
    assert expand(text, DATA) == want


@pytest.mark.parametrize(
    "text",
    ["{{ if $value }}x{{ end }}", "{{ $undefined }}", "{{ nosuchfunc 1 }}", "{{ $value", "{{ }}", "{{ $value 1 }}"],
)
def test_rejects_what_it_cannot_expand(text):
    with pytest.raises(TemplateError):
        check_template(text)


def test_value_prints_like_go():
    assert expand("{{ $value }}", TemplateData({}, 3.0)) == "3"
    assert expand("{{ $value }}", TemplateData({}, 1e21)) == "1e+21"
