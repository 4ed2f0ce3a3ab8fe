"""The one way the CLI and the language server read a file: regular files only, bounded.

A path named by a user, a client or an analysed project can be anything: a FIFO (an
open for reading blocks until a writer comes, so the reader hangs), `/dev/zero` (never
ends), a folder, a socket, or a file that grows while it is read. So every read here:

- opens the path non-blocking (a FIFO swapped in after any earlier check cannot hang
  the open) and without acquiring a controlling terminal;
- checks the *open descriptor* with `fstat` (a stat of the path before opening it would
  race with a rename), and refuses what is not a regular file;
- compares the size the descriptor reports with the limit before reading a byte;
- reads at most `limit + 1` bytes, so a file that grows after the check is cut off and
  refused, never read without end.

Pure standard library, no atenlint imports: the CLI, the server, the fixes and the
worker may all use it.
"""

from __future__ import annotations

import os
import stat

# The most any read takes, whatever limit its caller names (a `max-file-size` of 10**18
# in a project's pyproject.toml included): far above any source file, notebook or
# configuration a person writes, far below what would hurt the process.
DEFAULT_LIMIT = 256 * 1024 * 1024
_CHUNK = 1 << 20


class NotRegularFile(OSError):
    """A path that is not a regular file, or is larger than allowed: never read."""

    def __init__(self, message: str, too_large: bool = False, size: int = 0):
        super().__init__(message)
        self.message, self.too_large, self.size = message, too_large, size


def file_kind(mode: int) -> str:
    """What a `st_mode` is, in words, for messages."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_regular_file(path: str, follow_links: bool = True) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on a regular file, and its `fstat`. The caller closes it.

    Raises NotRegularFile (a FIFO, a device, a folder, a socket; a symbolic link when
    `follow_links` is false) or OSError (missing, no permission)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags)
    except IsADirectoryError:
        raise NotRegularFile("not a regular file (a folder); atenlint reads regular files only") from None
    except OSError as error:
        if not follow_links and os.path.islink(path):  # O_NOFOLLOW on a link: ELOOP (EMLINK on BSD)
            raise NotRegularFile("a symbolic link; atenlint does not follow it here") from None
        raise error from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"not a regular file ({file_kind(info.st_mode)}); atenlint reads regular files only")
        if hasattr(os, "set_blocking"):
            # Reads of a regular file never block; blocking mode makes a short read mean
            # the end of the file on every platform.
            os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def read_descriptor(descriptor: int, size_hint: int, limit: int) -> bytes:
    """At most `limit` bytes from an open regular file whose `fstat` said `size_hint`;
    NotRegularFile when it holds more (at most `limit + 1` bytes are ever read)."""
    if size_hint > limit:
        raise NotRegularFile(f"{size_hint} bytes, over the {limit}-byte limit", too_large=True, size=size_hint)
    chunks: list[bytes] = []
    total, cap = 0, limit + 1
    while total < cap:
        chunk = os.read(descriptor, min(_CHUNK, cap - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise NotRegularFile(f"over the {limit}-byte limit (it grew while it was read)", too_large=True, size=total)
    return b"".join(chunks)


def _bound(limit: int | None) -> int:
    return DEFAULT_LIMIT if limit is None else min(max(limit, 0), DEFAULT_LIMIT)


def read_regular_file(path: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (never over DEFAULT_LIMIT),
    checked on the open descriptor before reading.

    Raises NotRegularFile for anything but a regular file and for a file over the limit,
    OSError when the path cannot be opened."""
    bound = _bound(limit)
    descriptor, info = open_regular_file(path)
    try:
        return read_descriptor(descriptor, info.st_size, bound)
    finally:
        os.close(descriptor)


def read_regular_file_with_stat(
    path: str, limit: int | None = None, follow_links: bool = True
) -> tuple[bytes, os.stat_result]:
    """`read_regular_file`, and the `fstat` of the descriptor it read (the identity of the
    file read: device, inode, links, mode; compare-and-swap writers compare it)."""
    bound = _bound(limit)
    descriptor, info = open_regular_file(path, follow_links)
    try:
        return read_descriptor(descriptor, info.st_size, bound), info
    finally:
        os.close(descriptor)
