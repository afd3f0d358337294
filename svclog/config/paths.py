"""Derived locations: object store URI, WAL, rules, index and compactor directories."""

import os
import urllib.parse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .root import Config
    from .storage import CommonConfig, StorageConfig


def _under(prefix: str, name: str) -> str:
    return os.path.abspath(os.path.join(prefix or ".", name))


def store_uri_for(
    common: "CommonConfig", storage: "StorageConfig | None" = None, object_store: str = "filesystem"
) -> str:
    """pyarrow.fs URI (or absolute local path) for `object_store` ("filesystem", "s3", "gcs", ...)."""
    kind = object_store.lower()
    if kind in ("s3", "aws"):
        s3 = storage.aws if storage is not None and (storage.aws.bucketnames or storage.aws.s3) else common.storage.s3
        return _s3_uri(s3)
    if kind in ("gcs", "gcp"):
        gcs = storage.gcs if storage is not None and storage.gcs.bucket_name else common.storage.gcs
        return f"gs://{gcs.bucket_name}"
    directory = storage.filesystem.directory if storage is not None else ""
    directory = directory or common.storage.filesystem.chunks_directory
    return os.path.abspath(directory) if directory else _under(common.path_prefix, "chunks")


def _s3_uri(s3) -> str:
    """`s3://bucket?...` with the section's settings (read by svclog.storage.s3.open_s3)."""
    bucket = s3.bucketnames.split(",")[0].strip()
    endpoint, region = s3.endpoint, s3.region
    access_key, secret_key = s3.access_key_id, s3.secret_access_key
    if s3.s3:
        # The URL form: s3://[key:secret@]<endpoint host, or a bare region>/bucket
        url = urllib.parse.urlsplit(s3.s3)
        bucket = bucket or url.path.strip("/")
        if url.username and not access_key:
            access_key = urllib.parse.unquote(url.username)
            secret_key = urllib.parse.unquote(url.password or "")
        host = url.netloc.rsplit("@", 1)[-1]
        if host and "." not in host and ":" not in host:
            region = region or host
        elif host and not endpoint:
            endpoint = host
    params = {}
    if endpoint:
        scheme, _, rest = endpoint.partition("://")
        if rest:  # an endpoint written as a URL keeps its scheme
            params["endpoint_override"], params["scheme"] = rest.rstrip("/"), scheme
        else:
            params["endpoint_override"] = endpoint
            params["scheme"] = "http" if s3.insecure else "https"
        params["path_style"] = "true" if s3.s3forcepathstyle else "false"
    elif s3.insecure:
        params["scheme"] = "http"
    if region:
        params["region"] = region
    if access_key:
        params["access_key"] = access_key
        params["secret_key"] = secret_key
        if s3.session_token:
            params["session_token"] = s3.session_token
    retries = (s3.backoff_config or {}).get("max_retries")
    if retries is not None:
        params["max_attempts"] = str(max(1, int(retries)))
    query = urllib.parse.urlencode(params)
    return f"s3://{bucket}" + (f"?{query}" if query else "")


def object_store_uri(cfg: "Config") -> str:
    """URI of the store named by the newest schema period."""
    periods = cfg.schema_config.configs
    object_store = periods[-1].object_store if periods else "filesystem"
    return store_uri_for(cfg.common, cfg.storage_config, object_store)


def wal_dir(cfg: "Config") -> str:
    return os.path.abspath(cfg.ingester.wal.dir) if cfg.ingester.wal.dir else _under(cfg.common.path_prefix, "wal")


def rules_dir(cfg: "Config") -> str:
    """Rule-group storage for `ruler.storage.type: local`."""
    directory = cfg.ruler.storage.local.directory or cfg.common.storage.filesystem.rules_directory
    return os.path.abspath(directory) if directory else _under(cfg.common.path_prefix, "rules")


def ruler_scratch_dir(cfg: "Config") -> str:
    return os.path.abspath(cfg.ruler.rule_path) if cfg.ruler.rule_path else _under(cfg.common.path_prefix, "rules-temp")


def index_dir(cfg: "Config") -> str:
    directory = cfg.storage_config.tsdb_shipper.active_index_directory
    return os.path.abspath(directory) if directory else _under(cfg.common.path_prefix, "tsdb-index")


def index_cache_dir(cfg: "Config") -> str:
    directory = cfg.storage_config.tsdb_shipper.cache_location
    return os.path.abspath(directory) if directory else _under(cfg.common.path_prefix, "tsdb-cache")


def compactor_dir(cfg: "Config") -> str:
    directory = cfg.compactor.working_directory
    return os.path.abspath(directory) if directory else _under(cfg.common.path_prefix, "compactor")
