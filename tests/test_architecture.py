"""The layering rules of STYLE.md, checked by import-linter's contracts in pyproject.toml, and the
one Ray boundary: actor calls only in svclog/actors/ (and the launcher, which creates the actors)."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SVCLOG = ROOT / "svclog"


def _contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}


def test_import_contracts_hold():
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    result = subprocess.run(
        [exe, "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_route_modules_are_under_the_no_ray_contract():
    """Every serve/*_routes.py module is a source of the contract forbidding ray."""
    sources = set()
    for contract in _contracts().values():
        if contract["type"] == "forbidden" and "ray" in contract["forbidden_modules"]:
            sources.update(contract["source_modules"])
    routes = {f"svclog.serve.{p.stem}" for p in (SVCLOG / "serve").glob("*_routes.py")}
    assert routes and routes <= sources, sorted(routes - sources)


def test_gocompat_is_a_leaf_by_contract():
    """Its contract forbids every other top-level module of svclog (a new one must be added there)."""
    leaf = [c for c in _contracts().values() if c["type"] == "forbidden" and c["source_modules"] == ["svclog.gocompat"]]
    assert len(leaf) == 1
    others = {
        f"svclog.{p.stem}"
        for p in SVCLOG.iterdir()
        if p.stem not in ("__init__", "__pycache__", "gocompat") and (p.suffix == ".py" or p.is_dir())
    }
    assert others == set(leaf[0]["forbidden_modules"])


def _python_files_outside(*allowed: str) -> list[tuple[Path, str]]:
    files = []
    for path in sorted(SVCLOG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith(allowed):
            files.append((path, rel))
    return files


def test_actor_calls_live_in_the_actors_package():
    """`.remote(` and `ray.get_actor` outside svclog/actors/ only in the launcher (which creates the actors)."""
    remote = re.compile(r"\.remote\(")
    stray = [
        rel
        for path, rel in _python_files_outside("svclog/actors/", "svclog/launch.py")
        if remote.search(path.read_text())
    ]
    assert stray == []
    lookups = [rel for path, rel in _python_files_outside("svclog/actors/") if "get_actor(" in path.read_text()]
    assert lookups == []


# ---------------------------------------------------------------- the gateway's wiring (svclog/serve/)

SERVE = SVCLOG / "serve"
INJECTED = (
    "The route table, its handlers and the composition root get their services injected: no actors, no Serve shell"
)


def test_route_and_handler_modules_are_under_the_injection_contract():
    """Every serve/*_routes.py module, the table, the handlers and the composition root import no
    actor client and no Serve shell: their services come through constructors."""
    contract = _contracts()[INJECTED]
    modules = {f"svclog.serve.{p.stem}" for p in SERVE.glob("*_routes.py")}
    modules |= {"svclog.serve.routes", "svclog.serve.handlers", "svclog.serve.app", "svclog.serve.tenants"}
    assert modules <= set(contract["source_modules"]), sorted(modules - set(contract["source_modules"]))
    assert {"svclog.actors", "svclog.serve.deployments", "svclog.serve.runtime"} <= set(contract["forbidden_modules"])


def _serve_sources() -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), p.read_text()) for p in sorted(SERVE.rglob("*.py"))]


def test_routes_are_registered_only_by_the_route_table():
    """One route table (svclog/serve/routes.py): no other module of serve/ adds a route."""
    adds = re.compile(
        r"\.(add_api_route|add_api_websocket_route|add_route|add_websocket_route)\(|^\s*@\w+\.(get|post|api_route|websocket)\(",
        re.M,
    )
    stray = [rel for rel, text in _serve_sources() if adds.search(text) and rel != "svclog/serve/routes.py"]
    assert stray == []


def test_the_tenant_is_read_in_one_place():
    """X-Scope-OrgID is parsed only by svclog/serve/tenants.py (tenant_header.py only counts the headers)."""
    reads = re.compile(r"\b(single_tenant|parse_tenants)\(|[\"']x-scope-orgid[\"']", re.IGNORECASE)
    allowed = {"svclog/serve/tenants.py", "svclog/serve/tenant_header.py"}
    stray = [rel for rel, text in _serve_sources() if reads.search(text) and rel not in allowed]
    assert stray == []


def test_serve_keeps_no_module_global_mutable_state():
    """What a gateway replica builds is held by its deployment (svclog/serve/deployments.py Gateway),
    not by module globals: no `global` statement and no module-level empty container to fill."""
    import ast

    found = []
    for rel, text in _serve_sources():
        tree = ast.parse(text)
        found += [f"{rel}:{node.lineno} global" for node in ast.walk(tree) if isinstance(node, ast.Global)]
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(
                value, "keys" if isinstance(value, ast.Dict) else "elts"
            )
            empty |= isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("dict", "list", "set")
            if empty:
                found.append(f"{rel}:{node.lineno} module-level container")
    assert found == []
