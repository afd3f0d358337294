"""Object store over pyarrow.fs: the local filesystem by default, S3/GCS by URI.

Keys are '/'-separated paths relative to the store root. Writes are atomic on the
local filesystem (write to a temporary key, then move) so readers never see a
half-written chunk or index file.
"""
from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.fs as pafs


class StoreError(Exception):
    """The object store failed (unreachable, permission, missing root...)."""


class ObjectStore:
    def __init__(self, uri: str):
        """`uri`: a local path (created if missing) or a pyarrow.fs URI (s3://bucket/prefix, gs://...)."""
        self.uri = uri
        if "://" in uri and not uri.startswith("file://"):
            fs, root = pafs.FileSystem.from_uri(uri)
            self.local = False
        else:
            root = os.path.abspath(uri.removeprefix("file://"))
            os.makedirs(root, exist_ok=True)
            fs = pafs.LocalFileSystem()
            self.local = True
        self.fs = pafs.SubTreeFileSystem(root, fs)
        self.root = root

    def put(self, key: str, data: bytes) -> None:
        try:
            parent = key.rsplit("/", 1)[0] if "/" in key else ""
            if parent:
                self.fs.create_dir(parent, recursive=True)
            target = f"{key}.tmp-{uuid.uuid4().hex}" if self.local else key
            with self.fs.open_output_stream(target) as out:
                out.write(data)
            if self.local:
                self.fs.move(target, key)
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store write {key!r} failed: {err}") from err

    def get(self, key: str) -> bytes:
        try:
            with self.fs.open_input_file(key) as handle:
                return handle.read()
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store read {key!r} failed: {err}") from err

    def exists(self, key: str) -> bool:
        return self.fs.get_file_info(key).type != pafs.FileType.NotFound

    def list(self, prefix: str, recursive: bool = False) -> list[str]:
        """Keys of the files under a directory-like prefix (sorted; missing prefix -> [])."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(prefix, allow_not_found=True, recursive=recursive))
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store list {prefix!r} failed: {err}") from err
        return sorted(i.path for i in infos if i.type == pafs.FileType.File and ".tmp-" not in i.path)

    def list_dirs(self, prefix: str) -> list[str]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(prefix, allow_not_found=True))
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store list {prefix!r} failed: {err}") from err
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def delete(self, key: str) -> None:
        try:
            self.fs.delete_file(key)
        except FileNotFoundError:
            pass
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store delete {key!r} failed: {err}") from err
