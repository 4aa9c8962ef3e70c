"""What this kernel offers the sandbox, asked before ``ready`` (which reports it).

Owns: ``probe``: the Landlock ABI and whether this process may create a user namespace.
Must not: import more than it needs. It runs on the way to ``ready`` in every session, so it
is kept apart from ``kernel`` (sockets, structures and the child's set-up: ~6 ms to import,
none of it needed to answer these two questions; bench/NOTES.md, start-up).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["KernelSupport", "probe"]

# The numbers ``kernel`` uses too (its module docstring says where they come from).
_SYS_LANDLOCK_CREATE_RULESET = 444
_LANDLOCK_CREATE_RULESET_VERSION = 1
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


class KernelSupport(NamedTuple):  # not a dataclass: ~0.5 ms to define, before `ready`
    """What this kernel lets an unprivileged (or this) process use; a reason when not."""

    landlock_abi: int  # 0: none
    user_namespaces: bool
    problem: str = ""  # why something is missing, for `ready` and start-up errors


def probe(*, disabled: Sequence[str] = ()) -> KernelSupport:
    """What is available. ``disabled`` (from ``STDIO_EXECUTOR_SANDBOX_DISABLE``) turns a
    mechanism off as if the kernel lacked it, so "unsupported" can be tested for real."""
    problems = []
    abi = 0 if "landlock" in disabled else _landlock_abi()
    if abi == 0:
        problems.append(
            "Landlock is disabled" if "landlock" in disabled else "this kernel has no Landlock"
        )
    userns = False
    if "userns" in disabled:
        problems.append("user namespaces are disabled")
    elif sys.platform.startswith("linux"):
        userns = _can_unshare_user()
        if not userns:
            problems.append("this system does not allow unprivileged user namespaces")
    return KernelSupport(abi, userns, "; ".join(problems))


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _landlock_abi() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    syscall = _libc().syscall
    syscall.restype = ctypes.c_long
    abi = syscall(
        _SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
    )
    return int(abi) if abi > 0 else 0


def _can_unshare_user() -> bool:
    """Try it in a throwaway child: the only reliable test (sysctls, AppArmor and seccomp
    policies of container runtimes all get a say)."""
    unshare = _libc().unshare  # looked up before the fork: the child only calls it
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 0 if unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWNET) == 0 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
