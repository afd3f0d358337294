"""Functions over vectors: label_replace and vector(x)."""

from __future__ import annotations

import re

import numpy as np
import re2

from svclog.logql import ast
from svclog.logql.engine.series import SeriesSet
from svclog.model import Labels, ParseError, ValidationError, compile_go_regexp, is_valid_label_name

_TEMPLATE_REF = re.compile(r"\$(?:\$|\{([A-Za-z0-9_]*)\}|([A-Za-z0-9_]+))")


def expand_template(template: str, match: re2._Match[str]) -> str:
    """Go's regexp.Expand: `$1`, `${1}`, `$name`, `${name}`, `$$`; unknown groups expand to ''."""

    def substitute(ref: re.Match[str]) -> str:
        if ref.group(0) == "$$":
            return "$"
        name = ref.group(1) if ref.group(1) is not None else ref.group(2)
        if not name:
            return ""
        try:
            group = match.group(int(name)) if name.isdigit() else match.group(name)
        except IndexError:
            return ""
        return group or ""

    # A lone `$` not followed by a name stays as is (Go leaves it untouched too).
    return _TEMPLATE_REF.sub(substitute, template)


def label_replace(node: ast.LabelReplace, inner: SeriesSet) -> SeriesSet:
    if not is_valid_label_name(node.dst):
        raise ValidationError(f"invalid destination label name in label_replace(): {node.dst}")
    try:
        # the reference's anchoring: `^(?:...)$`, so `.` does not match a newline here
        pattern = compile_go_regexp(f"^(?:{node.regex})$")
    except ParseError as err:
        raise ValidationError(f"invalid regex in label_replace: {err}") from None
    labels = []
    for lb in inner.labels:
        match = pattern.search(lb.get(node.src) or "")
        if match is None:
            labels.append(lb)
            continue
        value = expand_template(node.replacement, match)
        # a match rebuilds the labels with Prometheus' labels.Builder: empty values go
        replaced = lb.with_(**{node.dst: value}) if value else lb.without([node.dst])
        labels.append(replaced.without_empty())
    # series renamed alike stay apart, as in the reference (engine/answer.py joins them)
    return SeriesSet(labels, inner.values, inner.present, inner.order)


def vector_literal(value: float, n_steps: int) -> SeriesSet:
    return SeriesSet([Labels()], np.full((1, n_steps), float(value)), np.ones((1, n_steps), dtype=bool))
