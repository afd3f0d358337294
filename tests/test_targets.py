import pytest

from svclog.targets import app_name_and_prefix, components, endpoint_group, exposes


@pytest.mark.parametrize(
    "path,group",
    [
        ("/svc/api/v1/push", "ingest"),
        ("/loki/api/v1/push", "ingest"),
        ("/otlp/v1/logs", "ingest"),
        ("/api/prom/push", "ingest"),
        ("/svc/api/v1/query_range", "query"),
        ("/loki/api/v1/tail", "query"),
        ("/svc/api/v1/rules/ns/group", "rules"),
        ("/compat/api/v1/alerts", "rules"),
        ("/svc/api/v1/delete", "deletes"),
        ("/flush", "ingester-admin"),
        ("/ingester/shutdown", "ingester-admin"),
        ("/ready", None),
        ("/metrics", None),
        ("/svc/api/v1/format_query", None),
        ("/svc/api/v1/status/buildinfo", None),
        ("/ruler/ring", "ruler-ring"),
        ("/distributor/ring", "distributor-ring"),
        ("/api/legacy/query", "query"),
    ],
)
def test_paths_map_to_the_api_endpoint_groups(path, group):
    assert endpoint_group(path) == group


def test_simple_scalable_targets_expose_only_their_groups():
    write, read, backend = components(["write"]), components(["read"]), components(["backend"])
    assert exposes(write, "/svc/api/v1/push") and not exposes(read, "/svc/api/v1/push")
    assert exposes(read, "/svc/api/v1/query") and not exposes(write, "/svc/api/v1/query")
    assert exposes(backend, "/svc/api/v1/rules") and not exposes(read, "/svc/api/v1/rules")
    assert exposes(backend, "/svc/api/v1/delete") and not exposes(write, "/svc/api/v1/delete")
    assert exposes(write, "/flush") and not exposes(backend, "/flush")
    for target in (write, read, backend):
        assert exposes(target, "/ready") and exposes(target, "/metrics")
        assert exposes(target, "/svc/api/v1/format_query")


def test_all_exposes_everything_and_owns_the_root_prefix():
    everything = components(["all"])
    assert all(exposes(everything, p) for p in ("/svc/api/v1/push", "/compat/api/v1/rules", "/flush"))
    assert app_name_and_prefix(["all"]) == ("svclog", "/")
    assert app_name_and_prefix(["read"]) == ("svclog-read", "/read")


def test_microservice_targets():
    assert components(["querier"]) == {"querier"}
    assert exposes(components(["distributor"]), "/loki/api/v1/push")
    assert not exposes(components(["ingester"]), "/loki/api/v1/push")
    assert exposes(components(["compactor"]), "/compactor/ring")


def test_the_index_gateway_runs_in_backend_not_in_all():
    assert "index-gateway" in components(["backend"]) and "index-gateway" not in components(["all"])
    assert "index-gateway" in components(["all", "index-gateway"])
    assert app_name_and_prefix(["all", "index-gateway"]) == ("svclog", "/")
    assert exposes(components(["read"]), "/indexgateway/ring")  # the queriers, its clients, show it too
