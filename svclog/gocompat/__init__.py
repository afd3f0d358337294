"""Go's spellings, as the reference parses and prints them: strconv (quoting, ParseFloat), time
(ParseDuration, Duration.String), Prometheus durations and go-humanize byte sizes.

A leaf: it imports nothing from svclog (a contract in pyproject.toml), so every layer may use it.
Its error messages are Go's texts, raised as ValueError; callers wrap them in their own errors.
"""
