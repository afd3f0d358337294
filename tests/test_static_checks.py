"""The static checks, configured in pyproject.toml, run as tests so the README's test command (and so CI)
enforces them: ruff's lint rules and formatter over the tree, and mypy over the svclog package (strict for
logql, model, ingester and distributor). import-linter's contracts are tests/test_architecture.py's.

A failure prints the tool's findings. Ruff is pinned in the `test` extra: another version may format
differently. mypy keeps its incremental cache in .mypy_cache/ (ignored by git; cold, it takes ~30 s)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _clean(*command: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"`{' '.join(command)}` found:\n{result.stdout}{result.stderr}"


def test_ruff_lint_is_clean():
    _clean("ruff", "check", "--no-fix", ".")


def test_ruff_format_is_clean():
    _clean("ruff", "format", "--check", ".")


def test_mypy_is_clean():
    # files, strictness and excludes come from [tool.mypy]
    _clean("mypy", "--cache-dir", str(ROOT / ".mypy_cache"))
