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
