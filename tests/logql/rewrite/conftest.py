"""Fixtures of the rewrite tests: the conformance data set as one MemorySource per tenant."""

from __future__ import annotations

import pytest

from tests.logql.rewrite.conformance_queries import load_sources


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long-running variant of a property test")


@pytest.fixture(scope="session")
def tenant_sources():
    return load_sources()
