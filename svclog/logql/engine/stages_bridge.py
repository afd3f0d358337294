"""The engine's view of the pipeline stages package.

The stages package (`svclog.logql.stages`) owns block -> batch conversion, the
pipeline, label filters and grouping of entries into series; the engine reaches
them through these names only.
"""

from __future__ import annotations

import numpy as np

from svclog.logql.stages import block_to_batch, build_pipeline, check_stages, label_filter_mask, reads_no_label
from svclog.logql.stages import group_by_categories as _group_by_categories
from svclog.logql.stages import group_by_labels as _group_by_labels
from svclog.logql.stages.batch import LogBatch
from svclog.logql.stages.grouping import CategorizedLabels
from svclog.model import Labels

__all__ = [
    "block_to_batch",
    "build_pipeline",
    "check_stages",
    "group_by_categories",
    "group_by_labels",
    "label_filter_mask",
    "reads_no_label",
]

Indices = np.ndarray


def group_by_labels(batch: LogBatch) -> list[tuple[Labels, Indices]]:
    return [(labels, np.asarray(idx, dtype=np.int64)) for labels, idx in _group_by_labels(batch)]


def group_by_categories(batch: LogBatch) -> list[tuple[CategorizedLabels, Indices]]:
    return [(key, np.asarray(idx, dtype=np.int64)) for key, idx in _group_by_categories(batch)]
