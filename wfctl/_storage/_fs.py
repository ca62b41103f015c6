"""The file storage's I/O seam: every OS call the journal storage makes, on one object.

:class:`~wfctl._storage.FileCheckpointStorage` (with its appender and journal reader) touches the
file system only through a :class:`FileSystem`. The default, :data:`OS_FS`, is the operating
system itself. A test passes its own object with the same methods (``fs=``) to inject faults
(EIO, ENOSPC, short writes, failed syncs, renames that never happen) or to die at a chosen point
of a commit, instead of monkeypatching :mod:`os`: the layer below is swapped, not mocked.

Every method of :class:`OsFileSystem` looks its :mod:`os` function up at call time, so the
seam adds one method call and no behaviour.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import shutil
import threading
from collections.abc import Iterator, Sequence
from typing import Final, Protocol

__all__ = [
    "OS_FS",
    "FileSystem",
    "OsFileSystem",
    "replacing",
    "write_all",
    "write_private",
    "write_private_bytes",
    "writev_all",
]

#: Opening a directory to delete what is in it: never through a link.
_DIRECTORY_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_PRIVATE_FLAGS: Final = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_TRUNC
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


#: Whether ``os.access`` can leave a final symbolic link unfollowed here (POSIX systems can).
_ACCESS_NOFOLLOW: Final = os.access in os.supports_follow_symlinks


class FileSystem(Protocol):
    """The OS calls the file storage makes; each behaves like the :mod:`os` function it names.

    Errors are raised as :class:`OSError` (with its ``errno``), exactly as :mod:`os` raises them.
    """

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        """Open ``path`` and return a descriptor (:func:`os.open`)."""
        ...

    def close(self, fd: int) -> None:
        """Close a descriptor (:func:`os.close`)."""
        ...

    def write(self, fd: int, data: bytes | memoryview) -> int:
        """Write ``data``; return how many bytes were written, maybe fewer (:func:`os.write`)."""
        ...

    def writev(self, fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        """Write ``buffers`` in order as one write; return how many bytes, maybe fewer.

        :func:`os.writev`: the bytes land as if joined and written at once, without joining.
        """
        ...

    def fdatasync(self, fd: int) -> None:
        """Make a file's data durable (:func:`os.fdatasync`, else :func:`os.fsync`)."""
        ...

    def ftruncate(self, fd: int, length: int) -> None:
        """Cut a file to ``length`` bytes (:func:`os.ftruncate`)."""
        ...

    def fstat(self, fd: int) -> os.stat_result:
        """Describe an open file (:func:`os.fstat`)."""
        ...

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        """Read up to ``length`` bytes at ``offset`` (:func:`os.pread`)."""
        ...

    def stat(self, path: str) -> os.stat_result:
        """Describe ``path``, following symbolic links (:func:`os.stat`)."""
        ...

    def lstat(self, path: str) -> os.stat_result:
        """Describe ``path`` without following a final symbolic link (:func:`os.lstat`)."""
        ...

    def lexists(self, path: str) -> bool:
        """Whether ``path`` exists, even as a dangling link (:func:`os.path.lexists`)."""
        ...

    def mkdir(self, path: str, mode: int) -> None:
        """Create one directory (:func:`os.mkdir`)."""
        ...

    def makedirs(self, path: str, mode: int) -> None:
        """Create a directory and its missing parents (:func:`os.makedirs`, existing ok)."""
        ...

    def scandir(self, path: str) -> list[os.DirEntry[str]]:
        """List a directory's entries (:func:`os.scandir`)."""
        ...

    def replace(self, src: str, dst: str) -> None:
        """Rename ``src`` over ``dst`` atomically (:func:`os.replace`)."""
        ...

    def unlink(self, path: str) -> None:
        """Remove a file or link (:func:`os.unlink`)."""
        ...

    def rmtree(self, path: str) -> None:
        """Remove a directory tree (as :func:`shutil.rmtree`: a symbolic link is refused).

        Called from several threads at once when many runs are removed together.
        """
        ...

    def fsync_dir(self, path: str) -> None:
        """Make a directory's entries durable (a no-op where directories cannot be opened)."""
        ...


class OsFileSystem:
    """The real file system: each method is the :mod:`os` call of the same name."""

    def __repr__(self) -> str:
        return "OsFileSystem()"

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        return os.open(path, flags, mode)

    def close(self, fd: int) -> None:
        os.close(fd)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        return os.write(fd, data)

    def writev(self, fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        if hasattr(os, "writev"):
            return os.writev(fd, buffers)
        return os.write(fd, b"".join(buffers))  # pragma: no cover - Windows has no writev

    def fdatasync(self, fd: int) -> None:
        # fdatasync skips the metadata a journal does not need; macOS and Windows lack it.
        getattr(os, "fdatasync", os.fsync)(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        os.ftruncate(fd, length)

    def fstat(self, fd: int) -> os.stat_result:
        return os.fstat(fd)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        if hasattr(os, "pread"):
            return os.pread(fd, length, offset)
        os.lseek(fd, offset, os.SEEK_SET)  # pragma: no cover - Windows
        return os.read(fd, length)  # pragma: no cover

    def stat(self, path: str) -> os.stat_result:
        return os.stat(path)

    def lstat(self, path: str) -> os.stat_result:
        return os.lstat(path)

    def lexists(self, path: str) -> bool:
        if _ACCESS_NOFOLLOW:
            # faccessat(AT_SYMLINK_NOFOLLOW): a missing path costs no exception (half the
            # time of lexists's lstat; a run asks for its pause request at every step).
            try:
                return os.access(path, os.F_OK, follow_symlinks=False)
            except ValueError:  # an embedded NUL: no such path, as lexists says
                return False
        return os.path.lexists(path)

    def mkdir(self, path: str, mode: int) -> None:
        os.mkdir(path, mode)

    def makedirs(self, path: str, mode: int) -> None:
        os.makedirs(path, mode, exist_ok=True)

    def scandir(self, path: str) -> list[os.DirEntry[str]]:
        with os.scandir(path) as entries:
            return list(entries)

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def unlink(self, path: str) -> None:
        os.unlink(path)

    def rmtree(self, path: str) -> None:
        # A run's directory holds files only: one descriptor, its names read once, each
        # unlinked by name in it, then the directory (5 to 10 calls; shutil's walk makes ~15).
        try:
            fd = os.open(path, _DIRECTORY_FLAGS)
        except OSError:
            shutil.rmtree(path)  # not a directory we may open: shutil says why (or handles it)
            return
        try:
            for name in os.listdir(fd):
                try:
                    os.unlink(name, dir_fd=fd)
                except FileNotFoundError:
                    pass
                except OSError:  # a subdirectory, or a failure: the generic walk (or its error)
                    break
        finally:
            os.close(fd)
        try:
            os.rmdir(path)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            shutil.rmtree(path)

    def fsync_dir(self, path: str) -> None:
        if os.name != "posix":  # pragma: no cover - Windows cannot open a directory
            return
        flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = self.open(path, flags)
        try:
            os.fsync(fd)
        finally:
            self.close(fd)


#: The real file system, shared by every storage that is not given another one.
OS_FS: Final[FileSystem] = OsFileSystem()


def write_all(fs: FileSystem, fd: int, data: bytes, path: str) -> None:
    """Write all of ``data`` to ``fd``, continuing after short writes (see :func:`writev_all`).

    Raises:
        OSError: the write failed; ``filename`` is ``path``.
    """
    writev_all(fs, fd, (data,), path)


def writev_all(fs: FileSystem, fd: int, parts: Sequence[bytes | memoryview], path: str) -> None:
    """Write ``parts``, in order, to ``fd`` as if joined, continuing after short writes.

    Several parts go out in one ``writev``, so a big payload reaches the kernel without being
    copied into one buffer first; one part in one ``write``. A short write to a regular file
    means the disk (or a quota) filled up part way, or a signal interrupted the call: writing
    the rest (the parts not yet written, the first of them cut where the write stopped)
    either completes the data or gets the real error from the kernel (``ENOSPC``, "No space
    left on device"). A write that stores nothing at all is reported as ``ENOSPC`` too, so a
    disk that keeps accepting nothing cannot loop.

    Raises:
        OSError: the write failed; ``filename`` is ``path``.
    """
    pending = list(parts)
    size = sum(map(len, pending))
    while size:
        try:
            written = fs.writev(fd, pending) if len(pending) > 1 else fs.write(fd, pending[0])
        except OSError as exc:
            if exc.filename is None:  # os.write names no file: say which one
                raise OSError(exc.errno, exc.strerror, path) from exc
            raise
        if written == size:
            return  # the common case: all of it at once
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        size -= written
        while written >= len(pending[0]):  # drop the parts that landed
            written -= len(pending.pop(0))
        pending[0] = memoryview(pending[0])[written:]  # cut the one it stopped in (no copy)


def write_private(fs: FileSystem, path: str, payload: object, *, durable: bool = False) -> None:
    """Atomically replace ``path`` with ``payload`` as JSON, readable by the owner only.

    See :func:`write_private_bytes`.
    """
    data = json.dumps(payload, ensure_ascii=False).encode() + b"\n"
    write_private_bytes(fs, path, data, durable=durable)


def write_private_bytes(fs: FileSystem, path: str, data: bytes, *, durable: bool = False) -> None:
    """Atomically replace ``path`` with ``data``, readable by the owner only (``0600``).

    See :func:`replacing`.
    """
    with replacing(fs, path, 0o600, durable=durable) as (fd, tmp):
        write_all(fs, fd, data, tmp)


@contextlib.contextmanager
def replacing(
    fs: FileSystem, path: str, mode: int, *, durable: bool = False
) -> Iterator[tuple[int, str]]:
    """Yield a new temporary file beside ``path`` (its descriptor and name) to write; once the
    ``with`` block ends without error, rename it over ``path``.

    The temporary file is created exclusively, under a name nobody can guess, never through a
    symbolic link, with ``mode`` (less the umask). The rename replaces whatever entry ``path``
    was, a planted link included, and never writes through it. If anything fails (in the block,
    or a short write) the temporary file is removed and the error raised: ``path`` is left as
    it was, never partly written. ``durable`` syncs the temporary file before the rename and the
    directory after it, so the new content, never an empty or partial file, is what a power
    loss leaves.
    """
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.{secrets.token_hex(4)}.tmp"
    fd = fs.open(tmp, _PRIVATE_FLAGS | os.O_EXCL, mode)
    try:
        try:
            yield fd, tmp
            if durable:
                fs.fdatasync(fd)
        finally:
            fs.close(fd)
        fs.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # best effort: the error being raised matters
            fs.unlink(tmp)
        raise
    if durable:
        fs.fsync_dir(os.path.dirname(path))
