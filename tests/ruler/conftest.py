"""Shared fixtures: a rule store in a temporary directory and a rule-group body."""

import pytest

from svclog.ruler.store import RuleStore
from svclog.storage.objstore import ObjectStore

ALERT_BODY = (
    "name: api-errors\ninterval: 1m\nrules:\n  - alert: HighApiErrorRate\n"
    '    expr: sum by (app) (rate({app="api", level="error"}[5m])) > 1\n    for: 2m\n'
    "    labels:\n      severity: page\n"
    '    annotations:\n      summary: "{{ $labels.app }} error rate is {{ $value }}"\n'
)
RECORD_BODY = (
    "name: nginx-recording\ninterval: 2m\nrules:\n  - record: nginx:requests:rate5m\n"
    '    expr: sum by (cluster) (rate({app="nginx"}[5m]))\n    labels:\n      source: conformance\n'
)


@pytest.fixture
def rule_store(tmp_path) -> RuleStore:
    return RuleStore(ObjectStore(str(tmp_path / "store")))
