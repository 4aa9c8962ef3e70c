"""Child processes: start them, stop them, and never leak them.

Owns: the one lifetime of every process the daemon starts (Bash commands, background jobs,
hooks, MCP servers, ripgrep): ``spawn_group`` starts it through the *spawner*, ``Child`` is
its handle, ``stop_group`` stops it (SIGTERM, bounded wait, SIGKILL), ``supervised`` stops it
when its caller is cancelled, ``read_until_exit`` reads its output until it is gone, and
``ProcessRegistry`` holds the spawner and the live children of one daemon.
Must not: decide *when* to stop a process (the executor core does), read its output, or
decide sandbox policy (``stdio_executor.sandbox`` does, through a ``ChildSetup``).

Containment (docs/sandbox.md says which layer holds where). Every child is started by the
spawner (``_spawner.py``), a small process the daemon starts once. Each call's command is
pid 1 of a PID namespace of its own where the kernel allows it (root, or an unprivileged
user namespace), else it runs under an init that is a child subreaper. When the command
exits, the kernel SIGKILLs everything left in its namespace: whatever it did to escape
(``setsid``, double fork, ``nohup``, ignoring SIGTERM) it cannot leave the namespace. The
spawner carries a parent-death signal tied to the daemon, and every call's namespace is
nested in the spawner's own (or, unprivileged, each command has a parent-death signal tied
to the spawner), so a daemon that dies in any way (SIGKILL included) takes every call
down; a daemon that exits closes the spawner's socket, which does the same.

Why not process groups, as before: a group id is a pid, and pids are recycled (32,768 of
them here). The old reaper kept every group it was told of, including groups whose leader
had exited while a background child still ran; once those emptied, their ids were free,
and the reaper's final ``killpg`` (and ``kill_all`` at exit) hit whatever process group
had been given the id since: another program, or another daemon's reaper, which then
logged ``reaper is gone ([Errno 32] Broken pipe)`` and left its children behind when its
own daemon was killed. The spawner signals a call only while the call's init is its own
unreaped child, so the pid it signals cannot have been recycled.

The sandbox seam (``ChildSetup``). ``spawn_group(..., setup=plan)`` takes an optional plan
from the sandbox; ``None`` means no sandbox, only containment. A plan adds:

- ``unshare_flags``: ``CLONE_NEW*`` bits OR-ed into the namespaces the call's init is
  created in (``clone(2)``; ours is ``CLONE_NEWPID`` where allowed). Everything the command
  starts is inside them. With ``CLONE_NEWUSER`` among them, the spawner writes the one-line
  uid/gid maps (the daemon's own ids mapped to themselves, ``setgroups`` denied) before the
  init goes on, so the command keeps the user's identity.
- ``pre_exec(*pre_exec_args)``: runs in a forked child of the spawner, inside the new
  namespaces, before the command is started (after ``setsid`` and ``chdir`` when the child
  then ``exec``s it); so what it sets must be inherited across fork and exec (a Landlock
  domain, mounts, ``NO_NEW_PRIVS``, rlimits, a seccomp filter), and it must not exec
  itself. System calls only (``ctypes`` Landlock, mounts, ``prctl``), no locks, no
  threads, no imports, no logging. It must be a module-level function (pickled by
  reference, imported in the spawner, whose ``sys.path`` is the daemon's) and its
  arguments plain picklable data. If it raises, the spawn fails with ``OSError`` carrying
  its message, and the command never runs.
- ``share_key``: when not None, ``pre_exec`` may serve every call with the same key (it
  sets nothing about one call, nor the working directory): the spawner runs it once in a
  *helper* that then starts each such command with ``posix_spawn``, which is much cheaper
  than a fork per call. Which helper is found by ``(pre_exec, share_key)``. Once a helper
  is made, the spawner hands us a socket to it (a ``_Direct``): later calls of that key,
  and their signals, go to the helper straight, and it reports on that socket (one relay
  hop less per message). Its EOF (the helper died, or the spawner and with it every
  helper) ends every call sent there, as the spawner's does for the rest.
- ``argv_prefix``: prepended to the argv (e.g. ``bwrap ... --``); ``env``: merged over the
  child's environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any

import anyio
import anyio.abc
import msgspec

__all__ = [
    "KILL_GRACE_S",
    "PARENT_DEATH_SIGNAL",
    "Child",
    "ChildSetup",
    "ProcessRegistry",
    "read_until_exit",
    "spawn_group",
    "start_child",
    "stop_group",
    "supervised",
    "watch_parent_death",
]

# After a child exits, how long to keep reading output still in its pipes (a descendant
# holding them is killed with the call, so EOF normally follows at once).
DRAIN_AFTER_EXIT_S = 0.1
# How long a call gets between SIGTERM and SIGKILL (and then to be gone).
KILL_GRACE_S = float(os.environ.get("STDIO_EXECUTOR_KILL_GRACE", "1.0"))
# How long close() waits for the spawner to kill everything and exit.
_CLOSE_WAIT_S = 3.0
# How long a request waits for room in the spawner's socket before the spawner counts as lost.
_SEND_WAIT_S = 10.0
# The largest request sent as one socket message (the spawner's ``_INLINE_MAX``).
_INLINE_MAX = 32 * 1024
# Sent to the daemon when the thread that started it exits (Linux). Not SIGTERM: in a
# multithreaded host that thread may exit while the host lives on, so the signal is only a
# prompt to compare getppid() with the parent we had (``_watch_parent`` does).
PARENT_DEATH_SIGNAL = signal.SIGUSR2
_SPAWNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_spawner.py")
# How the spawner is run. Not ``python _spawner.py``: a script given by path is compiled
# from source at every start (Python never reads a cached .pyc for it), 15-50 ms of the
# first Bash call's wait on a 1,100-line file (bench/NOTES.md section 19). Loaded through
# SourceFileLoader it uses __pycache__ as an imported module does (a wheel install has it
# compiled; -I also ignores PYTHONDONTWRITEBYTECODE, so a checkout writes it once), and
# still runs as ``__main__`` with ``sys.argv[1]`` the daemon's pid. The path stays on the
# command line, where ``ps`` and the tests find the spawner.
_SPAWNER_BOOT = (
    "import sys\n"
    "from importlib.machinery import SourceFileLoader\n"
    "__file__ = sys.argv.pop(1)\n"
    "exec(SourceFileLoader('__main__', __file__).get_code('__main__'))\n"
)

log = logging.getLogger(__name__)


class ChildSetup(msgspec.Struct, frozen=True):
    """A sandbox's additions to one child's start (the contract is in the module docstring)."""

    unshare_flags: int = 0
    pre_exec: Callable[..., None] | None = None
    pre_exec_args: tuple[Any, ...] = ()
    argv_prefix: tuple[str, ...] = ()
    env: Mapping[str, str] = msgspec.field(default_factory=dict)
    share_key: Hashable | None = None


def watch_parent_death() -> None:
    """Ask the kernel for ``PARENT_DEATH_SIGNAL`` when our parent goes (Linux), ignored
    until the event loop listens for it. The caller then compares ``os.getppid()`` with
    ``PARENT_AT_START``: a parent that died before this call is seen that way."""
    signal.signal(PARENT_DEATH_SIGNAL, signal.SIG_IGN)
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, PARENT_DEATH_SIGNAL, 0, 0, 0)


class Child:
    """One started call. ``pid`` is the command's, as we see it (it leads a session and a
    process group of its own; inside its namespace it is pid 1); ``init_pid`` its init's
    (the command's own, but under a subreaper init). ``returncode``
    is the command's exit status as ``subprocess`` gives it (negative: killed by that
    signal), set once nothing of the call is left."""

    def __init__(
        self, registry: ProcessRegistry, call_id: int, direct: _Direct | None = None
    ) -> None:
        self._registry = registry
        self.call_id = call_id
        self._direct = direct  # the helper's socket it was sent to (None: the spawner's)
        self.pid = 0
        self.init_pid = 0
        self.mode = ""
        self.returncode: int | None = None
        self.stdin: FdSendStream | None = None
        self.stdout: FdReceiveStream | None = None
        self.stderr: FdReceiveStream | None = None
        self._command_status: int | None = None
        self._started = asyncio.Event()
        self._gone = asyncio.Event()
        self._on_gone_callbacks: list[Callable[[], None]] = []
        self._failure: OSError | None = None

    def poll(self) -> int | None:
        return self.returncode

    @property
    def failure(self) -> OSError | None:
        """Why it could not be started (``start_child``)."""
        return self._failure

    @property
    def gone(self) -> bool:
        return self._gone.is_set()

    def when_gone(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the loop) once the call is gone, or now if it is."""
        if self._gone.is_set():
            callback()
        else:
            self._on_gone_callbacks.append(callback)

    def not_when_gone(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(ValueError):
            self._on_gone_callbacks.remove(callback)

    async def wait(self) -> int:
        """The exit status; -1 for a call that never started (``failure``)."""
        await self._gone.wait()
        return self.returncode if self.returncode is not None else -1

    def send_signal(self, signum: int) -> None:
        """To the call (``_spawner.Spawner.send_signal`` says how it is delivered to a
        pid-1 command); SIGKILL ends the command and with it the call."""
        if not self._gone.is_set():
            self._registry._send(("signal", self.call_id, signum), direct=self._direct)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                await stream.aclose()

    # -- from the spawner's messages (the event loop's reader callback) --

    def _on_started(self, init_pid: int, pid: int, mode: str) -> None:
        self.init_pid, self.pid, self.mode = init_pid, pid, mode
        self._started.set()

    def _on_failed(self, errno: int, message: str) -> None:
        self._failure = OSError(errno, message)
        self._started.set()
        self._set_gone()

    def _set_gone(self) -> None:
        self._gone.set()
        callbacks, self._on_gone_callbacks = self._on_gone_callbacks, []
        for callback in callbacks:
            callback()

    def _on_status(self, status: int) -> None:
        self._command_status = status

    def _on_gone(self, status: int | None) -> None:
        if self._gone.is_set():
            return
        if self._command_status is not None:
            status = self._command_status
        self.returncode = os.waitstatus_to_exitcode(status) if status is not None else -9
        self._started.set()
        self._set_gone()


class _Direct:
    """Our socket to one sandbox helper (made by the spawner, ``_spawner._new_helper``)
    and the calls sent on it."""

    def __init__(self, sock: socket.socket, helper_id: int) -> None:
        self.sock = sock
        self.helper_id = helper_id
        self.children: set[int] = set()  # call ids sent here and not yet gone
        self.env_sent: dict[str, str] | None = None  # the helper has it (None: nothing)
        self.retired = False  # the spawner let go of it: closed once its calls are gone


class ProcessRegistry:
    """One daemon's spawner and the children it has started and not yet seen gone."""

    def __init__(self) -> None:
        self._sock: socket.socket | None = None
        self._spawner: subprocess.Popen[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._children: dict[int, Child] = {}
        self._next_id = 0
        self._env_sent: dict[str, str] | None = None  # the spawner has it (None: nothing)
        # Sandbox helpers we talk to directly, by ``(pre_exec, share_key)``; and the key of
        # each call sent to the spawner with one, until its helper is known.
        self._direct: dict[Hashable, _Direct] = {}
        self._direct_by_id: dict[int, _Direct] = {}
        self._keys: dict[int, Hashable] = {}

    @property
    def live(self) -> frozenset[Child]:
        return frozenset(self._children.values())

    @property
    def spawner_pid(self) -> int | None:
        return self._spawner.pid if self._spawner else None

    def start(self) -> None:
        """Start the spawner now (else the first spawn does). Call it from the thread that
        lives as long as the daemon: its parent-death signal is tied to that thread."""
        if self._sock is not None:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._spawner = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _SPAWNER_BOOT, _SPAWNER, str(os.getpid())],
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,  # a Ctrl-C to the terminal's group must not reach it
            )
        finally:
            theirs.close()
        self._sock = ours
        self._env_sent = None
        self._send(("path", list(sys.path)))

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        for child in list(self._children.values()):
            child.send_signal(sig)

    def close(self) -> None:
        """Kill every call and let the spawner go (it kills what is left on EOF)."""
        self._detach()
        if self._spawner is not None:
            try:
                self._spawner.wait(timeout=_CLOSE_WAIT_S)
            except subprocess.TimeoutExpired:  # pragma: no cover - defensive
                self._spawner.kill()
                self._spawner.wait()
            self._spawner = None
        for child in list(self._children.values()):
            child._on_gone(None)
        self._children.clear()

    # ---------------------------------------------------------------- the wire

    def _send(
        self, message: tuple[Any, ...], fds: Sequence[int] = (), direct: _Direct | None = None
    ) -> None:
        sock = self._sock if direct is None else direct.sock
        if sock is None or sock.fileno() < 0:
            return
        import pickle  # with the spawner (started when the daemon is first idle)

        data = pickle.dumps(message)
        try:
            try:
                self._send_now(sock, data, fds)
            except BlockingIOError:
                # The spawner is busy (a burst of spawns, a sandbox helper being set up):
                # wait for room rather than call it lost. It reads as soon as it is free.
                sock.settimeout(_SEND_WAIT_S)
                try:
                    self._send_now(sock, data, fds)
                finally:
                    sock.setblocking(False)
        except OSError as exc:
            if direct is not None:
                self._direct_lost(direct)
                return
            log.error("the process spawner is gone (%s)", exc)
            self._lost()

    def _send_now(self, sock: socket.socket, data: bytes, fds: Sequence[int]) -> None:
        if len(data) > _INLINE_MAX:
            # Larger than a SOCK_SEQPACKET message may be (a big environment): the request
            # travels in a memfd, announced by ("large",) (``_spawner._unwrap``).
            import pickle

            carrier = os.memfd_create("stdio-executor-request", os.MFD_CLOEXEC)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(carrier, view) :]
                os.lseek(carrier, 0, os.SEEK_SET)
                socket.send_fds(sock, [pickle.dumps(("large",))], [*fds, carrier])
            finally:
                os.close(carrier)
        elif fds:
            socket.send_fds(sock, [data], list(fds))
        else:
            sock.send(data)

    def _listen(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        assert self._sock is not None
        self._sock.setblocking(False)
        loop.add_reader(self._sock.fileno(), self._on_readable)
        for direct in self._direct_by_id.values():
            loop.add_reader(direct.sock.fileno(), self._on_direct_readable, direct)
        self._loop = loop

    def _on_readable(self) -> None:
        import pickle  # loaded by _send already: the spawner was sent its path first

        flags = getattr(socket, "MSG_CMSG_CLOEXEC", 0)
        while self._sock is not None:
            try:
                data, ancdata, _, _ = self._sock.recvmsg(65536, _FD_SPACE, flags)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data, ancdata = b"", []
            if not data:
                log.error("the process spawner exited; its children were killed with it")
                self._lost()
                return
            message = pickle.loads(data)
            if message[0] == "helper":
                self._on_helper(message[1], message[2], ancdata)
            elif message[0] == "retired":
                self._on_retired(message[1])
            else:
                self._on_report(message)

    def _on_report(self, message: tuple[Any, ...]) -> None:
        kind, call_id, *rest = message
        child = self._children.get(call_id)
        if child is None:
            return
        if kind == "started":
            child._on_started(rest[0], rest[1], rest[2])
        elif kind == "failed":
            self._forget(child)
            child._on_failed(rest[0], rest[1])
        elif kind == "status":
            child._on_status(rest[0])
        elif kind == "exited":
            self._forget(child)
            child._on_gone(rest[0])

    def _forget(self, child: Child) -> None:
        del self._children[child.call_id]
        self._keys.pop(child.call_id, None)
        direct = child._direct
        if direct is not None:
            direct.children.discard(child.call_id)
            if direct.retired and not direct.children:
                self._close_direct(direct)

    # ------------------------------------------------------- sandbox helpers, directly

    def _on_helper(self, call_id: int, helper_id: int, ancdata: list[Any]) -> None:
        """The spawner made a helper for ``call_id``'s key: our socket to it."""
        fds = _fds_of(ancdata)
        if not fds:
            return
        sock = socket.socket(fileno=fds[0])
        for extra in fds[1:]:
            os.close(extra)
        key = self._keys.pop(call_id, None)
        if key is None or self._loop is None:
            sock.close()  # closed at once: the helper serves the spawner's socket only
            return
        sock.setblocking(False)
        direct = _Direct(sock, helper_id)
        old = self._direct.get(key)
        if old is not None:
            self._retire(old)
        self._direct[key] = direct
        self._direct_by_id[helper_id] = direct
        self._loop.add_reader(sock.fileno(), self._on_direct_readable, direct)

    def _on_retired(self, helper_id: int) -> None:
        direct = self._direct_by_id.get(helper_id)
        if direct is not None:
            self._retire(direct)

    def _retire(self, direct: _Direct) -> None:
        """No new calls go to ``direct``; it is closed once its calls are gone (the
        helper exits when no socket of its is left)."""
        direct.retired = True
        for key, known in list(self._direct.items()):
            if known is direct:
                del self._direct[key]
        if not direct.children:
            self._close_direct(direct)

    def _close_direct(self, direct: _Direct) -> None:
        self._direct_by_id.pop(direct.helper_id, None)
        for key, known in list(self._direct.items()):
            if known is direct:
                del self._direct[key]
        if direct.sock.fileno() >= 0:
            if self._loop is not None:
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(direct.sock.fileno())
            direct.sock.close()

    def _on_direct_readable(self, direct: _Direct) -> None:
        import pickle

        while direct.sock.fileno() >= 0:
            try:
                data = direct.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._direct_lost(direct)
                return
            self._on_report(pickle.loads(data))

    def _direct_lost(self, direct: _Direct) -> None:
        """The helper is gone (its socket reached EOF, or a send to it failed): every call
        sent to it died with it (pid 1 of their namespaces' parent), as the spawner
        reports for the calls it passed on."""
        self._close_direct(direct)
        for call_id in sorted(direct.children):
            child = self._children.get(call_id)
            if child is not None:
                self._forget(child)
                child._on_gone(signal.SIGKILL)
        direct.children.clear()

    def _lost(self) -> None:
        """The spawner died (it never should while the daemon runs): its calls died with
        it (the helpers' too: they die with the spawner); the next spawn starts a new one."""
        self._detach()
        if self._spawner is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self._spawner.wait(timeout=1)
                log.error("the process spawner's exit status: %s", code)
            self._spawner = None
        for child in list(self._children.values()):
            if child._started.is_set():
                child._on_gone(None)
            else:
                child._on_failed(5, "the process spawner exited")
        self._children.clear()
        self._keys.clear()

    def _detach(self) -> None:
        """Stop reading the spawner's socket and close it (its EOF tells the spawner to go),
        and the helpers' (they go with the spawner)."""
        for direct in list(self._direct_by_id.values()):
            self._close_direct(direct)
        if self._loop is not None and self._sock is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self._sock.fileno())
        self._loop = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _new_child(self, direct: _Direct | None = None) -> Child:
        self._next_id += 1
        child = Child(self, self._next_id, direct)
        self._children[child.call_id] = child
        if direct is not None:
            direct.children.add(child.call_id)
        return child


_FD_SPACE = socket.CMSG_SPACE(4 * 4)


def _fds_of(ancdata: list[Any]) -> list[int]:
    import array

    fds = array.array("i")
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return list(fds)


_Fd = int | None


_DEVNULL_FD = -1


def _devnull() -> int:
    """One /dev/null of ours for every child that gets it (opening it costs two system
    calls a call; the child gets its own copy through the spawner's socket)."""
    global _DEVNULL_FD
    if _DEVNULL_FD < 0:
        _DEVNULL_FD = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    return _DEVNULL_FD


def _child_end(spec: _Fd, inherit: int, for_reading: bool) -> tuple[int, int | None, bool]:
    """(fd for the child, our end of a pipe or None, whether the child's fd is ours to close)."""
    if spec is None:
        return inherit, None, False
    if spec == subprocess.PIPE:
        r, w = os.pipe()
        return (r, w, True) if for_reading else (w, r, True)
    if spec == subprocess.DEVNULL:
        return _devnull(), None, False
    if spec < 0:
        raise ValueError(f"unsupported stdio spec {spec}")
    return spec, None, False


async def spawn_group(
    registry: ProcessRegistry,
    argv: Sequence[str],
    *,
    stdin: _Fd = None,
    stdout: _Fd = None,
    stderr: _Fd = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    setup: ChildSetup | None = None,
) -> Child:
    """Start a contained child (module docstring) and return its handle.

    ``stdin``/``stdout``/``stderr``: ``None`` (the daemon's own fd), ``subprocess.PIPE``
    (the handle gets a stream), ``subprocess.DEVNULL``, ``subprocess.STDOUT`` (stderr
    only), or an fd of ours that the child gets a copy of. ``setup`` is the sandbox's plan
    (module docstring), ``None`` for none. Raises ``OSError`` if the command cannot start
    (not found, a missing ``cwd``, a failing ``pre_exec``).

    Shielded: a cancel landing mid-spawn would leave a started child without a handle.
    The cancel takes effect at the caller's next await instead, inside ``supervised``.

    ``start_child`` returns as soon as the request is sent instead (for children whose
    output goes to fds of the caller's).
    """
    argv, full_env = _full(argv, env, setup)
    with anyio.CancelScope(shield=True):
        child, ends = _request(registry, argv, stdin, stdout, stderr, cwd, full_env, setup)
        await child._started.wait()
        if child._failure is not None:
            for end in ends:
                if end is not None:
                    os.close(end)
            raise child._failure
        if ends[0] is not None:
            child.stdin = FdSendStream(ends[0])
        if ends[1] is not None:
            child.stdout = FdReceiveStream(ends[1])
        if ends[2] is not None:
            child.stderr = FdReceiveStream(ends[2])
    return child


def start_child(
    registry: ProcessRegistry,
    argv: Sequence[str],
    *,
    stdin: _Fd = None,
    stdout: _Fd = None,
    stderr: _Fd = None,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    setup: ChildSetup | None = None,
) -> Child:
    """Send the request and return the handle at once (no await, one loop wake-up less
    per call), also from synchronous code on the event loop's thread (a tool's
    ``run_inline``). A failure to start shows as the handle's ``failure`` once it is gone
    (``wait``), and ``pid`` is 0 until the start is reported. Only for children whose
    output goes to fds of the caller's (no ``PIPE``)."""
    if subprocess.PIPE in (stdin, stdout, stderr):
        raise ValueError("start_child is for children without pipes of ours")
    argv, full_env = _full(argv, env, setup)
    return _request(
        registry, list(argv), stdin, stdout, stderr, cwd, full_env, setup, report_start=False
    )[0]


def _full(
    argv: Sequence[str], env: Mapping[str, str] | None, setup: ChildSetup | None
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment with the plan's additions."""
    argv = list(argv)
    # A dict given is not copied: ``_request`` only reads it, and copies what it keeps.
    full_env = env if type(env) is dict else dict(os.environ if env is None else env)
    if setup is not None:
        argv = [*setup.argv_prefix, *argv]
        if setup.env:
            full_env = {**full_env, **setup.env}
    return argv, full_env


def _request(
    registry: ProcessRegistry,
    argv: list[str],
    stdin: _Fd,
    stdout: _Fd,
    stderr: _Fd,
    cwd: str | None,
    full_env: dict[str, str],
    setup: ChildSetup | None,
    report_start: bool = True,
) -> tuple[Child, list[int | None]]:
    """Send the spawn request; the new handle and our ends of its pipes. Without
    ``report_start`` the spawner (or helper) may say nothing until the call is gone (the
    handle's ``pid`` stays 0)."""
    flags, pre_exec, pre_args, share_key = 0, None, (), None
    if setup is not None:
        flags, pre_exec, pre_args = setup.unshare_flags, setup.pre_exec, setup.pre_exec_args
        share_key = setup.share_key
    registry.start()
    registry._listen()
    opened: list[int] = []
    ends: list[int | None] = []
    fds: list[int] = []
    try:
        for spec, inherit, reading in ((stdin, 0, True), (stdout, 1, False)):
            fd, end, close = _child_end(spec, inherit, reading)
            fds.append(fd)
            ends.append(end)
            if close:
                opened.append(fd)
        if stderr == subprocess.STDOUT:
            fds.append(fds[1])
            ends.append(None)
        else:
            fd, end, close = _child_end(stderr, 2, False)
            fds.append(fd)
            ends.append(end)
            if close:
                opened.append(fd)
        key: Hashable = None
        direct: _Direct | None = None
        if share_key is not None and pre_exec is not None and not flags:
            key = (pre_exec, share_key)
            direct = registry._direct.get(key)
        child = registry._new_child(direct)
        if key is not None and direct is None:
            registry._keys[child.call_id] = key  # its helper's socket may come back
        if not report_start:
            child._started.set()  # as good as started: a failure still ends it (``failure``)
        # The environment only when it differs from the last one sent (it is ~4 KB, the
        # bulk of the request; usually the same for every call of a session). Kept as our
        # own copy: the caller's dict may change after this.
        if direct is None:
            same_env = full_env == registry._env_sent
            if not same_env:
                registry._env_sent = dict(full_env)
        else:
            same_env = full_env == direct.env_sent
            if not same_env:
                direct.env_sent = dict(full_env)
            # The helper applied the plan once; it ignores the request's (pickling the
            # plan, ~500 bytes of a ~700-byte request, cost both sides per call).
            pre_exec, pre_args, share_key = None, (), None
        message = (
            "spawn",
            child.call_id,
            argv,
            cwd,
            None if same_env else full_env,
            flags,
            pre_exec,
            pre_args,
            share_key,
            report_start,
        )
        registry._send(message, fds, direct)
    except BaseException:
        for end in ends:
            if end is not None:
                os.close(end)
        raise
    finally:
        for fd in opened:
            os.close(fd)
    return child, ends


async def stop_group(process: Child) -> None:
    """SIGTERM the call, wait a bounded time, SIGKILL it, wait until it is gone."""
    if process.gone:
        return
    process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_S):
        await process.wait()
    if not process.gone:
        process.send_signal(signal.SIGKILL)
    with anyio.move_on_after(KILL_GRACE_S):
        await process.wait()


@contextlib.asynccontextmanager
async def supervised(process: Child, registry: ProcessRegistry) -> AsyncIterator[Child]:
    """The lifetime of a spawned call: on cancellation (or any error) it is stopped,
    shielded so the kill itself cannot be cancelled and bounded by the grace; at the end
    its streams are closed."""
    try:
        yield process
    except BaseException:
        with anyio.CancelScope(shield=True):
            await stop_group(process)
        raise
    finally:
        if process.stdin or process.stdout or process.stderr:
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                await process.aclose()


async def read_until_exit(
    process: Child, read: Callable[[], Awaitable[None]], deadline: float = math.inf
) -> bool:
    """Run ``read`` (which reads the child's pipes to EOF) until the child is gone, or
    until ``deadline`` (loop time); True if the deadline passed first (the child may still
    be running: the caller stops it).

    The call's processes die with it, so EOF follows; ``DRAIN_AFTER_EXIT_S`` bounds the
    wait where it does not (a pipe handed to something outside the call). ``read`` runs in
    the caller's task, under one cancel scope (no task group per call: this is on every
    Bash call's path); the child's end starts a timer that cancels it if EOF has not come
    by then.
    """
    loop = asyncio.get_running_loop()
    with anyio.CancelScope(deadline=deadline) as scope:
        timer: asyncio.TimerHandle | None = None

        def gone() -> None:
            nonlocal timer
            timer = loop.call_later(DRAIN_AFTER_EXIT_S, scope.cancel)

        process.when_gone(gone)
        try:
            await read()
        finally:
            process.not_when_gone(gone)
            if timer is not None:
                timer.cancel()
        await process.wait()  # EOF came first (the deadline still holds)
    return not process.gone


class FdReceiveStream(anyio.abc.ByteReceiveStream):
    """Our end of a child's output pipe, read without a thread or a transport."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            if self.fd is None:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self.fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)


class FdSendStream(anyio.abc.ByteSendStream):
    """Our end of a child's input pipe."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self.fd is None:
                raise anyio.ClosedResourceError
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            except BrokenPipeError:
                raise anyio.BrokenResourceError from None
            view = view[written:]

    async def aclose(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
