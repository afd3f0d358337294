"""Output bounds of template execution.

A template runs once per entry, so one amplifying call (`repeat 100000000 "x"`, a huge
printf width, `range` over a huge number) would allocate per line what the whole query
may not. No function result and no rendered text may exceed MAX_OUTPUT characters, and
one execution may iterate at most MAX_RANGE_ITERATIONS times; past either the query fails
with a 4xx naming the limit (the reference has no bound here, so there is no answer to match).
Amplifiers check their size before building the string.
"""

from __future__ import annotations

from svclog.model import LimitError

MAX_OUTPUT = 1 << 20  # characters: four times the default max_line_size
MAX_RANGE_ITERATIONS = 100_000


class TemplateLimitError(LimitError):
    """A template would exceed a bound: fails the query (not a per-entry TemplateFormatErr)."""


def check_output(what: str, size: int) -> None:
    if size > MAX_OUTPUT:
        raise TemplateLimitError(
            f"template: {what} would produce {size} characters, "
            f"over the limit of {MAX_OUTPUT} characters per template execution"
        )


def check_iterations(count: int) -> None:
    if count > MAX_RANGE_ITERATIONS:
        raise TemplateLimitError(
            f"template: range would iterate more than the limit of {MAX_RANGE_ITERATIONS} times per template execution"
        )
