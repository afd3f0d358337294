"""Per-tenant `otlp_config` (index_label / structured_metadata / drop by name or regex) and
`discover_service_name`, in the codec and wired through POST /otlp/v1/logs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from svclog.config.limits import LimitsConfig
from svclog.serve.app import Services
from svclog.serve.codecs.otlp import encode_otlp_logs_protobuf, otlp_rules
from tests.fuzz.harness import app_with
from tests.serve.test_otlp_codec import PROTO, decode, record, request
from tests.serve.test_otlp_routes import FakePush, post

CONFIG = {
    "resource_attributes": {
        "attributes_config": [
            {"action": "index_label", "attributes": ["host.name"]},
            {"action": "drop", "regex": "secret\\..*"},
            {"action": "index_label", "attributes": ["service.name"]},  # shadowed: the defaults come first
        ]
    },
    "scope_attributes": [{"action": "drop", "attributes": ["lib.kind"]}],
    "log_attributes": [
        {"action": "drop", "regex": "http\\..*"},
        {"action": "structured_metadata", "attributes": ["user"]},
    ],
}


def body():
    return encode_otlp_logs_protobuf(
        request(
            [
                (
                    {"service.name": "api", "host.name": "h1", "secret.token": "t", "region": "eu"},
                    [record("x", attributes={"http.method": "GET", "user": "u1"})],
                )
            ],
            scope={"name": "lib", "attributes": {"lib.kind": "sdk", "lib.v": "2"}},
        )
    )


def test_actions_by_name_and_regex():
    [stream] = decode(body(), rules=otlp_rules(CONFIG))
    assert stream.labels.to_dict() == {"host_name": "h1", "service_name": "api"}
    assert dict(stream.entries[0].metadata) == {"user": "u1", "region": "eu", "lib_v": "2", "scope_name": "lib"}


def test_no_config_keeps_the_default_index_labels():
    [stream] = decode(body(), rules=otlp_rules({}))
    assert stream.labels.to_dict() == {"service_name": "api"}
    assert ("host_name", "h1") in stream.entries[0].metadata and ("secret_token", "t") in stream.entries[0].metadata


def test_ignore_defaults_and_unknown_service():
    config = {
        "resource_attributes": {
            "ignore_defaults": True,
            "attributes_config": [{"action": "index_label", "regex": "host\\..*"}],
        }
    }
    [stream] = decode(body(), rules=otlp_rules(config))
    # service.name is present (as metadata now), so unknown_service is not added
    assert stream.labels.to_dict() == {"host_name": "h1"}
    plain = encode_otlp_logs_protobuf(request([({"host.name": "h1"}, [record()])]))
    [stream] = decode(plain, rules=otlp_rules(config))
    assert stream.labels.to_dict() == {"host_name": "h1", "service_name": "unknown_service"}
    [stream] = decode(plain, rules=otlp_rules(config), discover_service_name=("host_name",))
    assert stream.labels.to_dict() == {"host_name": "h1", "service_name": "h1"}


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"log_attributes": [{"action": "index_label", "attributes": ["a"]}]},
            "only supported for resource_attributes",
        ),
        ({"scope_attributes": [{"action": "keep", "attributes": ["a"]}]}, "invalid action"),
        ({"resource_attributes": {"attributes_config": [{"action": "drop", "regex": "("}]}}, "invalid regex"),
        ({"resource_attributes": {"attributes_config": [{"action": "drop"}]}}, "needs attributes or regex"),
        ({"log_attribute": []}, "unknown key"),
    ],
)
def test_malformed_config(config, message):
    with pytest.raises((ValueError, TypeError), match=message):
        otlp_rules(config)


def test_route_uses_the_tenants_limits():
    limits = {
        "a": replace(LimitsConfig(), otlp_config=CONFIG, discover_service_name=()),
        "bad": replace(LimitsConfig(), otlp_config={"log_attributes": 3}),
    }
    push = FakePush()
    app = app_with(
        Services(backend=push),
        auth_enabled=True,
        max_body_bytes=1 << 20,
        max_decompressed_bytes=1 << 20,
        limits_for=lambda tenant: limits.get(tenant, LimitsConfig()),
    )
    response = post(app, body=body(), headers={"Content-Type": PROTO, "X-Scope-OrgID": "a"})
    assert response.status_code == 200
    [(tenant, [stream])] = push.calls
    assert tenant == "a" and stream.labels.to_dict() == {"host_name": "h1", "service_name": "api"}
    response = post(app, body=body(), headers={"Content-Type": PROTO, "X-Scope-OrgID": "other"})
    assert response.status_code == 200 and push.calls[-1][1][0].labels.to_dict() == {"service_name": "api"}
    response = post(app, body=body(), headers={"Content-Type": PROTO, "X-Scope-OrgID": "bad"})
    assert response.status_code == 500 and "invalid limits_config.otlp_config" in response.text
