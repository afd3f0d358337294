"""`| drop a, b="v"` and `| keep a, b=~"re"`.

drop removes the named labels, or with a matcher only on the entries whose value
matches (an absent label counts as ""); `__error__`/`__error_details__` can be
dropped like any label. keep removes every label not named, a matcher item keeping
its label only where the value matches; keep never removes the error labels.
Per-entry decisions are matcher kernels over whole columns.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from svclog.logql import ast
from svclog.logql.stages.batch import ERROR_DETAILS_LABEL, ERROR_LABEL, LogBatch
from svclog.logql.stages.label_filter import anchored, matcher_mask
from svclog.logql.stages.regex_filter import check_regex
from svclog.model import MatchType

_SPECIAL = (ERROR_LABEL, ERROR_DETAILS_LABEL)


def _check(items: tuple[ast.DropKeepItem, ...]) -> None:
    for item in items:
        if item.matcher is not None and item.matcher.type in (MatchType.RE, MatchType.NRE):
            check_regex(anchored(item.matcher.value))


def _remove_where(batch: LogBatch, name: str, mask: pa.Array) -> None:
    batch.record_deleted(name, mask)
    if not batch.has_label(name):
        return
    if pc.all(pc.fill_null(mask, False)).as_py():
        batch.drop_label(name)
        return
    batch.set_label(name, pc.if_else(mask, pa.scalar(None, pa.string()), batch.label(name)))


class DropStage:
    def __init__(self, node: ast.Drop):
        _check(node.items)
        self.items = node.items

    def process(self, batch: LogBatch) -> LogBatch:
        for item in self.items:
            if item.matcher is None:
                batch.record_deleted(item.name, pc.is_valid(batch.label(item.name)))
                batch.drop_label(item.name)
                continue
            name = item.matcher.name
            _remove_where(batch, name, matcher_mask(item.matcher, batch.label(name)))
        return batch


class KeepStage:
    def __init__(self, node: ast.Keep):
        _check(node.items)
        self.items = node.items

    def process(self, batch: LogBatch) -> LogBatch:
        if not self.items:
            return batch
        plain = {item.name for item in self.items if item.matcher is None}
        for name in batch.names():
            if name in _SPECIAL or name in plain:
                continue
            keep = pa.repeat(pa.scalar(False), len(batch))
            for item in self.items:
                if item.matcher is not None and item.matcher.name == name:
                    keep = pc.or_(keep, matcher_mask(item.matcher, batch.label(name)))
            _remove_where(batch, name, pc.and_(pc.invert(keep), pc.is_valid(batch.label(name))))
        return batch
