"""The one file-system layer: every file access in carbon-ds goes through here.

It wraps ``pyarrow.fs`` so that local paths, ``file://``, ``s3://`` and ``hdfs://`` are the same code.
Paths handed around inside carbon-ds are the file system's own paths (no scheme), normalised once here
to forward slashes (``norm_path``), so no other module spells path separators; a :class:`Storage` knows
how to turn them back into URIs for users.
"""

from __future__ import annotations

import os
import posixpath
import uuid
from dataclasses import dataclass
from functools import lru_cache

import pyarrow.fs as pafs

from carbon_ds.errors import CarbonError, CarbonFormatError, CarbonMissingFileError


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime_ns: int | None


class Storage:
    """A file system plus helpers carbon-ds needs (ranged reads, atomic whole-file writes, listing)."""

    def __init__(self, fs: pafs.FileSystem, scheme: str = ""):
        self.fs = fs
        self.scheme = scheme
        self.is_local = isinstance(fs, pafs.LocalFileSystem)

    # --------------------------------------------------------------- construction
    @staticmethod
    def for_path(path: str | os.PathLike) -> tuple[Storage, str]:
        """Return the storage for ``path`` and the path as that file system names it."""
        text = os.fspath(path)
        if "://" not in text:
            return _local(), norm_path(os.path.abspath(text))
        fs, inner = pafs.FileSystem.from_uri(text)
        scheme = text.split("://", 1)[0]
        if isinstance(fs, pafs.LocalFileSystem):
            return _local(), inner
        return Storage(fs, scheme), inner

    def uri(self, path: str) -> str:
        return path if self.is_local or not self.scheme else f"{self.scheme}://{path}"

    # --------------------------------------------------------------- reading
    def size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise CarbonError(f"not a file: {self.uri(path)}")
        return info.size

    def mtime_ns(self, path: str) -> int | None:
        """When ``path`` was last written (None when the store does not say, or it is not a file)."""
        info = self.fs.get_file_info(path)
        return info.mtime_ns if info.type == pafs.FileType.File else None

    def open(self, path: str) -> pafs.NativeFile:
        try:
            return self.fs.open_input_file(path)
        except FileNotFoundError:
            raise CarbonMissingFileError(f"file not found: {self.uri(path)}") from None

    def read_bytes(self, path: str) -> bytes:
        with self.open(path) as f:
            return f.read()

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:  # a damaged metadata file: say which and where
            raise CarbonFormatError(f"not valid UTF-8 text: {e.reason}", self.uri(path), e.start) from None

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def list(self, folder: str, recursive: bool = False) -> list[FileInfo]:
        """Files (not folders) under ``folder``, sorted by path; empty if the folder does not exist."""
        sel = pafs.FileSelector(folder, allow_not_found=True, recursive=recursive)
        out = [
            FileInfo(i.path, i.size, i.mtime_ns)
            for i in self.fs.get_file_info(sel)
            if i.type == pafs.FileType.File
        ]
        return sorted(out, key=lambda i: i.path)

    def list_dirs(self, folder: str) -> list[str]:
        sel = pafs.FileSelector(folder, allow_not_found=True)
        return sorted(i.path for i in self.fs.get_file_info(sel) if i.type == pafs.FileType.Directory)

    # --------------------------------------------------------------- writing
    def mkdirs(self, folder: str) -> None:
        self.fs.create_dir(folder, recursive=True)

    def open_output(self, path: str) -> pafs.NativeFile:
        self.mkdirs(dirname(path))
        return self.fs.open_output_stream(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.open_output(path) as f:
            f.write(data)

    def write_atomic(self, path: str, data: bytes) -> None:
        """Replace ``path`` so readers see the old bytes or the new ones, never a torn file.

        Local: write a sibling temp file, fsync, rename over. Object stores: a single PUT is atomic.
        """
        if not self.is_local:
            self.write_bytes(path, data)
            return
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist; True when this call created it."""
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return True
        if self.exists(path):
            return False
        self.write_bytes(path, data)
        return True

    def delete(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_dir(self, folder: str) -> None:
        try:
            self.fs.delete_dir(folder)
        except FileNotFoundError:
            pass

    def move(self, src: str, dst: str) -> None:
        self.fs.move(src, dst)

    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*(norm_path(p) for p in parts))


def norm_path(path: str) -> str:
    """A path with forward slashes and no trailing slash (the root stays "/")."""
    text = path.replace("\\", "/")
    return text.rstrip("/") or text[:1]


def basename(path: str) -> str:
    return posixpath.basename(norm_path(path))


def dirname(path: str) -> str:
    return posixpath.dirname(norm_path(path))


def is_inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies below it (both file-system paths)."""
    p, f = norm_path(path), norm_path(folder)
    return p == f or p.startswith(f.rstrip("/") + "/")


@lru_cache(maxsize=1)
def _local() -> Storage:
    return Storage(pafs.LocalFileSystem(), "file")


def storage_for(path: str | os.PathLike) -> tuple[Storage, str]:
    return Storage.for_path(path)
