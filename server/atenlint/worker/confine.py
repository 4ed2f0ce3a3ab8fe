"""Containment the kernel enforces, applied by a worker process to itself before it runs
analysed code (Linux; on macOS the Seatbelt profile of `seatbelt.py`; see docs/security.md).

The audit hook (`sandbox.py`) is a guard against the accidental; this module is the
boundary. In the process that is about to import user code (a child forked from the warm
worker, after torch and atenlint are imported) `confine()` sets, in this order:

- resource limits: file size, open descriptors, no core dumps, and a data-segment cap;
- `PR_SET_PDEATHSIG(SIGKILL)`: the process dies with the worker that forked it;
- `PR_SET_NO_NEW_PRIVS`, which both of the next two need;
- Landlock: file-system changes only beneath the run folder (and writing `/dev/null`),
  reading everywhere, no program execution, no TCP bind or connect, and signals and
  abstract Unix sockets scoped to the process's own domain (as far as the kernel's ABI
  offers them);
- a seccomp BPF filter (checked against the architecture it was built for) that refuses
  `execve`/`execveat`, `fork`/`vfork`, `clone` without `CLONE_THREAD` (`clone3` answers
  ENOSYS, so the C library falls back to `clone`, which the filter can read), `ptrace`,
  `process_vm_*`, pidfds, signals to any other process, new sockets (a socket pair of
  Unix sockets stays allowed), changes of mode, owner, times and extended attributes
  (Landlock does not cover them), io_uring (whose operations seccomp cannot see),
  namespaces and mounts, and session or process-group changes.

Written with ctypes against the raw system calls (x86_64 and aarch64), so it needs no
package; every refused call fails with EPERM, which Python raises as PermissionError
inside the analysed code.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import struct
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import seatbelt

if TYPE_CHECKING:
    from .protocol import Containment

# -- system call numbers -------------------------------------------------------------------

# The calls the filter refuses outright, per architecture. New calls (numbered alike on
# every architecture since Linux 5.x) are listed by number where the C headers may lack them.
_DENIED_X86_64 = {
    "execve": 59,
    "execveat": 322,
    "fork": 57,
    "vfork": 58,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "tkill": 200,
    "socket": 41,
    "chmod": 90,
    "fchmod": 91,
    "fchmodat": 268,
    "chown": 92,
    "fchown": 93,
    "lchown": 94,
    "fchownat": 260,
    "utime": 132,
    "utimes": 235,
    "futimesat": 261,
    "utimensat": 280,
    "setxattr": 188,
    "lsetxattr": 189,
    "fsetxattr": 190,
    "removexattr": 197,
    "lremovexattr": 198,
    "fremovexattr": 199,
    "setsid": 112,
    "setpgid": 109,
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "kcmp": 312,
}
_DENIED_AARCH64 = {
    "execve": 221,
    "execveat": 281,
    "ptrace": 117,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "tkill": 130,
    "socket": 198,
    "fchmod": 52,
    "fchmodat": 53,
    "fchownat": 54,
    "fchown": 55,
    "utimensat": 88,
    "setxattr": 5,
    "lsetxattr": 6,
    "fsetxattr": 7,
    "removexattr": 14,
    "lremovexattr": 15,
    "fremovexattr": 16,
    "setsid": 157,
    "setpgid": 154,
    "unshare": 97,
    "setns": 268,
    "mount": 40,
    "umount2": 39,
    "pivot_root": 41,
    "chroot": 51,
    "bpf": 280,
    "perf_event_open": 241,
    "userfaultfd": 282,
    "keyctl": 219,
    "add_key": 217,
    "request_key": 218,
    "kcmp": 272,
}
_DENIED_COMMON = {
    "pidfd_send_signal": 424,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "fchmodat2": 452,
    "setxattrat": 463,
    "removexattrat": 466,
    "open_tree_attr": 467,
    "file_setattr": 469,
}


@dataclass(frozen=True)
class _Arch:
    audit: int  # AUDIT_ARCH_* the filter checks first
    denied: dict[str, int]
    clone: int
    clone3: int
    seccomp: int
    own_process: tuple[int, ...]  # kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo: first argument a pid
    socketpair: int
    x32: bool = False  # x86_64: refuse the x32 ABI's numbers (bit 30 set)


_ARCHES = {
    "x86_64": _Arch(0xC000003E, {**_DENIED_X86_64, **_DENIED_COMMON}, 56, 435, 317, (62, 234, 129, 297), 53, True),
    "aarch64": _Arch(0xC00000B7, {**_DENIED_AARCH64, **_DENIED_COMMON}, 220, 435, 277, (129, 131, 138, 240), 199),
}
_ARCHES["amd64"] = _ARCHES["x86_64"]
_ARCHES["arm64"] = _ARCHES["aarch64"]

# -- constants ---------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_SECCOMP_SET_MODE_FILTER = 1
_SECCOMP_FILTER_FLAG_TSYNC = 1
_SECCOMP_RET_KILL_PROCESS = 0x80000000
_SECCOMP_RET_ERRNO = 0x00050000
_SECCOMP_RET_ALLOW = 0x7FFF0000
_CLONE_THREAD = 0x00010000
_AF_UNIX = 1

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_JSET_K = 0x45
_BPF_RET_K = 0x06

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_REMOVE_DIR = 1 << 4
_FS_REMOVE_FILE = 1 << 5
_FS_MAKE_CHAR = 1 << 6
_FS_MAKE_DIR = 1 << 7
_FS_MAKE_REG = 1 << 8
_FS_MAKE_SOCK = 1 << 9
_FS_MAKE_FIFO = 1 << 10
_FS_MAKE_BLOCK = 1 << 11
_FS_MAKE_SYM = 1 << 12
_FS_REFER = 1 << 13  # ABI 2
_FS_TRUNCATE = 1 << 14  # ABI 3
_NET_BIND_TCP = 1 << 0  # ABI 4
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1

# What a file written by analysed code may grow to (an exception: SIGXFSZ is ignored by
# Python, so an over-long write fails with EFBIG instead of ending the process).
MAX_FILE_BYTES = 1 << 30
MAX_OPEN_FILES = 4096


class ConfinementError(OSError):
    """A step of the containment failed where the kernel had offered it."""


@dataclass
class Support:
    """What this kernel offers, found once by the warm worker (`probe`)."""

    platform: str = sys.platform
    arch: str = ""
    landlock_abi: int = 0
    seccomp: bool = False
    seatbelt: bool = False  # macOS: the profile of seatbelt.py
    reasons: list[str] = field(default_factory=list)  # why a layer is missing, in words

    @property
    def kernel(self) -> bool:
        return (self.landlock_abi > 0 and self.seccomp) or self.seatbelt

    def withdraw(self, reason: str) -> None:
        """No layer is applied after all (`reason`: why, in words)."""
        self.landlock_abi, self.seccomp, self.seatbelt = 0, False, False
        self.reasons.append(reason)

    def as_json(self) -> Containment:
        return {
            "platform": self.platform,
            "arch": self.arch,
            "landlock_abi": self.landlock_abi,
            "seccomp": self.seccomp,
            "seatbelt": self.seatbelt,
            "kernel": self.kernel,
            "missing": list(self.reasons),
        }


_libc: Any = None


def _syscall() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _ulongs(*values: int) -> list[Any]:
    """prctl's variadic arguments are unsigned longs: passed as such, never as C ints
    whose upper halves are undefined (PR_SET_NO_NEW_PRIVS insists on zeros)."""
    return [ctypes.c_ulong(value) for value in values]


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise ConfinementError(code, f"{what}: {os.strerror(code)}")
    return result


def _arch() -> _Arch | None:
    return _ARCHES.get(platform.machine().lower())


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux") or _arch() is None:
        return 0
    libc = _syscall()
    version = libc.syscall(
        ctypes.c_long(_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
    )
    return int(version) if version > 0 else 0


def probe() -> Support:
    """What containment this process could apply (cheap: no restriction is applied)."""
    support = Support(arch=platform.machine())
    if sys.platform == "darwin":
        reason = seatbelt.unavailable_reason()
        support.seatbelt = not reason
        if reason:
            support.reasons.append(reason)
        return support
    if not sys.platform.startswith("linux"):
        support.reasons.append(f"kernel containment is implemented for Linux and macOS only (this is {sys.platform})")
        return support
    if _arch() is None:
        support.reasons.append(f"no seccomp filter or Landlock numbers for the {platform.machine()} architecture")
        return support
    support.landlock_abi = landlock_abi()
    if not support.landlock_abi:
        support.reasons.append("this kernel does not offer Landlock (disabled, or older than Linux 5.13)")
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            support.seccomp = any(line.startswith("Seccomp:") for line in status)
    except OSError:
        support.seccomp = False
    if not support.seccomp:
        support.reasons.append("this kernel does not offer seccomp filters")
    return support


# -- the seccomp filter ----------------------------------------------------------------------


def _jump(code: int, k: int, jt: int, jf: int) -> tuple[int, int, int, int]:
    return (code, jt, jf, k & 0xFFFFFFFF)


def _load(offset: int) -> tuple[int, int, int, int]:
    return (_BPF_LD_W_ABS, 0, 0, offset)


def _ret(value: int) -> tuple[int, int, int, int]:
    return (_BPF_RET_K, 0, 0, value)


def _arg_low(index: int) -> int:
    # struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
    # The low half of an argument (both architectures are little-endian): every checked
    # argument is a C int (a pid, a family, clone's flags word), which the kernel truncates.
    return 16 + 8 * index


def build_filter(arch: _Arch, own_pid: int) -> list[tuple[int, int, int, int]]:
    """The BPF program: (code, jt, jf, k) instructions. `own_pid`: the only process the
    filter lets signals go to."""
    deny = _ret(_SECCOMP_RET_ERRNO | errno.EPERM)
    allow = _ret(_SECCOMP_RET_ALLOW)
    program = [
        _load(4),  # arch
        _jump(_BPF_JEQ_K, arch.audit, 1, 0),
        _ret(_SECCOMP_RET_KILL_PROCESS),  # another ABI's numbers mean other calls: never
        _load(0),  # nr
    ]
    if arch.x32:
        program += [_jump(_BPF_JGE_K, 0x40000000, 0, 1), deny]
    for number in sorted(set(arch.denied.values())):
        program += [_jump(_BPF_JEQ_K, number, 0, 1), deny]
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes the C
    # library fall back to clone, whose flags word it can.
    program += [_jump(_BPF_JEQ_K, arch.clone3, 0, 1), _ret(_SECCOMP_RET_ERRNO | errno.ENOSYS)]
    program += [_jump(_BPF_JEQ_K, arch.clone, 0, 4), _load(_arg_low(0)), _jump(_BPF_JSET_K, _CLONE_THREAD, 1, 0)]
    program += [deny, allow]
    for number in arch.own_process:
        program += [_jump(_BPF_JEQ_K, number, 0, 4), _load(_arg_low(0)), _jump(_BPF_JEQ_K, own_pid, 1, 0)]
        program += [deny, allow]
    program += [_jump(_BPF_JEQ_K, arch.socketpair, 0, 4), _load(_arg_low(0)), _jump(_BPF_JEQ_K, _AF_UNIX, 1, 0)]
    program += [deny, allow]
    program.append(allow)
    return program


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_filter(arch: _Arch, own_pid: int) -> None:
    program = build_filter(arch, own_pid)
    raw = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(program), ctypes.cast(buffer, ctypes.c_void_p))
    libc = _syscall()
    result = libc.syscall(
        ctypes.c_long(arch.seccomp),
        ctypes.c_uint(_SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(_SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(fprog),
    )
    if result != 0:  # with TSYNC, a positive answer names a thread that could not follow
        code = ctypes.get_errno() if result < 0 else errno.EBUSY
        raise ConfinementError(code, f"installing the seccomp filter: {os.strerror(code)}")


# -- Landlock --------------------------------------------------------------------------------


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _fs_rights(abi: int) -> int:
    rights = (
        _FS_EXECUTE
        | _FS_WRITE_FILE
        | _FS_REMOVE_DIR
        | _FS_REMOVE_FILE
        | _FS_MAKE_CHAR
        | _FS_MAKE_DIR
        | _FS_MAKE_REG
        | _FS_MAKE_SOCK
        | _FS_MAKE_FIFO
        | _FS_MAKE_BLOCK
        | _FS_MAKE_SYM
    )
    if abi >= 2:
        rights |= _FS_REFER
    if abi >= 3:
        rights |= _FS_TRUNCATE
    return rights


def _landlock(abi: int, writable: list[str]) -> None:
    """Reading stays free (rights not handled are allowed); every change to the file
    system is allowed beneath `writable` folders only (and writing /dev/null)."""
    libc = _syscall()
    handled = _fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP  # handled, never granted
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = _check(
        libc.syscall(
            ctypes.c_long(_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
        ),
        "creating the Landlock ruleset",
    )
    try:
        rules = [(folder, handled & ~_FS_EXECUTE) for folder in writable]
        file_rights = _FS_WRITE_FILE | (_FS_TRUNCATE if abi >= 3 else 0)
        rules.append((os.devnull, file_rights))
        for path, allowed in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist grants nothing
            try:
                rule = _PathBeneathAttr(allowed, fd)
                _check(
                    libc.syscall(
                        ctypes.c_long(_LANDLOCK_ADD_RULE),
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"allowing writes beneath {path}",
                )
            finally:
                os.close(fd)
        _check(
            libc.syscall(ctypes.c_long(_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
            "enforcing the Landlock ruleset",
        )
    finally:
        os.close(ruleset)


# -- the whole -------------------------------------------------------------------------------


def _limits(data_cap_bytes: int | None) -> None:
    def lower(which: int, value: int) -> None:
        for current in resource.getrlimit(which):  # never raised above what is set already
            if current != resource.RLIM_INFINITY:
                value = min(value, current)
        resource.setrlimit(which, (value, value))

    lower(resource.RLIMIT_FSIZE, MAX_FILE_BYTES)
    lower(resource.RLIMIT_CORE, 0)
    lower(resource.RLIMIT_NOFILE, MAX_OPEN_FILES)
    if data_cap_bytes:
        # A backstop for an allocation faster than the parent's memory check: over it,
        # the allocation fails (MemoryError) instead of taking the machine's memory.
        lower(resource.RLIMIT_DATA, data_cap_bytes)


def _data_bytes() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _open_descriptors() -> list[int]:
    """The descriptors open now, as the kernel lists them (empty where it cannot)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return sorted(int(name) for name in os.listdir(folder) if name.isdigit())
        except OSError:
            continue
    return []


def close_inherited(keep: Iterable[int] = ()) -> None:
    """Close every descriptor above stderr but `keep`: whatever a parent, a library or the
    worker itself left open (a file, a socket, the request pipe) is out of reach of the
    code that runs next, which could otherwise read, write or pass it on. The kept ones are
    marked close-on-exec, so they end with this process even where an exec gets through."""
    kept = sorted({fd for fd in keep if fd > 2})
    listed = _open_descriptors()
    # Above the highest descriptor open now nothing needs closing; where the kernel does
    # not list them, up to the system's limit (each close of a gap is one cheap system call).
    ceiling = max([*listed, *kept, 2]) + 1 if listed else min(os.sysconf("SC_OPEN_MAX"), 1 << 16)
    low = 3
    for fd in [*kept, ceiling]:
        if fd > low:
            os.closerange(low, fd)  # close_range(2) where the kernel has it
        low = fd + 1
    for fd in kept:
        os.set_inheritable(fd, False)


def confine(run_dir: str, support: Support, parent_pid: int, memory_limit_mb: int = 0) -> None:
    """Restrict this process for good (it must be single-threaded: a forked child).
    Raises ConfinementError when a layer `support` promised cannot be applied; the caller
    must then not run analysed code."""
    data_cap = _data_bytes() + 2 * memory_limit_mb * 1024 * 1024 if memory_limit_mb > 0 else None
    try:
        _limits(data_cap)
    except (OSError, ValueError) as error:
        raise ConfinementError(errno.EPERM, f"setting resource limits: {error}") from None
    if sys.platform == "darwin" and support.seatbelt:
        try:
            seatbelt.apply([os.path.realpath(run_dir)])
        except (OSError, ValueError) as error:
            raise ConfinementError(errno.EPERM, str(error)) from None
    if not sys.platform.startswith("linux"):
        return
    libc = _syscall()
    _check(libc.prctl(_PR_SET_PDEATHSIG, *_ulongs(signal.SIGKILL, 0, 0, 0)), "PR_SET_PDEATHSIG")
    if os.getppid() != parent_pid:  # the worker died before the line above: so do we
        os._exit(1)
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, *_ulongs(1, 0, 0, 0)), "PR_SET_NO_NEW_PRIVS")
    arch = _arch()
    if support.landlock_abi:
        _landlock(support.landlock_abi, [os.path.realpath(run_dir)])
    if support.seccomp and arch is not None:
        _install_filter(arch, os.getpid())
