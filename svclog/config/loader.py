"""Entry points: load_config (YAML + flags + env), config_to_yaml, per-tenant limits_for."""

import os
import re
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from .codec import decode, encode
from .errors import ConfigError
from .flags import apply_overrides, parse_flags
from .limits import LimitsConfig
from .root import Config, resolve

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env_vars(text: str) -> str:
    """`${VAR}` and `${VAR:-default}`; unset variables without a default become empty."""

    def substitute(match: re.Match) -> str:
        value = os.environ.get(match.group(1))
        if value is None or (value == "" and match.group(2) is not None):
            return match.group(2) or ""
        return value

    return _ENV_REF.sub(substitute, text)


def _read_yaml(path: str, expand_env: bool) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as err:
        raise ConfigError(f"cannot read config file {path!r}: {err.strerror or err}") from err
    if expand_env:
        text = expand_env_vars(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"invalid YAML in {path!r}: {err}") from err


def load_config(path: str | None = None, args: Sequence[str] = (), *, expand_env: bool | None = None) -> Config:
    """Defaults, then the YAML file, then command-line overrides (flags win)."""
    flags = parse_flags(args, Config)
    path = path if path is not None else flags.config_file
    expand = expand_env if expand_env is not None else bool(flags.expand_env)
    tree: Any = _read_yaml(path, expand) if path else {}
    if tree is None:
        tree = {}
    if not isinstance(tree, dict):
        raise ConfigError(f"config file {path!r} must hold a mapping at the top level")
    cfg = resolve(decode(Config, apply_overrides(tree, flags.overrides)))
    if cfg.runtime_config.file:
        _overrides(cfg)  # fail at startup, not on the first request
    return cfg


def default_config() -> Config:
    return resolve(Config())


def _prune(current: Any, default: Any) -> Any:
    if isinstance(current, dict) and isinstance(default, dict):
        out = {}
        for key, value in current.items():
            if key not in default:
                out[key] = value
                continue
            diff = _prune(value, default[key])
            if diff is not _SAME:
                out[key] = diff
        return out if out else _SAME
    return _SAME if current == default else current


_SAME = object()


def config_to_yaml(cfg: Config, mode: str | None = None) -> str:
    """mode None: full config; "diffs": only values differing from defaults; "defaults": defaults."""
    if mode == "defaults":
        tree = encode(default_config())
    elif mode == "diffs":
        tree = _prune(encode(cfg), encode(default_config()))
        tree = {} if tree is _SAME else tree
    elif mode is None:
        tree = encode(cfg)
    else:
        raise ConfigError(f"invalid config mode {mode!r}: expected 'diffs' or 'defaults'")
    return yaml.safe_dump(_mask_secrets(tree), sort_keys=False, default_flow_style=False, allow_unicode=True)


# Printed as the reference prints its secret-typed fields: `********` when set, "" when not; a store
# URL keeps its user and hides its password.
SECRET_KEYS = frozenset({"secret_access_key", "session_token"})
SECRET_MASK = "********"


def _mask_secrets(tree: object) -> object:
    if isinstance(tree, dict):
        return {key: _masked(key, value) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_mask_secrets(item) for item in tree]
    return tree


def _masked(key: object, value: object) -> object:
    if key in SECRET_KEYS and isinstance(value, str):
        return SECRET_MASK if value else ""
    if key == "s3" and isinstance(value, str) and "://" in value:
        parts = urllib.parse.urlsplit(value)
        if parts.password is not None:
            netloc = f"{parts.username or ''}:{SECRET_MASK}@{parts.hostname or ''}"
            netloc += f":{parts.port}" if parts.port else ""
            return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        return value
    return _mask_secrets(value)


# ---------------------------------------------------------------- per-tenant overrides

_RUNTIME_KEYS = {"overrides", "configs", "multi_kv_config"}


@dataclass
class _Loaded:
    """One parsed runtime-config file, valid for one `limits_config` base."""

    path: str
    mtime: int
    base: LimitsConfig
    checked_at: float
    tenants: dict[str, LimitsConfig]


_lock = threading.Lock()
_loaded: _Loaded | None = None


def _overrides(cfg: Config) -> dict[str, LimitsConfig]:
    """Parsed overrides, re-read when the file changes (checked at most every runtime_config.period)."""
    global _loaded
    path = os.path.abspath(cfg.runtime_config.file)
    now = time.monotonic()
    with _lock:
        current = _loaded
    fresh = (
        current
        if current is not None
        and current.path == path
        and (current.base is cfg.limits_config or current.base == cfg.limits_config)
        else None
    )
    if fresh is not None and now - fresh.checked_at < cfg.runtime_config.period / 1e9:
        return fresh.tenants
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError as err:
        raise ConfigError(f"cannot read runtime config file {path!r}: {err.strerror or err}") from err
    if fresh is not None and fresh.mtime == mtime:
        fresh.checked_at = now
        return fresh.tenants
    tenants = _parse_overrides(path, cfg.limits_config)
    with _lock:
        _loaded = _Loaded(path, mtime, cfg.limits_config, now, tenants)
    return tenants


def _parse_overrides(path: str, base: LimitsConfig) -> dict[str, LimitsConfig]:
    tree = _read_yaml(path, expand_env=False) or {}
    if not isinstance(tree, dict):
        raise ConfigError(f"runtime config file {path!r} must hold a mapping at the top level")
    for name in tree:
        if name not in _RUNTIME_KEYS:
            raise ConfigError(f"unknown key '{name}' in runtime config file {path!r}")
    raw = tree.get("overrides") or {}
    if not isinstance(raw, dict):
        raise ConfigError("invalid value for 'overrides': expected a mapping of tenant -> limits")
    return {str(tenant): decode(LimitsConfig, limits, f"overrides.{tenant}", base) for tenant, limits in raw.items()}


def limits_for(cfg: Config, tenant: str) -> LimitsConfig:
    """The tenant's limits: `limits_config` with its runtime-config overrides applied."""
    if not cfg.runtime_config.file:
        return cfg.limits_config
    return _overrides(cfg).get(tenant, cfg.limits_config)
