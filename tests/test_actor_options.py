"""The data-holding actors start with jemalloc as Arrow's pool unless the operator picked one."""

from svclog.actors.options import backend_host_options, ingester_options, querier_options


def _pool(options: dict) -> str | None:
    return options.get("runtime_env", {}).get("env_vars", {}).get("ARROW_DEFAULT_MEMORY_POOL")


def test_ingesters_and_the_backend_host_use_jemalloc(monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert _pool(ingester_options(0, 0.2)) == "jemalloc"
    assert _pool(backend_host_options(0.2)) == "jemalloc"


def test_queriers_keep_pyarrows_default_pool(monkeypatch):
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    assert _pool(querier_options(0, 0.2, 4)) is None


def test_an_operators_choice_wins(monkeypatch):
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
    assert _pool(ingester_options(1, 0.2)) == "system"
