"""X-Scope-OrgID as the reference reads it: '|' separates tenants, ':' starts a subtenant."""

from __future__ import annotations

import pytest

from svclog.model import InvalidTenantError, TenantError, ValidationError, parse_tenants, single_tenant


@pytest.mark.parametrize(
    ("header", "tenants"),
    [
        ("acme", ["acme"]),
        ("globex|acme|acme", ["acme", "globex"]),
        ("a|", ["", "a"]),  # an empty part is a tenant of its own, as in the reference
        ("|a", ["", "a"]),
        ("a||b", ["", "a", "b"]),
        ("a:x", ["a"]),  # the subtenant is not part of the tenant
        ("a:x|a:y", ["a"]),
        ("a:x|b", ["a", "b"]),
        ("a:b:c", ["a"]),
        ("a:$", ["a"]),  # nor validated
        ("x" * 150, ["x" * 150]),
    ],
)
def test_read_tenants(header, tenants):
    assert parse_tenants(header, auth_enabled=True) == tenants


@pytest.mark.parametrize(
    ("header", "error", "message"),
    [
        (None, TenantError, "no org id"),
        ("", TenantError, "no org id"),
        ("|", ValidationError, "no queue found: empty tenant is not allowed"),
        (":x", ValidationError, "no queue found: empty tenant is not allowed"),
        (".", InvalidTenantError, "tenant ID is '.' or '..'"),
        ("a|.", InvalidTenantError, "tenant ID is '.' or '..'"),
        (".:x", InvalidTenantError, "tenant ID is '.' or '..'"),
        ("a b", InvalidTenantError, "tenant ID 'a b' contains unsupported character ' '"),
        ("a|" + "x" * 151, InvalidTenantError, "tenant ID is too long: max 150 characters"),
        ("x" * 151 + "%", InvalidTenantError, "contains unsupported character '%'"),  # characters first
    ],
)
def test_read_tenant_errors(header, error, message):
    with pytest.raises(error) as raised:
        parse_tenants(header, auth_enabled=True)
    assert message in str(raised.value)
    assert type(raised.value) is error  # 401 only for a missing header


@pytest.mark.parametrize(
    ("header", "tenant"),
    [("acme", "acme"), ("a:x", "a"), ("a:x|a:y", "a"), ("a|a", "a"), ("a:", "a"), ("a:b:c", "a")],
)
def test_write_tenant(header, tenant):
    assert single_tenant(header, auth_enabled=True) == tenant


@pytest.mark.parametrize(
    ("header", "error", "message"),
    [
        ("a|", ValidationError, "multiple org IDs present"),
        ("|a", ValidationError, "multiple org IDs present"),
        ("a|b", ValidationError, "multiple org IDs present"),
        ("a:x|b", ValidationError, "multiple org IDs present"),
        # only the first part is validated; the others must merely name the same tenant
        ("a|.", ValidationError, "multiple org IDs present"),
        ("a|" + "x" * 151, ValidationError, "multiple org IDs present"),
        (".:x", InvalidTenantError, "tenant ID is '.' or '..'"),
        ("a b|a", InvalidTenantError, "contains unsupported character ' '"),
        # the reference writes to an empty tenant here; svclog has no storage place for one
        ("|", TenantError, "no org id"),
        (":x", TenantError, "no org id"),
    ],
)
def test_write_tenant_errors(header, error, message):
    with pytest.raises(error) as raised:
        single_tenant(header, auth_enabled=True)
    assert message in str(raised.value)
    assert type(raised.value) is error


def test_auth_disabled_is_the_default_tenant():
    assert parse_tenants("a|b", auth_enabled=False) == ["fake"]
    assert single_tenant(None, auth_enabled=False) == "fake"
