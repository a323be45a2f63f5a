"""Files in the job directory: a local path or any URI pyarrow.fs knows (file, hdfs, s3a).

Every write is committed atomically: written under a temporary name, flushed (and fsynced
where the file system allows), then renamed into place. Used by the driver and by the
executors alike, so it holds nothing but the root string.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from urllib.parse import urlparse


def _is_local(root: str) -> bool:
    scheme = urlparse(root).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


class Storage:
    """The files under ``root`` (a local path or a URI), written atomically, read by path."""

    def __init__(self, root: str):
        self.root = root.rstrip("/")
        self.local = _is_local(root)
        self._fs = None
        if self.local:
            self.base = urlparse(root).path if root.startswith("file:") else root
            self.base = os.path.abspath(self.base)
        else:
            import pyarrow.fs as pafs

            uri = "s3" + root[3:] if root.startswith("s3a://") else root
            self._fs, self.base = pafs.FileSystem.from_uri(uri)

    def path(self, *parts: str) -> str:
        return "/".join([self.base, *parts]) if not self.local else os.path.join(self.base, *parts)

    # -- writing ------------------------------------------------------------------------

    @contextlib.contextmanager
    def atomic(self, path: str):
        """A binary file to write; committed under ``path`` only if the block succeeds."""
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            f = open(tmp, "wb")
            try:
                yield f
                f.flush()
                os.fsync(f.fileno())
                f.close()
                os.replace(tmp, path)
                _fsync_dir(os.path.dirname(path))
            except BaseException:
                f.close()
                with contextlib.suppress(OSError):
                    os.remove(tmp)
                raise
        else:
            self._fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
            f = self._fs.open_output_stream(tmp)
            try:
                yield f
                f.close()
                self._fs.move(tmp, path)
            except BaseException:
                f.close()
                with contextlib.suppress(OSError):
                    self._fs.delete_file(tmp)
                raise

    def write_bytes(self, path: str, data: bytes) -> None:
        with self.atomic(path) as f:
            f.write(data)

    def open_append(self, path: str):
        """A binary file to append to, created (with its folder) if missing: for logs, not results."""
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            return open(path, "ab")
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
        if self.local:
            import shutil

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
