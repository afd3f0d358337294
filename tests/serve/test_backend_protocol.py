"""The handlers' service protocols match both of their implementations, the Ray one the gateway
builds and the in-process one of tests/fuzz/harness.py, method by method (mypy checks the Ray
side's types too; this catches a drifted name or parameter in either)."""

from __future__ import annotations

import inspect

import pytest

from svclog.serve.admin_backend import RayAdmin
from svclog.serve.admin_routes import AdminBackend
from svclog.serve.backend import Backend, ServeBackend
from tests.fuzz.harness import InProcessAdmin, InProcessBackend


def _methods(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def _shape(signature: inspect.Signature) -> list[tuple[str, object, bool]]:
    return [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in signature.parameters.values()]


@pytest.mark.parametrize(
    "protocol,implementation",
    [
        (Backend, ServeBackend),
        (Backend, InProcessBackend),
        (AdminBackend, RayAdmin),
        (AdminBackend, InProcessAdmin),
    ],
    ids=lambda c: c.__name__,
)
def test_implementations_match_their_protocol(protocol, implementation):
    expected = _methods(protocol)
    assert expected
    for name, signature in expected.items():
        member = getattr(implementation, name, None)
        assert member is not None, f"{implementation.__name__} has no {name}"
        assert inspect.iscoroutinefunction(member) == inspect.iscoroutinefunction(getattr(protocol, name)), name
        assert _shape(inspect.signature(member)) == _shape(signature), (implementation.__name__, name)
