"""The one file-system layer: every file access in carbon-ds goes through here.

It wraps ``pyarrow.fs`` so that local paths, ``file://``, ``s3://`` and ``hdfs://`` are the same code.
Paths handed around inside carbon-ds are the file system's own paths (no scheme), normalised once here
to forward slashes (``norm_path``), so no other module spells path separators; a :class:`Storage` knows
how to turn them back into URIs for users.

Atomic "create if absent" and "replace if unchanged" (what locks and tablestatus commits stand on) differ
per store, and :meth:`Storage.conditional_writes` says which kind a storage has:

* local disks: ``O_CREAT | O_EXCL``; a replace is checked under the table lock, then renamed over;
* S3: conditional PUTs (``If-None-Match: *``, ``If-Match: <ETag>``) through botocore (``carbon_ds.fs_s3``,
  the ``s3`` extra), after checking once per bucket that the store honours them;
* anything else (HDFS, an S3 store without conditional PUTs, S3 without botocore): check, then write. Not
  atomic: such tables are single-writer; the table lock keeps a second writer out through an intent round
  and the tablestatus commit detects one (``carbon_ds.table.meta.locks``, ``.tablestatus``).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import queue
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module
from typing import Any

import pyarrow.fs as pafs

from carbon_ds.errors import (
    CarbonError,
    CarbonFormatError,
    CarbonMissingFileError,
    CarbonOptionError,
    CarbonTableError,
    see,
)

# A file's content: its bytes, or parts (bytes, memoryviews) to write one after the other
Content = bytes | tuple[bytes | memoryview, ...]


@dataclass(frozen=True)
class FileInfo:
    path: str
    size: int
    mtime_ns: int | None
    is_link: bool = False  # a symbolic link listed as itself (``follow_links=False``), never its target


class Storage:
    """A file system plus helpers carbon-ds needs (ranged reads, atomic whole-file writes, listing)."""

    def __init__(self, fs: pafs.FileSystem, scheme: str = ""):
        self.fs = fs
        self.scheme = scheme
        self.is_local = isinstance(fs, pafs.LocalFileSystem)
        self._conditional: Any = None  # S3: the conditional-PUT client (None: none)
        self._looked_up_in = 0  # the pid that looked it up: a forked child must not share its connections

    def __getstate__(self) -> dict:
        # botocore clients do not pickle; a copy in another process looks up its own
        return {**self.__dict__, "_conditional": None, "_looked_up_in": 0}

    # --------------------------------------------------------------- construction
    @staticmethod
    def for_path(path: str | os.PathLike) -> tuple[Storage, str]:
        """Return the storage for ``path`` and the path as that file system names it (a file system given
        by :func:`resolve` for ``path`` or a folder above it wins over one built from the URI)."""
        text = os.fspath(path)
        found = _configured_for(text)
        if found is not None:
            return found
        if "://" not in text:
            return _local(), check_local_path(norm_path(os.path.abspath(text)))
        fs, inner = pafs.FileSystem.from_uri(text)
        scheme = text.split("://", 1)[0]
        if isinstance(fs, pafs.LocalFileSystem):
            return _local(), check_local_path(inner)
        return Storage(fs, scheme), inner

    def uri(self, path: str) -> str:
        return path if self.is_local or not self.scheme else f"{self.scheme}://{path}"

    # --------------------------------------------------------------- reading
    def size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise CarbonError(f"not a file: {self.uri(path)}")
        return info.size

    def stat(self, path: str) -> tuple[int, int | None]:
        """(size, mtime in ns or None when the store does not say) of the file ``path``, in one call."""
        info = self.fs.get_file_info(path)
        if info.type != pafs.FileType.File:
            raise CarbonError(f"not a file: {self.uri(path)}")
        return info.size, info.mtime_ns

    def signature(self, path: str) -> tuple[int, int, int] | None:
        """(size, mtime in ns, inode) of a file or folder on a local disk, in one system call: what caches of
        parsed metadata check before they answer (a file written again, or a folder whose entries changed,
        gets another). None when absent, and on object stores (no folder times; their caches are not used)."""
        if not self.is_local:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_size, st.st_mtime_ns, st.st_ino

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

    def list(self, folder: str, recursive: bool = False, follow_links: bool = True) -> list[FileInfo]:
        """Files (not folders) under ``folder``, sorted by path; empty if the folder does not exist.

        ``follow_links=False`` (what every deletion lists with) never goes through a symbolic link on a
        local disk: a link to a file or folder is listed as itself (``is_link``), so removing or moving what
        is listed removes the link, never what it points to. A ``folder`` that is itself a link is listed as
        that one link. Object stores have no links: the same listing either way.
        """
        if not follow_links and self.is_local:
            return _list_no_links(folder, recursive)
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

    # --------------------------------------------------------------- symbolic links (local disks)
    def is_link(self, path: str) -> bool:
        return self.is_local and os.path.islink(path)

    def real_path(self, path: str) -> str:
        """``path`` with every symbolic link resolved (local disks); other stores' paths are already real."""
        return norm_path(os.path.realpath(path)) if self.is_local else norm_path(path)

    def resolves_inside(self, path: str, root: str) -> bool:
        """Whether deleting or moving ``path`` stays inside ``root``: it lies below ``root`` and so does its
        folder once every link is resolved (``path`` itself may be a link: that removes the link only)."""
        if not is_inside(path, root) or norm_path(path) == norm_path(root):
            return False
        return not self.is_local or is_inside(self.real_path(dirname(path)), self.real_path(root))

    def require_inside(self, path: str, root: str, what: str) -> None:
        """Refuse to write or delete ``path`` when its folder is reached through a symbolic link that leads
        out of ``root`` (local disks; ``what`` names the operation for the message).

        Raises:
            CarbonTableError: naming the link and where it leads.
        """
        if self.is_local and not self.resolves_inside(path, root):
            raise CarbonTableError(
                f"{what} refused: {dirname(path)} resolves to {self.real_path(dirname(path))}, outside the table "
                f"{root} (a symbolic link); a table's LockFiles, Metadata and .Trash must be its own folders")

    def links(self, folder: str) -> list[tuple[str, str]]:
        """(link, real target) of every symbolic link in ``folder``'s tree, ``folder`` included, looking
        through linked folders too (each real folder once, so a cycle ends); empty on object stores."""
        if not self.is_local:
            return []
        found: list[tuple[str, str]] = []
        seen: set[str] = set()
        stack = [norm_path(folder)]
        if os.path.islink(folder):
            found.append((norm_path(folder), self.real_path(folder)))
        while stack:
            d = stack.pop()
            real = self.real_path(d)
            if real in seen:
                continue
            seen.add(real)
            try:
                entries = list(os.scandir(d))
            except OSError:  # gone, unreadable, or a link to a file
                continue
            for e in entries:
                if e.is_symlink():
                    found.append((norm_path(e.path), self.real_path(e.path)))
                if e.is_dir():
                    stack.append(norm_path(e.path))
        return sorted(found)

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
        self._replace_local(path, data)

    @staticmethod
    def _replace_local(path: str, data: Content) -> os.stat_result:
        """``write_atomic`` on a local disk; the new file's status, taken after the rename."""
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as f:
            for part in (data,) if isinstance(data, bytes) else data:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
            old = _RELEASER.hold(path)
            os.replace(tmp, path)
            st = os.fstat(f.fileno())
        _RELEASER.release(old)
        return st

    # --------------------------------------------------------------- atomic primitives
    def conditional_writes(self, path: str) -> bool:
        """Whether ``create_exclusive`` and ``replace_if`` are atomic at ``path``, so concurrent writers are
        safe there (on S3 this asks the store once per bucket whether it honours conditional PUTs)."""
        return self.is_local or self._s3(probe_near=path) is not None

    def _s3(self, probe_near: str | None = None) -> Any:
        """The conditional-PUT client of an S3 storage whose store honours ``If-None-Match``, else None."""
        if self._looked_up_in != os.getpid():
            self._conditional = _conditional_client(self.fs)
            self._looked_up_in = os.getpid()
        client = self._conditional
        if client is None or probe_near is None:
            return client
        bucket = norm_path(probe_near).split("/", 1)[0]
        key = (id(client), bucket)
        if key not in _honoured:
            _honoured[key] = _probe(client, Storage.join(dirname(probe_near), f".carbon-ds-probe-{uuid.uuid4().hex}"))
        return client if _honoured[key] else None

    def create_exclusive(self, path: str, data: bytes) -> bool:
        """Create ``path`` only if it does not exist; True when this call created it.

        Atomic where ``conditional_writes(path)`` is True; elsewhere check-then-write, so two callers racing within
        the same instant can both get True (callers re-read what they wrote to notice).
        """
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return True
        client = self._s3(probe_near=path)
        if client is not None:
            return client.create(path, data)
        if self.exists(path):
            return False
        self.write_bytes(path, data)
        return True

    def read_versioned(self, path: str) -> tuple[bytes | None, str | None]:
        """(content, version) of ``path``, (None, None) when absent; the version is what ``replace_if`` takes
        (an S3 ETag; on a local disk a token that stays while the bytes do; elsewhere a digest of the
        content)."""
        client = self._s3()
        if client is not None:
            got = client.read(path)
            return (None, None) if got is None else got
        if self.is_local:
            return _LOCAL_VERSIONS.read(path)
        try:
            data = self.read_bytes(path)
        except CarbonMissingFileError:
            return None, None
        return data, _digest(data)

    def known_version(self, path: str) -> str | None:
        """The version ``read_versioned`` would give, when this process knows it without reading the file (a
        local file it wrote or read, unchanged since); None otherwise."""
        return _LOCAL_VERSIONS.known(path) if self.is_local else None

    def replace_if(self, path: str, data: Content, version: str | None) -> bool:
        """Replace ``path`` with ``data`` (bytes, or the parts to write one after the other) only if it is still
        at ``version`` (None: still absent); True when replaced. Readers see the old bytes or the new ones.

        S3 with conditional PUTs: one request the store decides. Elsewhere the check and the write are two
        steps: atomic only against writers that hold the table lock (always true on local disks)."""
        client = self._s3(probe_near=path)
        if client is not None:
            return client.replace(path, joined(data), version)
        if self.is_local:
            if _LOCAL_VERSIONS.token(path) != version:
                return False
            _LOCAL_VERSIONS.wrote(path, data, self._replace_local(path, data))
            return True
        if self.read_versioned(path)[1] != version:
            return False
        self.write_atomic(path, joined(data))
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


NAME_MAX = 255
"""Bytes in one file or folder name on local file systems (Linux, macOS; Windows: characters)."""
PATH_MAX = 4096
"""Bytes in a whole local path (Linux)."""


def check_local_path(path: str) -> str:
    """``path`` itself, when the local file system can hold it: the OS would refuse a longer one with a
    bare ``OSError`` (ENAMETOOLONG) somewhere deep inside a read or write.

    Raises:
        CarbonOptionError: naming the limit, the length found and the offending part.
    """
    if len(path) * 4 <= NAME_MAX:  # UTF-8 needs at most 4 bytes a character: nothing to measure
        return path
    size = len(path.encode("utf-8", "surrogatepass"))
    if size >= PATH_MAX:
        raise CarbonOptionError(f"path too long: at most {PATH_MAX - 1} bytes, found {size} ({path[:80]}...)")
    for part in path.split("/"):
        n = len(part.encode("utf-8", "surrogatepass"))
        if n > NAME_MAX:
            raise CarbonOptionError(f"name too long: a file or folder name holds at most {NAME_MAX} bytes, found "
                                    f"{n} ({part[:40]}...) in path {path[:120]}...")
    return path


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


def _list_no_links(folder: str, recursive: bool) -> list[FileInfo]:
    def info(path: str, link: bool) -> FileInfo:
        st = os.lstat(path)
        return FileInfo(norm_path(path), st.st_size, st.st_mtime_ns, link)

    if os.path.islink(folder):
        return [info(folder, True)]
    out: list[FileInfo] = []
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            if e.is_symlink():
                out.append(info(e.path, True))
            elif e.is_dir(follow_symlinks=False):
                if recursive:
                    stack.append(e.path)
            elif e.is_file(follow_symlinks=False):
                out.append(info(e.path, False))
    return sorted(out, key=lambda i: i.path)


# (client, bucket) -> whether the store refused a second If-None-Match PUT, as it must
_honoured: dict[tuple[int, str], bool] = {}


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _LocalVersions:
    """Versions of local files for ``replace_if``: one token per content met at a path, given again while
    the file reads the same bytes. A content that comes back after another was read at that path gets a new
    token (``replace_if`` then refuses, as a change in between deserves).

    A commit of a table of 10,000 segments reads its 2 MB tablestatus four times. The content and token last
    met at a path are kept with the file's status (size, mtime, ctime, inode; taken from the open file), and
    while ``stat`` gives the same, the file is not read again: a replace by rename makes another inode (the
    old one is in use while the new file is written, so they cannot share it), a write in place another
    ctime. Within a clock tick, though, a kernel that stamps files with a coarse clock gives a write in place
    the same times: a file read less than ``_TICK_NS`` after its ctime is read again and compared (as git
    treats "racily clean" files). A file this process wrote is trusted by its status: it was made by a
    rename under the table lock, and only a writer in place that ignores the lock, within the tick, writing
    the same size, could go unnoticed (kernels since 6.13 stamp a file whose status was taken, as here, with a
    fine clock, so not even that). What this process wrote is kept as written (parts, not joined until
    someone reads the bytes)."""

    def __init__(self, max_paths: int = 16):
        self._max = max_paths
        # path -> (content, token, file status, whether this process wrote it, when it was read)
        self._seen: OrderedDict[str, tuple[Content, str, tuple[int, int, int, int], bool, int]] = OrderedDict()
        self._lock = threading.Lock()

    def known(self, path: str) -> str | None:
        """The token of ``path`` when its kept content is still the file's, without reading it."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        with self._lock:
            seen = self._seen.get(path)
        if seen is not None and seen[2] == _status(st) and (seen[3] or seen[4] - st.st_ctime_ns > _TICK_NS):
            return seen[1]
        return None

    def token(self, path: str) -> str | None:
        """The token of ``path`` (None when absent), reading it only when not known."""
        known = self.known(path)
        return known if known is not None else self.read(path)[1]

    def read(self, path: str) -> tuple[bytes | None, str | None]:
        """(content, version) of the local file ``path``; (None, None) when absent."""
        if self.known(path) is not None:
            with self._lock:
                seen = self._seen.get(path)
                if seen is not None:
                    if not isinstance(seen[0], bytes):  # kept as written: joined once, when first read
                        seen = self._seen[path] = (joined(seen[0]), *seen[1:])
                    return seen[0], seen[1]  # type: ignore[return-value]
        try:
            with open(path, "rb") as f:
                data = f.read()
                st = os.fstat(f.fileno())
        except FileNotFoundError:
            return None, None
        return data, self._record(path, data, st, new=False)

    def wrote(self, path: str, data: Content, st: os.stat_result) -> None:
        """This process just replaced ``path`` with ``data``, whose file has status ``st``."""
        self._record(path, data, st, new=True)

    def _record(self, path: str, data: Content, st: os.stat_result, new: bool) -> str:
        with self._lock:
            seen = self._seen.get(path)
            if not new and seen is not None and joined(seen[0]) == data:
                token = seen[1]
            else:
                token = f"local-{sum(map(len, (data,) if isinstance(data, bytes) else data))}-{uuid.uuid4().hex}"
            self._seen[path] = (data, token, _status(st), new, time.time_ns())
            self._seen.move_to_end(path)
            while len(self._seen) > self._max:
                self._seen.popitem(last=False)
            return token


def joined(data: Content) -> bytes:
    """The bytes of a content given as parts (``replace_if``)."""
    return data if isinstance(data, bytes) else b"".join(data)


class _Releaser:
    """Frees the blocks of files replaced by rename off the caller's path. Replacing a file frees the old
    one's blocks within the rename (half a millisecond for a 2 MB tablestatus, twice per load); holding the
    old file open across the rename moves that to the close, which a thread of its own does."""

    def __init__(self, min_size: int = 1 << 20):
        self._min = min_size
        self._queue: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def hold(self, path: str) -> int | None:
        """A descriptor of the large file at ``path`` (None when absent or small, or where a file held open
        cannot be renamed over: Windows)."""
        if os.name != "posix":
            return None
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        if os.fstat(fd).st_size < self._min:
            os.close(fd)
            return None
        return fd

    def release(self, fd: int | None) -> None:
        if fd is None:
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():  # first use, or a forked child
                self._thread = threading.Thread(target=self._run, name="carbon-ds-release", daemon=True)
                self._thread.start()
        self._queue.put(fd)

    def _run(self) -> None:
        while True:
            os.close(self._queue.get())


_RELEASER = _Releaser()


def _status(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


# Coarse file clocks tick every jiffy (4 ms at HZ=250, 10 ms at HZ=100)
_TICK_NS = 20_000_000

_LOCAL_VERSIONS = _LocalVersions()


def _conditional_client(fs: pafs.FileSystem) -> Any:
    """A ``carbon_ds.fs_s3`` client for an S3 file system; None for other stores, without botocore, or when
    ``CARBON_DS_S3_CONDITIONAL=0`` declares the store one without conditional writes."""
    if not isinstance(fs, pafs.S3FileSystem) or os.environ.get("CARBON_DS_S3_CONDITIONAL", "1") == "0":
        return None
    try:
        backend = import_module("carbon_ds.fs_s3")  # loads botocore: only for S3, only when installed
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] != "botocore":
            raise
        return None
    options = fs.__reduce__()[1][0]  # the file system's own settings: endpoint, keys, scheme
    if options.get("role_arn"):
        return None  # pyarrow assumes that role itself; the plain client would act as another principal
    return backend.client_for(options, fs.region)


_probe_guard = threading.Lock()


def _probe(client: Any, path: str) -> bool:
    """Whether the store honours ``If-None-Match: *``: a second conditional create of one key must fail."""
    with _probe_guard:
        try:
            honoured = client.create(path, b"1") and not client.create(path, b"2")
        except client.Unsupported:
            honoured = False
        client.delete(path)
        return honoured


@lru_cache(maxsize=1)
def _local() -> Storage:
    return Storage(pafs.LocalFileSystem(), "file")




# ------------------------------------------------------------------ storage_options / filesystem
# URI prefix (a table or folder) -> its storage, for paths a caller gave with storage_options or a filesystem:
# every later Storage.for_path below that prefix, in any layer, gets the same configured file system.
_configured: dict[str, Storage] = {}
_configured_guard = threading.Lock()

# storage_options names other libraries use (delta-rs, fsspec, object_store), as pyarrow.fs.S3FileSystem's
_S3_ALIASES = {
    "aws_access_key_id": "access_key", "key": "access_key", "access_key_id": "access_key",
    "aws_secret_access_key": "secret_key", "secret": "secret_key", "secret_access_key": "secret_key",
    "aws_session_token": "session_token", "token": "session_token",
    "aws_region": "region", "region_name": "region",
    "endpoint_url": "endpoint_override", "aws_endpoint_url": "endpoint_override", "endpoint": "endpoint_override",
}
_S3_KEYS = ("access_key", "secret_key", "session_token", "region", "endpoint_override", "scheme", "anonymous",
            "role_arn", "request_timeout", "connect_timeout", "force_virtual_addressing", "allow_bucket_creation",
            "allow_bucket_deletion", "proxy_options")
_HDFS_KEYS = ("host", "port", "user", "replication", "buffer_size", "default_block_size", "kerb_ticket",
              "extra_conf")
_FLAGS = ("anonymous", "force_virtual_addressing", "allow_bucket_creation", "allow_bucket_deletion", "allow_http")
_SCHEMES = {"s3": "s3", "hdfs": "hdfs", "gcs": "gs"}  # pyarrow FileSystem.type_name -> URI scheme


def resolve(path: str | os.PathLike, storage_options: dict[str, Any] | None = None,
            filesystem: pafs.FileSystem | None = None) -> str:
    """The path every layer below an entry point is handed, after taking the caller's file-system settings.

    Entry points (``read_table``, ``scan``, ``write_table``, ``CarbonTable.open/create``, the Spark data
    source, the CLI) call this once. ``storage_options`` (S3: ``access_key``/``aws_access_key_id``,
    ``secret_key``, ``region``, ``endpoint_url``, ``allow_http``, ...; HDFS: ``host``, ``port``, ``user``,
    ...) build the pyarrow file system for the path's scheme; ``filesystem`` is one built by the caller
    (then ``path`` may be the file system's own path, without a scheme). Either way the storage is kept
    for ``path`` and everything below it, in this process, until configured again.

    Raises:
        CarbonOptionError: both given, an unknown option name, or options for a local path.
    """
    text = os.fspath(path)
    if storage_options is None and filesystem is None:
        return text
    if storage_options is not None and filesystem is not None:
        raise CarbonOptionError(f"give storage_options or filesystem for {text}, not both")
    if filesystem is not None:
        if not isinstance(filesystem, pafs.FileSystem):
            raise CarbonOptionError(f"filesystem must be a pyarrow.fs.FileSystem, found {type(filesystem).__name__} "
                                    f"(for {text})")
        if isinstance(filesystem, pafs.LocalFileSystem):
            return text
        scheme = _SCHEMES.get(filesystem.type_name, filesystem.type_name)
        inner = text.split("://", 1)[1] if "://" in text else text
        uri = f"{scheme}://{norm_path(inner).lstrip('/') if scheme in ('s3', 'gs') else norm_path(inner)}"
        _remember(uri, Storage(filesystem, scheme))
        return uri
    if "://" not in text or text.startswith("file://"):
        if storage_options:
            raise CarbonOptionError(f"storage_options {sorted(storage_options)} given for the local path {text}; "
                                    "they apply to s3:// and hdfs:// paths")
        return text
    scheme = text.split("://", 1)[0].lower()
    _remember(text, Storage(_build(scheme, text, dict(storage_options or {})), scheme))
    return text


def _build(scheme: str, uri: str, options: dict[str, Any]) -> pafs.FileSystem:
    if scheme in ("s3", "s3a"):
        kwargs = {_S3_ALIASES.get(k.lower(), k.lower()): v for k, v in options.items()}
        _known(kwargs, _S3_KEYS + ("allow_http",), uri)
        for flag in _FLAGS:
            if isinstance(kwargs.get(flag), str):  # the CLI and Spark options hand text
                kwargs[flag] = kwargs[flag].strip().lower() in ("true", "1", "yes")
        endpoint = str(kwargs.get("endpoint_override") or "")
        if "://" in endpoint:  # pyarrow wants host[:port] and the scheme apart
            kwargs.setdefault("scheme", endpoint.split("://", 1)[0])
            kwargs["endpoint_override"] = endpoint.split("://", 1)[1].rstrip("/")
        if kwargs.pop("allow_http", False):
            kwargs.setdefault("scheme", "http")
        return pafs.S3FileSystem(**kwargs)
    if scheme in ("hdfs", "viewfs"):
        kwargs = {k.lower(): v for k, v in options.items()}
        _known(kwargs, _HDFS_KEYS, uri)
        netloc = uri.split("://", 1)[1].split("/", 1)[0]
        host, _, port = netloc.partition(":")
        kwargs.setdefault("host", host or "default")
        kwargs["port"] = int(kwargs.get("port") or port or 8020)
        return pafs.HadoopFileSystem(**kwargs)
    if scheme in ("gs", "gcs"):
        return pafs.GcsFileSystem(**options)
    raise CarbonOptionError(f"storage_options are not supported for {scheme}:// paths ({uri}); pass filesystem= "
                            "a pyarrow.fs.FileSystem instead")


def _known(kwargs: dict[str, Any], valid: tuple[str, ...], uri: str) -> None:
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise CarbonOptionError(f"unknown storage option(s) {', '.join(unknown)} for {uri}; valid: "
                                f"{', '.join(sorted(valid))} (and the aliases {', '.join(sorted(_S3_ALIASES))})" + see("object-stores.md"))


def _remember(uri: str, storage: Storage) -> None:
    with _configured_guard:
        _configured[norm_path(uri)] = storage


def _configured_for(text: str) -> tuple[Storage, str] | None:
    if not _configured or "://" not in text:
        return None
    key = norm_path(text)
    best = max((k for k in _configured if key == k or key.startswith(k + "/")), key=len, default=None)
    if best is None:
        return None
    storage = _configured[best]
    inner = key.split("://", 1)[1]
    return storage, inner if storage.scheme != "hdfs" else "/" + inner.split("/", 1)[1] if "/" in inner else "/"
