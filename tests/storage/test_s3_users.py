"""Every object-store user on a real S3 server: the compactor's index compaction, retention,
delete requests and sweep, and the rule store, run as their own tests do over the local
filesystem, here with their ObjectStore on SeaweedFS S3 (each test in a prefix of its own)."""

from __future__ import annotations

import inspect

import pytest

from svclog.ruler.store import RuleStore
from tests.compactor import test_delete_processing, test_delete_requests, test_index_compaction, test_retention
from tests.ruler import test_store_api

pytestmark = pytest.mark.s3

COMPACTOR_TESTS = [
    test_index_compaction.test_segments_of_a_day_merge_into_one_and_nothing_is_lost,
    test_index_compaction.test_chunk_spanning_two_days_stays_indexed_in_both,
    test_index_compaction.test_reader_copes_with_segments_removed_under_it,
    test_retention.test_expired_chunks_leave_index_and_store_and_straddling_chunk_is_trimmed,
    test_delete_processing.test_processing_rewrites_chunks_without_deleted_lines,
    test_delete_processing.test_delete_without_filter_removes_whole_chunks_and_trims_edges,
    test_delete_requests.test_cancel_rules,
    test_delete_requests.test_force_cancel_of_partly_processed_request_lists_it_as_processed,
]


@pytest.mark.parametrize("test", COMPACTOR_TESTS, ids=lambda t: t.__name__)
def test_compactor_on_s3(test, s3_store, monkeypatch, tmp_path):
    module = inspect.getmodule(test)
    monkeypatch.setattr(module, "ObjectStore", lambda _path: s3_store())
    kwargs = {"tmp_path": tmp_path} if "tmp_path" in inspect.signature(test).parameters else {}
    if "monkeypatch" in inspect.signature(test).parameters:
        kwargs["monkeypatch"] = monkeypatch
    test(**kwargs)


RULE_STORE_TESTS = [
    test_store_api.test_tenants_are_isolated,
    test_store_api.test_api_set_get_list_delete,
    test_store_api.test_api_update_replaces_group,
    test_store_api.test_api_404s,
]


@pytest.mark.parametrize("test", RULE_STORE_TESTS, ids=lambda t: t.__name__)
def test_rule_store_on_s3(test, s3_store):
    test(RuleStore(s3_store()))


def test_rule_namespaces_with_unsafe_names_round_trip_on_s3(s3_store):
    for namespace in ("a/b", "..", "x y%z", "ünï"):
        test_store_api.test_store_round_trip_with_unsafe_namespaces(RuleStore(s3_store()), namespace)
