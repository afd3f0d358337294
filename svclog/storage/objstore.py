"""Object store over pyarrow.fs: the local filesystem by default, S3/GCS by URI.

Keys are '/'-separated paths relative to the store root. Writes are atomic: on the
local filesystem a temporary key is written, then moved; an S3 PUT is atomic by itself.
On S3 a write is one PUT of the object and nothing else (no `dir/` marker objects: a
key's "directories" are only prefixes of other keys). Requests are counted by kind.
Each write or delete bumps a process-wide generation of the key's parent prefixes, so a cache
of listings in this process sees its own process's writes at once (`generation`).
"""

from __future__ import annotations

import builtins
import os
import threading
import uuid
from collections import Counter

import pyarrow as pa
import pyarrow.fs as pafs

from svclog.storage.s3 import open_s3, redact


class StoreError(Exception):
    """The object store failed (unreachable, permission, missing root...)."""


# (store root, prefix) -> writes and deletes under it by any ObjectStore of this process
_GENERATIONS: Counter[tuple[str, str]] = Counter()
_GENERATIONS_LOCK = threading.Lock()


class ObjectStore:
    def __init__(self, uri: str):
        """`uri`: a local path (created if missing) or a pyarrow.fs URI (s3://bucket/prefix, gs://...)."""
        self.uri = redact(uri)
        self.s3 = uri.startswith("s3://")
        if self.s3:
            fs, root = open_s3(uri)
            self.local = False
        elif "://" in uri and not uri.startswith("file://"):
            fs, root = pafs.FileSystem.from_uri(uri)
            self.local = False
        else:
            root = os.path.abspath(uri.removeprefix("file://"))
            os.makedirs(root, exist_ok=True)
            fs = pafs.LocalFileSystem()
            self.local = True
        self.fs = pafs.SubTreeFileSystem(root, fs)
        self.root = root
        # Requests sent, by kind (GET, PUT, LIST, HEAD, DELETE; the client's retries not included).
        # On S3 these are the requests pyarrow's client makes for each call: a HEAD (the size)
        # before a GET, a LIST after a HEAD that found no object (is it a "directory"?), and after
        # a delete a PUT of the parent's `dir/` marker (apache/arrow#36275: no way to turn it off).
        self.requests: Counter[str] = Counter()
        self._count_lock = threading.Lock()

    def _count(self, *kinds: str) -> None:
        with self._count_lock:
            self.requests.update(kinds)

    def request_counts(self) -> dict[str, int]:
        with self._count_lock:
            return dict(self.requests)

    def generation(self, prefix: str) -> int:
        """How often this process wrote or deleted a key under `prefix` (a directory-like prefix)."""
        with _GENERATIONS_LOCK:
            return _GENERATIONS[(self.root, prefix.strip("/"))]

    def _changed(self, key: str) -> None:
        parts = key.strip("/").split("/")[:-1]
        with _GENERATIONS_LOCK:
            for depth in range(len(parts) + 1):
                _GENERATIONS[(self.root, "/".join(parts[:depth]))] += 1

    def put(self, key: str, data: bytes) -> None:
        self._count("PUT")
        try:
            if self.local:
                parent = key.rsplit("/", 1)[0] if "/" in key else ""
                if parent:
                    self.fs.create_dir(parent, recursive=True)
                target = f"{key}.tmp-{uuid.uuid4().hex}"
            else:
                target = key  # no create_dir: on S3 it would write a `dir/` marker object per level
            with self.fs.open_output_stream(target) as out:
                out.write(data)
            if self.local:
                self.fs.move(target, key)
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store write {key!r} failed: {err}") from err
        finally:
            self._changed(key)

    def get(self, key: str) -> bytes:
        read = False  # S3: a GET follows the HEAD when there are bytes to read
        try:
            with self.fs.open_input_file(key) as handle:
                read = handle.size() > 0
                return handle.read()
        except FileNotFoundError:
            raise
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store read {key!r} failed: {err}") from err
        finally:
            if self.s3:
                self._count("HEAD", "GET") if read else self._count("HEAD")
            else:
                self._count("GET")

    def exists(self, key: str) -> bool:
        kind = None
        try:
            kind = self.fs.get_file_info(key).type
            return kind != pafs.FileType.NotFound
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store lookup {key!r} failed: {err}") from err
        finally:
            if self.s3 and kind != pafs.FileType.File:
                self._count("HEAD", "LIST")
            else:
                self._count("HEAD")

    def list(self, prefix: str, recursive: bool = False) -> list[str]:
        """Keys of the files under a directory-like prefix (sorted; missing prefix -> [])."""
        self._count("LIST")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(prefix, allow_not_found=True, recursive=recursive))
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store list {prefix!r} failed: {err}") from err
        return sorted(i.path for i in infos if i.type == pafs.FileType.File and ".tmp-" not in i.path)

    def list_dirs(self, prefix: str) -> builtins.list[str]:  # (`list` here is the method above)
        self._count("LIST")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(prefix, allow_not_found=True))
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store list {prefix!r} failed: {err}") from err
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def delete(self, key: str) -> None:
        deleted = False
        try:
            self.fs.delete_file(key)
            deleted = True
        except FileNotFoundError:
            pass
        except (OSError, pa.ArrowException) as err:
            raise StoreError(f"object store delete {key!r} failed: {err}") from err
        finally:
            if deleted:
                self._changed(key)
            if self.s3:
                self._count("HEAD", "DELETE", "PUT") if deleted else self._count("HEAD")
            else:
                self._count("DELETE")
