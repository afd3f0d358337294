"""Pipeline stages over columnar log batches: the engine's entry points."""

from svclog.logql.stages.batch import (
    ERR_JSON,
    ERR_LABEL_FILTER,
    ERR_LOGFMT,
    ERR_SAMPLE_EXTRACTION,
    ERR_TEMPLATE_FORMAT,
    ERROR_DETAILS_LABEL,
    ERROR_LABEL,
    LogBatch,
    block_to_batch,
    has_error,
    set_error,
)
from svclog.logql.stages.convert import (
    parse_bytes_values,
    parse_duration_ns_values,
    parse_duration_values,
    parse_float_values,
)
from svclog.logql.stages.grouping import CategorizedLabels, group_by_categories, group_by_labels
from svclog.logql.stages.label_filter import label_filter_mask, matcher_mask, reads_no_label
from svclog.logql.stages.pipeline import Pipeline, build_pipeline, check_stages

__all__ = [
    "ERROR_DETAILS_LABEL",
    "ERROR_LABEL",
    "ERR_JSON",
    "ERR_LABEL_FILTER",
    "ERR_LOGFMT",
    "ERR_SAMPLE_EXTRACTION",
    "ERR_TEMPLATE_FORMAT",
    "CategorizedLabels",
    "LogBatch",
    "Pipeline",
    "block_to_batch",
    "build_pipeline",
    "check_stages",
    "group_by_categories",
    "group_by_labels",
    "has_error",
    "label_filter_mask",
    "matcher_mask",
    "parse_bytes_values",
    "parse_duration_ns_values",
    "parse_duration_values",
    "parse_float_values",
    "reads_no_label",
    "set_error",
]
