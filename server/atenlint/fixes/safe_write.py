"""Writing a fixed file so that nothing but that file's own bytes can change.

`--fix` edits files whose locations came out of an analysis of code atenlint does not
trust (a finding's path can name any file the analysed code reached, or forged). So a
file is rewritten only when all of these hold, and otherwise left alone with a reason:

- it is inside the paths the user gave (`allowed_roots`, compared after resolving links);
- it is not a symbolic link (replacing the link by a fixed copy would leave its target
  unchanged and break the link; editing the target would edit a file the user did not
  name);
- it is a regular file with one name (a hard-linked file rewritten by rename would
  split from its other names, silently);
- it is writable (a read-only file says "do not change me");
- its bytes and identity are still those that were read (a save that landed since is
  never overwritten): compare-and-swap, checked again just before the rename.

The write itself is atomic: a temporary file in the same folder, written and fsynced,
given the original's mode, owner and extended attributes where the OS allows, then
renamed over the original.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass

from ..bounded_read import DEFAULT_LIMIT, NotRegularFile, read_regular_file_with_stat

# What the check itself reads at most (a notebook with its outputs can be large).
MAX_FIX_BYTES = DEFAULT_LIMIT


class WriteRefused(Exception):
    """The file is not rewritten; the message says why (for the `--fix` summary)."""


@dataclass(frozen=True)
class ReadForFix:
    """A file's bytes as read for fixing, and the identity they were read from."""

    path: str
    data: bytes
    device: int
    inode: int
    mode: int
    uid: int
    gid: int


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether `path` (resolved) is one of `roots` or inside one of them (resolved)."""
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return True
    return False


def editor_refusal(path: str, roots: Sequence[str], open_document: bool = False) -> str | None:
    """Why an editor's quick fix must not edit `path` (None: it may). The edit's location
    came from an analysis of untrusted code, or from data the client echoes back, and one
    click applies it, so:

    - with workspace folders, the file (resolved: a link that leaves them is followed
      out) is inside one; with none, only the document the request is about (the user
      opened it), never another file;
    - it is a regular file (the open document may also not exist yet: an unsaved buffer).
    """
    if roots:
        if not inside(path, roots):
            return "outside the workspace folders"
    elif not open_document:
        return "another file, and no workspace folder to hold it"
    try:
        info = os.stat(path)  # never opened: a FIFO or a device is only looked at
    except FileNotFoundError:
        return None if open_document else "not a file on disk"
    except OSError as error:
        return f"cannot be checked: {error.strerror or error}"
    return None if stat.S_ISREG(info.st_mode) else "not a regular file"


def read_for_fix(path: str, allowed_roots: Sequence[str] | None) -> ReadForFix:
    """The file's bytes, when it may be rewritten at all (see the module's rules); raises
    WriteRefused otherwise."""
    if allowed_roots is not None and not inside(path, allowed_roots):
        raise WriteRefused("outside the paths given to atenlint; never edited")
    if os.path.islink(path):
        raise WriteRefused("a symbolic link; atenlint does not edit through links (fix the file it points to)")
    try:
        data, info = read_regular_file_with_stat(path, MAX_FIX_BYTES, follow_links=False)
    except NotRegularFile as problem:
        raise WriteRefused(f"not edited: {problem.message}") from None
    except OSError as error:
        raise WriteRefused(f"cannot read the file: {error.strerror or error}") from None
    if info.st_nlink > 1:
        raise WriteRefused(
            f"has {info.st_nlink} hard links; rewriting it would separate this name from the others, "
            "so it is left for you to edit"
        )
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise WriteRefused("read-only; atenlint does not change read-only files")
    return ReadForFix(path, data, info.st_dev, info.st_ino, info.st_mode, info.st_uid, info.st_gid)


def replace_if_unchanged(read: ReadForFix, new_data: bytes, suffix: str = ".py") -> None:
    """Atomically replace the file with `new_data`, only if it still is the file `read`
    came from with the same bytes; raises WriteRefused (nothing written) otherwise."""
    directory = os.path.dirname(os.path.abspath(read.path))
    handle, temporary = tempfile.mkstemp(prefix=".atenlint-", suffix=suffix, dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(new_data)
            stream.flush()
            _copy_metadata(read, stream.fileno())
            os.fsync(stream.fileno())
        _check_unchanged(read)
        os.replace(temporary, read.path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(directory)


def _check_unchanged(read: ReadForFix) -> None:
    """The compare of compare-and-swap: same file (device, inode), not a link now, same bytes."""
    try:
        data, info = read_regular_file_with_stat(read.path, MAX_FIX_BYTES, follow_links=False)
    except OSError:  # NotRegularFile included: replaced by a link, a FIFO, removed
        raise WriteRefused("the file changed since it was analysed") from None
    if (info.st_dev, info.st_ino) != (read.device, read.inode) or data != read.data or info.st_nlink > 1:
        raise WriteRefused("the file changed since it was analysed")


def _copy_metadata(read: ReadForFix, descriptor: int) -> None:
    """Owner, mode and extended attributes where permitted (a user cannot give a file
    to another owner; such a file keeps the writer's, which is what an editor's save does)."""
    if hasattr(os, "fchown") and (read.uid, read.gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(descriptor, read.uid, read.gid)
        except OSError:
            pass
    # After fchown, which may clear set-id bits. (Windows has no fchmod: its only mode bit
    # is read-only, and a read-only file is never written.)
    if hasattr(os, "fchmod"):
        os.fchmod(descriptor, stat.S_IMODE(read.mode))
    if hasattr(os, "listxattr"):
        try:
            names = os.listxattr(read.path, follow_symlinks=False)
        except OSError:
            return
        for name in names:
            try:
                os.setxattr(descriptor, name, os.getxattr(read.path, name, follow_symlinks=False))
            except OSError:
                continue  # security.* or trusted.* need privileges: the rest are still copied


def _fsync_directory(directory: str) -> None:
    """Make the rename durable (a crash right after must not bring the old file back)."""
    try:
        descriptor = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
