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


def _pool_in_a_fresh_process(env: dict[str, str]) -> str:
    import subprocess
    import sys

    code = (
        "from svclog.actors.options import driver_arrow_pool; driver_arrow_pool(); import os, pyarrow as pa; "
        "print(pa.default_memory_pool().backend_name, os.environ.get('ARROW_DEFAULT_MEMORY_POOL'))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_driver_uses_jemalloc_without_passing_it_on_and_keeps_an_operators_pool():
    import os

    plain = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert _pool_in_a_fresh_process(plain) == "jemalloc None"  # gone before Ray starts anything
    assert _pool_in_a_fresh_process({**plain, "ARROW_DEFAULT_MEMORY_POOL": "mimalloc"}) == "mimalloc mimalloc"
