"""Files in the job directory: a local path or any URI pyarrow.fs knows (file, hdfs, s3a).

Every write is committed atomically: written under a temporary name, flushed (and fsynced
where the file system allows), then renamed into place; the temporary file is removed on
every failure path (a full disk included). Used by the driver and by the executors alike,
so it holds nothing but the root string.

What is inside the root is not trusted (a job directory may sit on a shared drive):
``open_inside`` reads only a plain relative path (no ``..``, no absolute path), walks its
folders without following a symbolic link (``O_NOFOLLOW`` on every component, relative to
the folder before it), opens only a regular file (never a FIFO, a device or a folder) and
refuses one larger than its caller's bound. Writes never go through a linked folder either.
The root itself is the caller's choice and is used as given.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import uuid
from urllib.parse import unquote, urlparse

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PART = re.compile(r"[^/\\\x00]{1,255}")
#: The longest relative path read from a job directory's records.
MAX_RELATIVE_PATH = 1024


class UnsafeFile(OSError):
    """A path from a job directory that is not read: outside it, a link, or not a regular file."""


def is_local(root: str) -> bool:
    """Whether ``root`` names local storage: a plain path, a ``file:`` URL or (on Windows) a drive."""
    scheme = urlparse(root).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(root: str) -> str:
    """A local root as a plain path: ``file:/p``, ``file:///p`` and ``file://localhost/p`` are ``/p``.

    A ``file://`` URI naming another host is refused (ValueError): it is not this machine's file.
    Percent-escapes are decoded, as in any file URI.
    """
    if not root.startswith("file:"):
        return root
    parsed = urlparse(root)
    if parsed.netloc not in ("", "localhost"):
        raise ValueError(f"{root!r} names host {parsed.netloc!r}; a file URI must be file:/path, "
                         "file:///path or file://localhost/path")
    return unquote(parsed.path) or "/"


def relative_parts(path) -> list[str]:
    """The components of a plain relative path ("results/v0/1.arrow"), or ValueError saying why not."""
    if not isinstance(path, str) or not path:
        raise ValueError(f"{path!r:.80} is not a path")
    if len(path) > MAX_RELATIVE_PATH:
        raise ValueError(f"a path of {len(path)} characters (at most {MAX_RELATIVE_PATH})")
    parts = path.split("/")
    for part in parts:
        if part in ("", ".", "..") or not _PART.fullmatch(part):
            raise ValueError(f"{path!r:.80} is not a plain relative path inside the job directory")
    return parts


class Storage:
    """The files under ``root`` (a local path or a URI), written atomically, read by path."""

    def __init__(self, root: str):
        self.root = root.rstrip("/") or "/"
        self.local = is_local(root)
        self._fs = None
        if self.local:
            self.base = os.path.abspath(local_path(root))
        else:
            import pyarrow.fs as pafs

            uri = "s3" + root[3:] if root.startswith("s3a://") else root
            self._fs, self.base = pafs.FileSystem.from_uri(uri)

    def path(self, *parts: str) -> str:
        return "/".join([self.base, *parts]) if not self.local else os.path.join(self.base, *parts)

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def atomic(self, path: str):
        """A binary file to write; committed under ``path`` only if the block succeeds.

        On any failure (the block's own, a full disk while flushing, closing or renaming) the
        temporary file is removed and the first error is raised.
        """
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        if self.local:
            self.make_folders(os.path.dirname(path))
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
            f = os.fdopen(fd, "wb")
            try:
                yield f
                f.flush()
                os.fsync(f.fileno())
                f.close()
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError, ValueError):
                    f.close()  # may fail again (a full disk): the file is closed all the same
                with contextlib.suppress(OSError):
                    os.remove(tmp)
                raise
            _fsync_dir(os.path.dirname(path))
        else:
            self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            f = self._fs.open_output_stream(tmp)
            try:
                yield f
                f.close()
                self._fs.move(tmp, path)
            except BaseException:
                with contextlib.suppress(Exception):
                    f.close()
                with contextlib.suppress(Exception):
                    self._fs.delete_file(tmp)
                raise

    def make_folders(self, path: str) -> None:
        """Create ``path`` and its missing parents; under the root one component at a time, never
        through a symbolic link (``UnsafeFile`` names a link or a non-folder in the way, before
        anything is created beyond it)."""
        inside = os.path.relpath(path, self.base)
        if inside == "." or inside.startswith(".."):
            os.makedirs(path, exist_ok=True)
            return
        os.makedirs(self.base, exist_ok=True)
        current = self.base
        for part in inside.split(os.sep):
            current = os.path.join(current, part)
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):  # another task made it meanwhile
                    os.mkdir(current)
                mode = os.lstat(current).st_mode
            if stat.S_ISLNK(mode):
                raise UnsafeFile(f"{current} is a symbolic link; fw-magics never writes through a link "
                                 "in a job directory: remove it")
            if not stat.S_ISDIR(mode):
                raise UnsafeFile(f"{current} is not a folder; fw-magics keeps its own files there: remove it")

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.atomic(path) as f:
            f.write(data)

    def open_append(self, path: str, new: bool = False):
        """A binary file to append to, created (with its folder) if missing: for logs, not results.

        Never through a symbolic link; ``new``: refuse a file that already exists.
        """
        if self.local:
            self.make_folders(os.path.dirname(path))
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | (os.O_EXCL if new else 0)
            return os.fdopen(os.open(path, flags, 0o644), "ab")
        return self._fs.open_append_stream(path)

    def remove(self, path: str) -> None:
        """Delete one file."""
        if self.local:
            os.remove(path)
        else:
            self._fs.delete_file(path)

    # -- reading ------------------------------------------------------------------------

    def open(self, path: str):
        return open(path, "rb") if self.local else self._fs.open_input_stream(path)

    def open_inside(self, relative: str, max_bytes: int | None = None):
        """The regular file at ``relative`` (a plain relative path) under the root, open for reading.

        FileNotFoundError when it is missing; ``UnsafeFile`` (an OSError) when the path is
        not plain, a component is a symbolic link, it is not a regular file, or it holds
        more than ``max_bytes``.
        """
        try:
            parts = relative_parts(relative)
        except ValueError as error:
            raise UnsafeFile(str(error)) from None
        if not self.local:
            return self._open_remote(parts, max_bytes)
        fd = self._open_local(parts)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeFile(f"{relative} is not a regular file")
            if max_bytes is not None and info.st_size > max_bytes:
                raise UnsafeFile(f"{relative} holds {info.st_size} bytes, more than {max_bytes}")
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb")

    def size_inside(self, relative: str) -> int | None:
        """The size of the regular file at ``relative`` (see ``open_inside``), None when it is missing."""
        try:
            with self.open_inside(relative) as f:
                return os.fstat(f.fileno()).st_size if self.local else f.size()
        except FileNotFoundError:
            return None

    def present_inside(self, relative: str) -> bool:
        """Whether anything is at ``relative``: a regular file, or what ``open_inside`` would refuse
        (a link, a FIFO, a folder), so that reading it says why."""
        try:
            return self.size_inside(relative) is not None
        except UnsafeFile:
            return True

    def listdir_inside(self, relative: str) -> list[str]:
        """The names in the folder at ``relative`` under the root ([] when it is missing); never through a link."""
        parts = relative_parts(relative)
        if not self.local:
            return self.listdir(self.path(*parts))
        try:
            fd = self._open_local(parts, folder=True)
        except FileNotFoundError:
            return []
        try:
            return sorted(os.listdir(fd)) if os.listdir in os.supports_fd else sorted(os.listdir(self.path(*parts)))
        finally:
            os.close(fd)

    def _open_local(self, parts: list[str], folder: bool = False) -> int:
        """Walk ``parts`` from the root, one component at a time, following no link."""
        if os.open not in os.supports_dir_fd or not _NOFOLLOW:  # no openat here: check the real path
            path = self.path(*parts)
            real, base = os.path.realpath(path), os.path.realpath(self.base)
            if os.path.commonpath([real, base]) != base or any(
                    os.path.islink(os.path.join(self.base, *parts[:k + 1])) for k in range(len(parts))):
                raise UnsafeFile(f"{'/'.join(parts)} goes through a symbolic link")
            return os.open(path, os.O_RDONLY | _CLOEXEC)
        current = os.open(self.base, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        try:
            for k, part in enumerate(parts):
                last = k == len(parts) - 1
                flags = os.O_RDONLY | _NOFOLLOW | _CLOEXEC | (_DIRECTORY if (not last or folder) else _NONBLOCK)
                try:
                    following = os.open(part, flags, dir_fd=current)
                except OSError as error:
                    if isinstance(error, FileNotFoundError):
                        raise
                    where = "/".join(parts[:k + 1])
                    try:
                        link = stat.S_ISLNK(os.stat(part, dir_fd=current, follow_symlinks=False).st_mode)
                    except OSError:
                        link = False
                    if link:
                        raise UnsafeFile(f"{where} is a symbolic link; fw-magics never follows links "
                                         "in a job directory") from None
                    raise UnsafeFile(f"{where} cannot be opened: {error.strerror or error}") from None
                os.close(current)
                current = following
            return current
        except BaseException:
            os.close(current)
            raise

    def _open_remote(self, parts: list[str], max_bytes: int | None):
        import pyarrow.fs as pafs

        path = self.path(*parts)
        info = self._fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        if info.type != pafs.FileType.File:
            raise UnsafeFile(f"{'/'.join(parts)} is not a regular file")
        if max_bytes is not None and info.size is not None and info.size > max_bytes:
            raise UnsafeFile(f"{'/'.join(parts)} holds {info.size} bytes, more than {max_bytes}")
        return self._fs.open_input_file(path)

    def size(self, path: str) -> int | None:
        if self.local:
            try:
                return os.path.getsize(path)
            except OSError:
                return None
        import pyarrow.fs as pafs

        info = self._fs.get_file_info(path)
        return info.size if info.type == pafs.FileType.File else None

    def exists(self, path: str) -> bool:
        return self.size(path) is not None

    def listdir(self, path: str) -> list[str]:
        if self.local:
            try:
                return sorted(os.listdir(path))
            except FileNotFoundError:
                return []
        import pyarrow.fs as pafs

        infos = self._fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        return sorted(info.base_name for info in infos)

    def remove_tree(self, path: str) -> None:
        """Delete a folder and everything in it (a symbolic link in its place is removed, not followed)."""
        if self.local:
            import shutil

            if os.path.islink(path):
                os.remove(path)
                return
            shutil.rmtree(path, ignore_errors=True)
        else:
            self._fs.delete_dir_contents(path, missing_dir_ok=True)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
