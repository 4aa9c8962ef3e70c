"""Linux kernel facilities behind the sandbox, through ctypes: Landlock, namespaces, seccomp.

Owns: the system-call numbers, flags and structure layouts; the seccomp program
(``unix_socket_filter``); ``enter``, the few system calls a Bash child makes between fork
and exec, inside the fresh namespaces it was created with, to bring up loopback, mask paths
and restrict itself (``ChildPlan`` says what); and ``restrict_reads``, the Landlock domain a
reading helper (ripgrep, for Grep) runs in: reading beneath its working directory only.
Probing what this kernel offers (``probe``) is in ``sandbox.probe``, re-exported here:
start-up runs it and need not import this module.
Must not: decide *what* is allowed (``plan`` does for Bash, ``tools.files.rg_sandbox`` for
ripgrep) or start processes. ``enter`` and ``restrict_reads`` run in a freshly forked
child: system calls only (no imports, no logging, no locks, no threads).

Why these and not bubblewrap: all of it is in the kernel (Landlock since 5.13, user
namespaces, seccomp), so no system package is needed and a sandboxed call costs a few system
calls instead of an extra exec.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import stat
import struct
from collections.abc import Sequence
from typing import NamedTuple

from .probe import KernelSupport, probe

__all__ = [
    "FS_READ",
    "FS_WRITE_DIR",
    "FS_WRITE_FILE",
    "Bind",
    "ChildPlan",
    "KernelSupport",
    "build_ruleset",
    "enter",
    "mount_flags",
    "probe",
    "restrict_reads",
    "unix_socket_filter",
]

_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
_mount = _libc.mount
_setns = _libc.setns
_mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
]
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_unshare = _libc.unshare

# Landlock's three system calls have one number on every architecture (the unified table).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

# Filesystem rights (include/uapi/linux/landlock.h), by the ABI that introduced them.
_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_REMOVE_DIR = 1 << 4
_REMOVE_FILE = 1 << 5
_MAKE_CHAR = 1 << 6
_MAKE_DIR = 1 << 7
_MAKE_REG = 1 << 8
_MAKE_SOCK = 1 << 9
_MAKE_FIFO = 1 << 10
_MAKE_BLOCK = 1 << 11
_MAKE_SYM = 1 << 12
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
_SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_READ = _EXECUTE | _READ_FILE | _READ_DIR
# Rights that make sense on a file (a rule on a file with directory rights is EINVAL).
FS_WRITE_FILE = _EXECUTE | _READ_FILE | _WRITE_FILE | _TRUNCATE | _IOCTL_DEV
FS_WRITE_DIR = (
    FS_READ
    | _WRITE_FILE
    | _REMOVE_DIR
    | _REMOVE_FILE
    | _MAKE_CHAR
    | _MAKE_DIR
    | _MAKE_REG
    | _MAKE_SOCK
    | _MAKE_FIFO
    | _MAKE_BLOCK
    | _MAKE_SYM
    | _REFER
    | _TRUNCATE
    | _IOCTL_DEV
)

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000

_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_NOATIME = 1024
_MS_NODIRATIME = 2048
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MS_RELATIME = 1 << 21
# statvfs f_flag bits -> mount flags. A bind mount inside a user namespace may be remounted
# read-only only if it keeps the locked flags of the mount it came from.
_ST_TO_MS = (
    (os.ST_NOSUID, _MS_NOSUID),
    (os.ST_NODEV, _MS_NODEV),
    (os.ST_NOEXEC, _MS_NOEXEC),
    (os.ST_NOATIME, _MS_NOATIME),
    (os.ST_NODIRATIME, _MS_NODIRATIME),
    (os.ST_RELATIME, _MS_RELATIME),
)

_PR_SET_NO_NEW_PRIVS = 38
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1  # __attribute__((packed)) in the kernel header
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _handled(abi: int) -> int:
    handled = (1 << 13) - 1  # ABI 1
    if abi >= 2:
        handled |= _REFER
    if abi >= 3:
        handled |= _TRUNCATE
    if abi >= 5:
        handled |= _IOCTL_DEV
    return handled


def build_ruleset(abi: int, read_roots: Sequence[str], rules: Sequence[tuple[str, int]]) -> int:
    """A Landlock ruleset fd (close-on-exec) allowing ``FS_READ`` under each read root and
    the given rights under each path; paths that do not exist are skipped. Built once per
    session; each child only calls ``landlock_restrict_self`` with it."""
    handled = _handled(abi)
    attr = _RulesetAttr(
        handled, 0, (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16
    fd = _syscall(
        _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"landlock_create_ruleset: {os.strerror(err)}")
    try:
        for path in read_roots:
            _add_rule(fd, path, FS_READ & handled)
        for path, access in rules:
            _add_rule(fd, path, access & handled)
    except BaseException:
        os.close(fd)
        raise
    return int(fd)


def restrict_reads(abi: int, files: Sequence[str], exec_roots: Sequence[str]) -> None:
    """In a child just before exec (ripgrep's: ``tools/files/rg_sandbox``): from now on
    this process and what it execs may read only beneath its working directory (which the
    daemon opened, checked and had it enter through that descriptor), the regular
    ``files`` (each opened without following a symlink; a missing one or one that is not a
    regular file is left out), and execute and read beneath ``exec_roots`` (the program,
    its loader and libraries). Nothing may be written or made anywhere. Raises OSError on
    any failure: the program then does not run."""
    rules = [(".", _READ_FILE | _READ_DIR)] + [(p, _EXECUTE | _READ_FILE) for p in exec_roots]
    ruleset = build_ruleset(abi, [], rules)
    try:
        for path in files:
            _add_rule(ruleset, path, _READ_FILE, follow=False)
        if _prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            _fail("prctl(no_new_privs)")
        if _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _add_rule(ruleset: int, path: str, access: int, follow: bool = True) -> None:
    """``access`` beneath ``path``; ``follow=False``: only a regular file, not through a
    symlink of its own (a file swapped for a link is left out, not what it points at)."""
    flags = os.O_PATH | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        target = os.open(path, flags)
    except FileNotFoundError:
        return
    except OSError:
        if follow:
            raise
        return  # no regular file there (ELOOP: a symlink; ENOTDIR: a file on the way)
    try:
        if not follow and not stat.S_ISREG(os.fstat(target).st_mode):
            return
        if not os.path.isdir(path):
            access &= FS_WRITE_FILE
        rule = _PathBeneath(access, target)
        if (
            _syscall(
                _SYS_LANDLOCK_ADD_RULE,
                ctypes.c_int(ruleset),
                ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                ctypes.byref(rule),
                ctypes.c_uint32(0),
            )
            != 0
        ):
            err = ctypes.get_errno()
            raise OSError(err, f"landlock_add_rule({path}): {os.strerror(err)}")
    finally:
        os.close(target)


# --------------------------------------------------------------------------- seccomp

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_AUDIT_ARCH_I386 = 0x40000003
_NR_SOCKET = {"x86_64": 41, "aarch64": 198}
_NR_IO_URING_SETUP = 425  # the same number on every architecture (added after the unification)
_X32_BIT = 0x40000000
_AF_UNIX = 1
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_RET_K = 0x06


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def unix_socket_filter() -> bytes | None:
    """A seccomp program that makes ``socket(AF_UNIX, ...)`` fail with EPERM, as Claude Code
    does on Linux unless ``allowAllUnixSockets``: a network namespace does not separate
    path-named sockets (``/var/run/docker.sock``), and Landlock does not check ``connect``.
    32-bit ``socket``/``socketcall`` on x86_64 are refused too. ``io_uring_setup`` is refused
    as well: io_uring's IORING_OP_SOCKET creates a socket without the ``socket`` system call,
    so seccomp would never see it (Docker's default profile refuses io_uring for the same
    kind of reason). None on other machines."""
    machine = os.uname().machine
    if machine not in _AUDIT_ARCH:
        return None
    nr = _NR_SOCKET[machine]
    ins: list[tuple[int, int, int, int]] = []

    def op(code: int, jt: int, jf: int, k: int) -> None:
        ins.append((code, jt, jf, k))

    deny = _RET_ERRNO | errno.EPERM
    op(_BPF_LD_W_ABS, 0, 0, 4)  # arch
    op(_BPF_JEQ_K, 5, 0, _AUDIT_ARCH[machine])  # native: skip to nr check
    op(_BPF_JEQ_K, 0, 3, _AUDIT_ARCH_I386)  # neither: allow
    op(_BPF_LD_W_ABS, 0, 0, 0)
    op(_BPF_JEQ_K, 9, 0, 102)  # socketcall: deny (cannot look inside its argument array)
    op(_BPF_JEQ_K, 5, 0, 359)  # i386 socket: check its family
    op(_BPF_RET_K, 0, 0, _RET_ALLOW)
    op(_BPF_LD_W_ABS, 0, 0, 0)  # native nr
    op(_BPF_JEQ_K, 5, 0, _NR_IO_URING_SETUP)  # io_uring: deny
    op(_BPF_JEQ_K, 1, 0, nr)
    op(_BPF_JEQ_K, 0, 2, nr | _X32_BIT) if machine == "x86_64" else op(_BPF_JEQ_K, 0, 2, nr)
    op(_BPF_LD_W_ABS, 0, 0, 16)  # args[0], low half
    op(_BPF_JEQ_K, 1, 0, _AF_UNIX)
    op(_BPF_RET_K, 0, 0, _RET_ALLOW)
    op(_BPF_RET_K, 0, 0, deny)
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


# --------------------------------------------------------------------------- the child

# A sandboxed call's namespaces: a user namespace (capabilities end at its border), a
# network namespace holding only a loopback interface (both the session's, joined, where
# the process may join them), and a mount namespace of its own for the masks.


class Bind(NamedTuple):
    """Mount ``source`` over ``target`` read-only: a mask (``source`` an empty file, and
    ``alt_source`` an empty directory for a target that is one) or, when ``source`` is
    ``target``, a read-only view of the path itself (a control file). With ``pin`` the
    bind stays writable: it only makes ``target`` (a directory above a mask or a control
    file) a mount point, which cannot be renamed or removed (``EBUSY``), so a command cannot
    move the protected path away with its parent and put a writable copy in its place."""

    source: bytes
    target: bytes
    alt_source: bytes | None
    flags: int  # the locked flags to keep on the read-only remount (``mount_flags``)
    pin: bool = False
    # (st_dev, st_ino) of ``source`` and ``alt_source`` as the daemon made them: a mask is
    # mounted only from those very inodes (see ``_bind``).
    source_ids: tuple[tuple[int, int], ...] = ()


class ChildPlan(NamedTuple):
    """Everything ``enter`` needs, as plain picklable data: it may run in a process the
    daemon did not fork (the spawner's), so no fds or objects of the daemon's."""

    isolated: bool  # in namespaces (the session's, or its own); else Landlock only
    join: tuple[str, str] | None  # the session's user and network namespace files
    abi: int
    writable: tuple[str, ...]  # directory trees where everything is allowed
    devices: tuple[str, ...]  # files that may be written (/dev/null ...)
    binds: tuple[Bind, ...]
    seccomp: bytes | None  # BPF instructions (``unix_socket_filter``)
    proxy: tuple[str, int, bytes] | None  # (daemon's socket path, port inside, call token)


def mount_flags(path: str) -> int:
    """The flags a read-only remount of a bind of ``path`` must keep (see ``_ST_TO_MS``),
    read from its nearest existing ancestor when it does not exist yet."""
    while True:
        try:
            f = os.statvfs(path).f_flag
            break
        except OSError:
            parent = os.path.dirname(path)
            if parent == path:
                return 0
            path = parent
    return sum(ms for st, ms in _ST_TO_MS if f & st)


def _own_namespaces(mount: bool) -> None:
    """A user, network (and mount) namespace of the call's own, the user mapped to itself."""
    flags = _CLONE_NEWNET | (_CLONE_NEWNS if mount else 0)
    uid, gid = os.getuid(), os.getgid()
    # Always with a user namespace, even when privileged: a root daemon's call must not
    # keep capabilities over the host.
    if _unshare(_CLONE_NEWUSER | flags) != 0:
        _fail("unshare")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _join(paths: tuple[str, str]) -> bool:
    """Join the session's user and network namespaces; False when this process may not
    (it is in a user namespace of its own already), and nothing has changed."""
    fds = []
    try:
        for path in paths:
            fds.append(os.open(path, os.O_RDONLY | os.O_CLOEXEC))
    except OSError:
        for fd in fds:
            os.close(fd)
        return False
    try:
        if _setns(fds[0], _CLONE_NEWUSER) != 0:
            return False
        if _setns(fds[1], _CLONE_NEWNET) != 0:
            _fail("setns(net)")  # in the session's user namespace: this cannot be refused
        return True
    finally:
        for fd in fds:
            os.close(fd)


def enter(plan: ChildPlan) -> None:
    """In the child just before exec: join the session's user and network namespaces (or,
    where that is not allowed, make a network namespace of its own, bring up its loopback
    and hand the proxy a listener on it), take a mount namespace and mount the masks, then
    restrict itself with no_new_privs, seccomp and Landlock (which also forbids any later
    mount or umount, so the masks stay). Raises OSError on any failure: the call then fails
    rather than run unprotected."""
    if plan.isolated:
        if plan.join is not None and _join(plan.join):
            if plan.binds and _unshare(_CLONE_NEWNS) != 0:
                _fail("unshare(mount)")
        else:
            _own_namespaces(mount=bool(plan.binds))
            _loopback_up()
            if plan.proxy is not None:
                _hand_over_listener(*plan.proxy)
    if plan.binds:
        if _mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            _fail("mount(private)")
        for bind in plan.binds:
            _bind(bind)
    _drop_capabilities()
    if _prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        _fail("prctl(no_new_privs)")
    if plan.seccomp is not None:
        buf = ctypes.create_string_buffer(plan.seccomp, len(plan.seccomp))
        prog = _SockFprog(len(plan.seccomp) // 8, ctypes.addressof(buf))
        if _prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
            _fail("seccomp")
    rules = [(p, FS_WRITE_DIR) for p in plan.writable] + [(p, FS_WRITE_FILE) for p in plan.devices]
    ruleset = build_ruleset(plan.abi, ["/"], rules)
    try:
        if _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _drop_capabilities() -> None:
    """Empty the bounding and ambient sets: a root daemon's command (or root inside the user
    namespace) gets no capability at exec. Without privilege there is nothing to drop and
    the calls fail harmlessly."""
    for cap in range(64):
        if _prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # past the last capability this kernel knows
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _loopback_up() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        # SIOCSIFFLAGS: IFF_UP | IFF_LOOPBACK | IFF_RUNNING
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", 0x1 | 0x8 | 0x40))
    finally:
        s.close()


def _hand_over_listener(path: str, port: int, token: bytes) -> None:
    """Listen on this namespace's 127.0.0.1:port and give the socket to the daemon's proxy
    (it accepts there and connects onward from the host's network)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        control.connect(path)
        socket.send_fds(control, [token], [listener.fileno()])
        control.recv(1)  # the proxy has it: connections now wait in its backlog, not fail
    finally:
        control.close()
        listener.close()


def _bind(bind: Bind) -> None:
    """Mount a mask or a read-only view. A target that does not exist is skipped (so is a
    control path under a ``.git`` that is a file: a worktree); any other failure raises,
    so the call fails rather than run with a path unmasked."""
    sources = [bind.source] if bind.alt_source is None else [bind.source, bind.alt_source]
    for i, source in enumerate(sources):
        fd = -1
        if bind.source_ids:
            # The mask files may lie under a writable tree (a --spill-dir in the workspace):
            # a command could have swapped one for a symlink to the very file it masks.
            # Open without following, check the inode, and mount from that fd.
            fd = os.open(source, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != bind.source_ids[i]:
                os.close(fd)
                raise OSError(errno.EPERM, "sandbox: a mask file was replaced")
            source = b"/proc/self/fd/%d" % fd
        try:
            mounted = _mount(source, bind.target, None, _MS_BIND, None) == 0
            err = ctypes.get_errno()
        finally:
            if fd >= 0:
                os.close(fd)
        if mounted:
            if bind.pin:
                return
            flags = _MS_BIND | _MS_REMOUNT | _MS_RDONLY | bind.flags
            if _mount(None, bind.target, None, flags, None) != 0:
                _fail("remount read-only")
            return
        if err == errno.ENOENT or (err == errno.ENOTDIR and source == bind.target):
            return
        if err in (errno.ENOTDIR, errno.EISDIR) and i + 1 < len(sources):
            continue  # a directory where the file mask was tried: the directory mask
        raise OSError(err, f"sandbox: cannot mask {bind.target.decode(errors='replace')}")


def _fail(what: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"sandbox: {what}: {os.strerror(err)}")
