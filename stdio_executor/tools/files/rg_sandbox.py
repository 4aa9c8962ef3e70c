"""The Landlock domain ripgrep runs in for Grep: the kernel as the last line of confinement.

Grep opens the directory it searches, checks it on the descriptor, and starts ripgrep in it
through that descriptor; but ripgrep walks on by path, so a subdirectory swapped for a
symlink mid-walk would be followed. Under this domain the kernel refuses any read outside
the checked directory, whatever the spelling or the race.

Owns: what ripgrep may read there: everything beneath its working directory (the checked
directory); the ignore files it looks for above it (``.gitignore``, ``.ignore``,
``.rgignore``, a repository's ``info/exclude``, a ``.git`` file and the ``commondir`` and
``info/exclude`` of the git directory it names) and git's global configuration and ignore
file, each a regular file opened without following a symlink, so that ripgrep skips what it
skips today; and to execute its binary with the loader and libraries (the system library
directories and ``/etc/ld.so.cache``). Nothing may be written. ``setup`` answers None where
there is no Landlock (or ``STDIO_EXECUTOR_SANDBOX_DISABLE`` lists ``landlock``), or where
ripgrep cannot start under it (tried once per binary: a system whose libraries live
elsewhere keeps a working Grep, checked on its descriptor only).
Must not: start ripgrep for a search (``grep`` does) or run anything in the child but
``sandbox.kernel.restrict_reads`` (system calls only).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import subprocess

from ...processes import ChildSetup, ProcessRegistry, spawn_group
from ...sandbox.probe import probe

__all__ = ["setup"]

log = logging.getLogger(__name__)

_IGNORE_NAMES = (".gitignore", ".ignore", ".rgignore")
_LIBRARY_DIRS = (
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/local/lib",
)
_EXCLUDES_FILE = re.compile(r"^\s*excludesfile\s*=\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_GIT_FILE_MAX = 4096
# What this daemon knows: the Landlock ABI (0: none), and per ripgrep binary whether it
# starts under the domain.
_abi: int | None = None
_starts: dict[str, bool] = {}


def _landlock_abi() -> int:
    global _abi
    if _abi is None:
        disabled = os.environ.get("STDIO_EXECUTOR_SANDBOX_DISABLE", "").split(",")
        # "userns" too: that probe forks, and only Landlock matters here.
        _abi = probe(disabled=[*disabled, "userns"]).landlock_abi
    return _abi


async def setup(registry: ProcessRegistry, rg: str, searched: str) -> ChildSetup | None:
    """The domain for ripgrep searching the directory whose canonical path is ``searched``
    (it starts there), or None when the kernel cannot enforce it."""
    abi = _landlock_abi()
    if abi == 0:
        return None
    exec_roots = _exec_roots(rg)
    starts = _starts.get(rg)
    if starts is None:
        starts = _starts[rg] = await _starts_confined(registry, rg, abi, exec_roots)
    if not starts:
        return None
    files = (*_above(searched), *_global_git_files(), "/etc/ld.so.cache")
    return _child_setup(abi, files, exec_roots)


@functools.cache
def _exec_roots(rg: str) -> tuple[str, ...]:
    """What running ``rg`` takes: the binary (and what a symlink to it leads to), the loader
    and the libraries."""
    return (rg, os.path.realpath(rg), *_LIBRARY_DIRS)


def _child_setup(abi: int, files: tuple[str, ...], exec_roots: tuple[str, ...]) -> ChildSetup:
    from ...sandbox.kernel import restrict_reads

    return ChildSetup(pre_exec=restrict_reads, pre_exec_args=(abi, files, exec_roots))


async def _starts_confined(
    registry: ProcessRegistry, rg: str, abi: int, exec_roots: tuple[str, ...]
) -> bool:
    """Whether ``rg --version`` runs under the domain (started in ``/dev``, where no
    library lies: what it loads must come from ``exec_roots``)."""
    try:
        child = await spawn_group(
            registry,
            [rg, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd="/dev",
            setup=_child_setup(abi, ("/etc/ld.so.cache",), exec_roots),
        )
        code = await child.wait()
    except OSError as exc:
        log.warning("ripgrep cannot run under Landlock (%s): Grep runs without it", exc)
        return False
    if code != 0:
        log.warning("ripgrep exits %s under Landlock: Grep runs without it", code)
    return code == 0


def _above(searched: str) -> list[str]:
    """The ignore files ripgrep reads above ``searched``, and the git directory a ``.git``
    file at or above it names (a worktree's, a submodule's)."""
    files: list[str] = []
    at = searched
    while True:
        if at != searched:
            files += [os.path.join(at, name) for name in _IGNORE_NAMES]
            files.append(os.path.join(at, ".git", "info", "exclude"))
        files += _git_file(os.path.join(at, ".git"))
        parent = os.path.dirname(at)
        if parent == at:
            return files
        at = parent


def _git_file(path: str) -> list[str]:
    """A ``.git`` file, and what ripgrep reads of the git directory it names."""
    try:
        with open(path, "rb", opener=_no_follow) as f:
            text = f.read(_GIT_FILE_MAX).decode("utf-8", "replace")
    except OSError:  # none, a directory (read beneath or named above), or a symlink
        return []
    if not text.startswith("gitdir:"):
        return [path]
    gitdir = os.path.join(os.path.dirname(path), text[len("gitdir:") :].strip())
    files = [path, os.path.join(gitdir, "commondir"), os.path.join(gitdir, "info", "exclude")]
    with contextlib.suppress(OSError):
        with open(os.path.join(gitdir, "commondir"), "rb", opener=_no_follow) as f:
            common = f.read(_GIT_FILE_MAX).decode("utf-8", "replace").strip()
        files.append(os.path.join(gitdir, common, "info", "exclude"))
    return files


def _global_git_files() -> list[str]:
    """Git's global configuration and ignore files, as ripgrep finds them (their real
    paths: a dotfile manager's symlinks are the user's own, outside any workspace)."""
    home = os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [
        os.path.join(home, ".gitconfig"),
        os.path.join(config, "git", "config"),
        os.path.join(config, "git", "ignore"),
    ]
    for path in found[:2]:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            with open(path, encoding="utf-8") as f:
                match = _EXCLUDES_FILE.search(f.read(1 << 16))
            if match:
                found.append(os.path.expanduser(match.group(1).strip("\"'")))
    return [os.path.realpath(p) for p in found]


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
