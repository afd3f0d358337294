"""Derived locations: object store URI, WAL, rules, index and compactor directories."""
import os
import urllib.parse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .root import Config
    from .storage import CommonConfig, StorageConfig


def _under(prefix: str, name: str) -> str:
    return os.path.abspath(os.path.join(prefix or ".", name))


def store_uri_for(common: "CommonConfig", storage: "StorageConfig | None" = None,
                  object_store: str = "filesystem") -> str:
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
    bucket = s3.bucketnames.split(",")[0].strip()
    if not bucket and s3.s3:
        bucket = urllib.parse.urlparse(s3.s3).path.strip("/")
    params = {}
    if s3.endpoint:
        params["endpoint_override"] = s3.endpoint
        params["scheme"] = "http" if s3.insecure else "https"
    if s3.region:
        params["region"] = s3.region
    if s3.access_key_id:
        params["access_key"] = s3.access_key_id
        params["secret_key"] = s3.secret_access_key
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
