"""The spawner: the one process that starts, signals and outlives nothing of the daemon's.

Run by ``processes`` as ``python -I -S -c BOOT _spawner.py DAEMON_PID`` (BOOT runs this
file's cached bytecode as ``__main__``) with a ``SOCK_SEQPACKET`` socket on fd 0; it
imports nothing of the package until a sandbox plan needs it.

Owns: creating every child of the daemon (Bash, hooks, MCP servers, ripgrep) as pid 1 of
a PID namespace of its own where the kernel allows it, else under a child subreaper;
signalling a call only while it is its own unreaped child (so a recycled pid or process
group is never hit: the root cause of the old reaper's losses); reporting each call's exit
status; killing everything when the daemon is gone (socket EOF, or the parent-death signal
when the daemon is SIGKILLed); the sandbox helpers (``_helper_main``).
Must not: decide when anything stops (the daemon sends ``signal`` requests), read a
child's output, or run Python in a command's process except the sandbox's ``pre_exec``.

Where PID namespaces are ours to make (root), this process forks itself once into a PID
namespace of its own and serves from there as its pid 1 (``_enter_own_pidns``): every
call's namespace is nested in it, so when the spawner dies, however it dies, the kernel
kills them all. A call is then *one* process: ``unshare(CLONE_NEWPID)`` makes our next
child the first of a new namespace, ``posix_spawn`` (vfork-based: forking even this small
interpreter costs several times more) starts the command as that child, and ``setns(2)``
returns us to our own namespace (``_spawn_in_place``). When the command exits, the kernel
SIGKILLs whatever is left in its namespace. A call with a ``pre_exec`` (the sandbox) is
started by a *helper* that ran it once for every call with the same ``share_key``
(``_helper_main``), or, when it has none or we are not root, by a ``clone(2)`` of us into
the new namespaces that runs it and ``exec``s the command (``_exec``): again the command
is pid 1. A clone's working directory is opened by us before it exists and entered with
``fchdir``, so a path only our user namespace may resolve works in the call's new one (the
daemon's ``/proc/PID/fd/N``: Grep's checked directory). Without namespaces (unprivileged
with user namespaces off; not Linux) a Python *init* (``Spawner._init``), a child
subreaper, starts the command and SIGKILLs every descendant before it exits.

Numbering: in our own namespace, pids from ``clone``/``waitpid`` are ours; ``/proc`` (the
daemon's) numbers them as the daemon does. The daemon is told the latter (``_host``).

Messages are pickled tuples (the socket is a private socketpair with the daemon):
daemon -> spawner: ``("path", sys_path)``, ``("spawn", id, argv, cwd, env, flags, pre_exec,
args, share_key, report_start)`` with three fds, ``("signal", id, signum)``;
spawner -> daemon: ``("started", id, init_pid, command_pid, mode)`` (a helper sends it only
when ``report_start``), ``("failed", id, errno, message)``,
``("status", id, wait_status)`` (from a subreaper init: the command's own status),
``("exited", id, wait_status)`` (the call's first process is reaped: nothing of it is left),
``("helper", id, helper_id)`` with one fd, ``("retired", helper_id)``.
A helper speaks the same protocol with the spawner, which relays its replies as they are.
It also has a *direct* socket to the daemon (handed over by the ``helper`` message, sent
when the helper made for call ``id`` is ready): the daemon sends that plan's later calls
and their signals there, one relay hop less per message; the helper answers each call on
the socket it came from. ``retired``: the spawner let go of that helper (``_MAX_HELPERS``);
it serves its direct socket until the daemon closes it (the daemon does once its calls
there are gone), and exits when no socket of its is left open.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import os
import pickle
import select
import signal
import socket
import sys
from collections.abc import Callable
from typing import Any

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
_SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120, "s390x": 120}
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
_KILL_ALL = signal.SIGUSR1  # to an init: kill every process of the call now, then exit
_SWEEP_S = 0.5
_DEFAULT_SIGNALS = tuple(signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP})
# What this process ignores (``main``, and Python's own SIGPIPE/SIGXFSZ): an ignored signal
# stays ignored across exec, so a command gets these back to their defaults. Handled ones
# are reset by exec itself.
_IGNORED_HERE = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGPIPE,
    *((signal.SIGXFSZ,) if hasattr(signal, "SIGXFSZ") else ()),
)

_linux = sys.platform.startswith("linux")
_libc = ctypes.CDLL(None, use_errno=True)
_clone_nr = _SYS_CLONE.get(os.uname().machine) if _linux else None


def _prctl(option: int, value: int) -> None:
    if _linux:
        _libc.prctl(option, value, 0, 0, 0)


def _clone(flags: int) -> int:
    """fork(2) with namespace flags: the child is created inside them (unlike unshare(2),
    which would move every later child of ours into the same namespace)."""
    if not flags:
        return os.fork()
    if _clone_nr is None:
        raise OSError(38, "clone with namespaces is not available here")
    pid: int = _libc.syscall(_clone_nr, flags | signal.SIGCHLD, 0, 0, 0, 0)
    if pid < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno))
    return pid


def _ppid_outside() -> int:
    # getppid() is 0 inside a new PID namespace; /proc is still the daemon's, so read it.
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def _write(path: str, data: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data.encode())
    finally:
        os.close(fd)


def _map_ids(pid: int) -> None:
    """The one-line maps of a new user namespace: our own ids mapped to themselves."""
    uid, gid = os.getuid(), os.getgid()
    _write(f"/proc/{pid}/setgroups", "deny")
    _write(f"/proc/{pid}/uid_map", f"{uid} {uid} 1")
    _write(f"/proc/{pid}/gid_map", f"{gid} {gid} 1")


# A SOCK_SEQPACKET message must fit the socket's buffer (~208 KiB by default): a request
# whose environment or command is larger travels in a memfd passed along with it, announced
# by a ("large",) message. The daemon's side of this is ``processes.ProcessRegistry._send_now``
# (this module imports nothing of the package).
_INLINE_MAX = 32 * 1024


def _send_raw(sock: socket.socket, data: bytes, fds: list[int]) -> None:
    if len(data) > _INLINE_MAX:
        carrier = _carrier(data)
        try:
            socket.send_fds(sock, [pickle.dumps(("large",))], [*fds, carrier])
        finally:
            os.close(carrier)
    elif fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.send(data)


def _carrier(data: bytes) -> int:
    fd = os.memfd_create("stdio-executor-request", os.MFD_CLOEXEC)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _unwrap(data: bytes, fds: list[int]) -> tuple[bytes, Any]:
    """The request as sent, and its message: a ("large",) one is read from its carrier
    (the last fd), which is closed and taken off ``fds``."""
    message = pickle.loads(data)
    if message[0] != "large":
        return data, message
    carrier = fds.pop()
    try:
        with os.fdopen(os.dup(carrier), "rb") as f:
            data = f.read()
    finally:
        os.close(carrier)
    return data, pickle.loads(data)


def _send(sock: socket.socket, message: tuple[Any, ...]) -> None:
    # The daemon gone: the EOF on our next read ends everything.
    with contextlib.suppress(OSError):
        sock.send(pickle.dumps(message))


class Spawner:
    def __init__(self, sock: socket.socket, nested: bool = False) -> None:
        self.sock = sock
        # Sockets requests come from: ``sock`` and, in a helper, the daemon's direct one.
        self.clients: list[socket.socket] = [sock]
        self.replies: dict[int, socket.socket] = {}  # call id -> its socket, if not ``sock``
        self.client_env: dict[int, dict[str, str]] = {}  # fileno -> its last environment
        self.next_helper_id = 0
        # Our pid as /proc (the daemon's) and the daemon number it: inside our own PID
        # namespace getpid() is 1, and every pid we get from clone/waitpid is numbered there.
        self.host_pid = int(os.readlink("/proc/self")) if _linux else os.getpid()
        self.nested = nested
        self.calls: dict[int, int] = {}  # pid (our numbering) -> call id
        self.hosts: dict[int, int] = {}  # pid (our numbering) -> pid as the daemon sees it
        # A SIGTERM/SIGINT/... replaced by SIGKILL for a command that had no handler for it
        # (``send_signal``): reported as that signal, which would have ended it the same way.
        self.substituted: dict[int, int] = {}
        # report pipe -> (call id, pid, what it said so far): calls still starting
        self.pending: dict[int, tuple[int, int, bytearray]] = {}
        self.mode = "pidns" if nested else ""  # or "userns+pidns", "subreaper", "group"
        # Set-ups shared by many calls (spawns with a ``share_key``: the sandbox's), each
        # done once in a helper (``_helper_main``), which then starts those calls as we
        # start ours; keyed by ``(pre_exec, share_key)``.
        self.helpers: dict[Any, _Helper] = {}
        self.delegated: dict[int, _Helper] = {}  # call id -> the helper that runs it
        self.applied = False  # we are a helper: the set-up is done, requests' is ignored
        # The environment of the last request that carried one (requests carry None when
        # theirs is the same), and how many have come: a helper is sent a request as it
        # came only if it has seen the same environment.
        self.env: dict[str, str] = {}
        self.env_version = 0
        self.own_pidns = -1  # our PID namespace, to return to after each unshare(2)
        self.home = -1  # our working directory, to return to after each chdir
        if nested and _can_return_to_own_pidns():
            self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
            self.home = os.open(".", os.O_RDONLY | os.O_CLOEXEC)

    def _reply(self, call_id: int, done: bool = False) -> socket.socket:
        """The socket a report about ``call_id`` goes to (``done``: its last report)."""
        if done:
            return self.replies.pop(call_id, self.sock)
        return self.replies.get(call_id, self.sock)

    def _failed(self, call_id: int, exc: OSError) -> None:
        """Report a call that could not start (its last report)."""
        _send(self._reply(call_id, done=True), ("failed", call_id, exc.errno or 1, _describe(exc)))

    @property
    def direct(self) -> bool:
        """Whether the command is itself pid 1 of its namespace (no init of ours)."""
        return self.mode in ("pidns", "userns+pidns")

    def _host(self, pid: int) -> int:
        """The daemon's number for our child ``pid`` (its pidfd's fdinfo is written in
        /proc's namespace, the daemon's)."""
        if not self.nested:
            return pid
        fd = os.pidfd_open(pid)
        try:
            with open(f"/proc/self/fdinfo/{fd}", "rb") as f:
                for line in f:
                    if line.startswith(b"Pid:"):
                        return int(line.split()[1])
        finally:
            os.close(fd)
        raise OSError(3, "no such process")

    # ---------------------------------------------------------------- namespaces

    def _base_flags(self) -> int:
        if not self.mode:
            self.mode = self._probe()
        if self.mode == "pidns":
            return CLONE_NEWPID
        if self.mode == "userns+pidns":
            return CLONE_NEWUSER | CLONE_NEWPID
        return 0

    def _probe(self) -> str:
        forced = os.environ.get("STDIO_EXECUTOR_CONTAINMENT", "")
        if forced in ("subreaper", "group"):
            return forced
        if forced == "userns":  # what an unprivileged spawner gets (tests use it as root)
            return "userns+pidns"
        for mode, flags in (
            ("pidns", CLONE_NEWPID),
            ("userns+pidns", CLONE_NEWUSER | CLONE_NEWPID),
        ):
            try:
                pid = _clone(flags)
            except OSError:
                continue
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            return mode
        return "subreaper" if _linux else "group"

    # --------------------------------------------------------------------- spawn

    def spawn(
        self,
        call_id: int,
        argv: list[str],
        cwd: str | None,
        env: dict[str, str],
        extra_flags: int,
        pre_exec: Callable[..., None] | None,
        args: tuple[Any, ...],
        fds: list[int],
        share_key: Any = None,
        raw: bytes = b"",
        report_start: bool = True,
    ) -> None:
        if self.applied:
            pre_exec, extra_flags, share_key = None, 0, None
        if share_key is not None and self.own_pidns >= 0 and pre_exec and not extra_flags:
            self._delegate(call_id, (pre_exec, share_key), pre_exec, args, fds, raw)
            return
        flags = self._base_flags() | extra_flags
        if self.own_pidns >= 0 and pre_exec is None and not extra_flags:
            self._spawn_in_place(call_id, argv, cwd, env, fds, report_start)
            return
        cwd_fd = -1
        try:
            if cwd:
                # Opened here, before the call's namespaces exist, and entered with fchdir
                # in the child: a path only our user namespace may resolve (the daemon's
                # ``/proc/PID/fd/N``: Grep's checked directory) works in a new one too.
                cwd_fd = os.open(cwd, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            err_r, err_w = os.pipe()
            go_r, go_w = os.pipe() if flags & CLONE_NEWUSER else (-1, -1)
            pid = _clone(flags)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            if cwd_fd >= 0:
                os.close(cwd_fd)
            self._failed(call_id, exc)
            return
        if pid == 0:
            try:
                os.close(err_r)
                if go_r >= 0:
                    # Wait for our maps: the kernel lets the parent namespace write them (a
                    # process inside the new one may not, here, even for its own ids).
                    os.close(go_w)
                    os.read(go_r, 1)
                    os.close(go_r)
                if flags & CLONE_NEWPID:
                    _exec(self.host_pid, argv, cwd_fd, env, pre_exec, args, fds, err_w)
                else:
                    self._init(call_id, argv, cwd_fd, env, flags, pre_exec, args, fds, err_w)
            finally:
                os._exit(127)
        if cwd_fd >= 0:
            os.close(cwd_fd)
        os.close(err_w)
        for fd in fds:
            os.close(fd)
        self.calls[pid] = call_id
        with contextlib.suppress(OSError):  # our unreaped child: it cannot fail
            self.hosts[pid] = self._host(pid)
        os.set_blocking(err_r, False)
        if go_r >= 0:
            os.close(go_r)
            try:
                _map_ids(pid)
            except OSError as exc:
                os.kill(pid, signal.SIGKILL)
                os.close(go_w)
                os.close(err_r)
                _send(
                    self._reply(call_id, done=True),
                    ("failed", call_id, exc.errno or 1, f"user namespace: {exc}"),
                )
                return
            os.write(go_w, b"x")
            os.close(go_w)
        # Not waited for here: the init's set-up (copy-on-write faults, the sandbox's system
        # calls, the command's exec) takes milliseconds, and the next call's clone need not
        # wait behind it. ``_check`` reports the call once the pipe reaches EOF.
        self.pending[err_r] = (call_id, pid, bytearray())

    def _delegate(
        self,
        call_id: int,
        key: Any,
        pre_exec: Callable[..., None],
        args: tuple[Any, ...],
        fds: list[int],
        raw: bytes,
    ) -> None:
        """A call whose set-up many calls share: handed, as it came, to the helper that has
        done that set-up (made on first use)."""
        try:
            helper = self.helpers.get(key)
            if helper is None:
                helper = self._new_helper(call_id, key, pre_exec, args)
            if helper.env_version != self.env_version:
                message = pickle.loads(raw)
                if message[4] is None:  # "the same as the last": not the last it saw
                    raw = pickle.dumps((*message[:4], self.env, *message[5:]))
                helper.env_version = self.env_version
            _send_raw(helper.sock, raw, fds)
        except OSError as exc:
            self._failed(call_id, exc)
            return
        finally:
            for fd in fds:
                os.close(fd)
        helper.calls.add(call_id)
        self.delegated[call_id] = helper

    def _new_helper(
        self, call_id: int, key: Any, pre_exec: Callable[..., None], args: tuple[Any, ...]
    ) -> _Helper:
        """Fork a helper that runs ``pre_exec(*args)`` once and then serves spawns as we do
        (``_helper_main``). Waits for it to be ready: once per distinct set-up. The daemon
        is handed the helper's direct socket (``("helper", call_id, helper_id)``) before
        the call that made it is passed on."""
        for old_key, old in list(self.helpers.items()):
            if len(self.helpers) < _MAX_HELPERS:
                break
            if not old.calls:  # idle here; it goes once the daemon closes its direct socket
                old.sock.close()
                del self.helpers[old_key]
                _send(self.sock, ("retired", old.helper_id))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        direct_daemon, direct_helper = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        err_r, err_w = os.pipe()
        try:
            pid = _clone(0)
        except OSError:
            for end in (ours, theirs, direct_daemon, direct_helper):
                end.close()
            for fd in (err_r, err_w):
                os.close(fd)
            raise
        if pid == 0:
            try:
                ours.close()
                direct_daemon.close()
                os.close(err_r)
                _helper_main(self, theirs, direct_helper, err_w, pre_exec, args)
            finally:
                os._exit(127)
        theirs.close()
        direct_helper.close()
        os.close(err_w)
        report = bytearray()
        while chunk := _read_retrying(err_r):
            report += chunk
        os.close(err_r)
        try:
            if report != _READY:
                ours.close()
                errno, _, message = report.decode(errors="replace").partition(":")
                raise OSError(
                    int(errno or 1), message or "the sandbox helper exited while starting"
                )
            self.next_helper_id += 1
            helper = _Helper(ours, self.next_helper_id)
            self.helpers[key] = helper
            with contextlib.suppress(OSError):  # the daemon gone: our next read ends us
                announce = pickle.dumps(("helper", call_id, helper.helper_id))
                socket.send_fds(self.sock, [announce], [direct_daemon.fileno()])
        finally:
            direct_daemon.close()
        return helper

    def _from_helper(self, helper: _Helper) -> None:
        """Relay what a helper says about its calls to the daemon, as it said it."""
        while True:
            try:
                data = helper.sock.recv(65536, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                # Gone (it never is while we live): its calls died with it, pid 1 of their
                # namespaces' parent.
                for call_id in helper.calls:
                    self.delegated.pop(call_id, None)
                    _send(self.sock, ("exited", call_id, signal.SIGKILL))
                helper.calls.clear()
                helper.sock.close()
                for key, known in list(self.helpers.items()):
                    if known is helper:
                        del self.helpers[key]
                return
            kind, call_id, *_ = pickle.loads(data)
            if kind in ("failed", "exited"):
                helper.calls.discard(call_id)
                self.delegated.pop(call_id, None)
            with contextlib.suppress(OSError):
                self.sock.send(data)

    def _spawn_in_place(
        self,
        call_id: int,
        argv: list[str],
        cwd: str | None,
        env: dict[str, str],
        fds: list[int],
        report_start: bool = True,
    ) -> None:
        """The command itself as pid 1 of a new PID namespace, started with ``posix_spawn``
        (vfork: no copy of this interpreter, no Python in the child): ``unshare(2)`` makes
        our next child the first of a new namespace, and ``setns(2)`` back to ours undoes it
        for the one after. Nothing of ours runs in the child, so it has no parent-death
        signal: it is inside our own namespace (``main``), and when we die the kernel kills
        that namespace with every one nested in it."""
        pid = 0
        try:
            if cwd:
                os.chdir(cwd)
            try:
                path = _which(argv[0], env)  # after chdir: PATH may hold relative entries
                if _libc.unshare(CLONE_NEWPID) != 0:
                    errno = ctypes.get_errno()
                    raise OSError(errno, f"unshare: {os.strerror(errno)}")
                try:
                    pid = os.posix_spawn(
                        path,
                        argv,
                        env,
                        file_actions=[
                            (os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)
                        ],
                        setsid=True,
                        setsigdef=_IGNORED_HERE,
                        setsigmask=(),
                    )
                finally:
                    if _libc.setns(self.own_pidns, CLONE_NEWPID) != 0:  # pragma: no cover
                        # Stuck with a used namespace for our children: every later spawn
                        # would fail. Go; the daemon starts a new spawner.
                        os._exit(70)
            finally:
                if cwd:
                    os.fchdir(self.home)
            self.calls[pid] = call_id
            # The daemon's number for it: for the report, else looked up when first needed
            # (``_signal_pid1``); a pidfd and a /proc read per call saved.
            host = self._host(pid) if report_start else 0
        except OSError as exc:
            if pid:
                os.kill(pid, signal.SIGKILL)  # reaped by ``reap``, reported as failed
            self._failed(call_id, exc)
            return
        finally:
            for fd in fds:
                os.close(fd)
        if report_start:
            self.hosts[pid] = host
            _send(self._reply(call_id), ("started", call_id, host, host, self.mode))

    def _check(self, err_r: int, block: bool = False) -> None:
        """Read an init's report pipe; at EOF (the command exec'd, the pipe being
        close-on-exec, or the set-up failed and said why) tell the daemon."""
        call_id, pid, report = self.pending[err_r]
        while True:
            try:
                chunk = os.read(err_r, 4096)
            except InterruptedError:
                continue
            except BlockingIOError:
                if not block:
                    return
                select.select([err_r], [], [])
                continue
            if not chunk:
                break
            report += chunk
        del self.pending[err_r]
        os.close(err_r)
        if report:
            errno, _, message = report.decode(errors="replace").partition(":")
            _send(self._reply(call_id), ("failed", call_id, int(errno or 1), message))
        else:
            if self.direct:
                host = self.hosts.get(pid, pid)
                _send(self._reply(call_id), ("started", call_id, host, host, self.mode))
            else:
                started = ("started", call_id, pid, _command_pid(pid), self.mode)
                _send(self._reply(call_id), started)

    def _init(
        self,
        call_id: int,
        argv: list[str],
        cwd_fd: int,
        env: dict[str, str],
        flags: int,
        pre_exec: Callable[..., None] | None,
        args: tuple[Any, ...],
        fds: list[int],
        err_w: int,
    ) -> None:
        in_pidns = bool(flags & CLONE_NEWPID)
        command = 0

        def forward(signum: int, _frame: object) -> None:
            if command:
                _signal_call(in_pidns, command, signum)

        def kill_all(_signum: int, _frame: object) -> None:
            _kill_descendants(in_pidns)
            os._exit(128 + signal.SIGKILL)

        try:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            signal.signal(_KILL_ALL, kill_all)
            # Tied to the spawner: SIGKILL inside a namespace (the kernel then kills it
            # all); without one, a signal we handle so the descendants are killed first.
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL if in_pidns else _KILL_ALL)
            if _linux and _ppid_outside() != self.host_pid:
                return  # the spawner died before the line above: nobody wants this call
            os.setsid()
            if not in_pidns:
                _prctl(PR_SET_CHILD_SUBREAPER, 1)
            if cwd_fd >= 0:
                os.fchdir(cwd_fd)
            if pre_exec is not None:
                pre_exec(*args)
            # vfork-based: a fork of even this small interpreter costs several times more.
            command = os.posix_spawn(
                _which(argv[0], env),
                argv,
                env,
                file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)],
                setpgroup=0,  # a group of its own, as a shell's job would have
                setsigdef=_DEFAULT_SIGNALS,
                setsigmask=(),
            )
        except BaseException as exc:
            _report(err_w, exc)
            return
        os.close(err_w)
        for fd in fds:
            os.close(fd)
        for sig in _FORWARDED:
            signal.signal(sig, forward)
        status = 0
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == command:
                break
        _send(self.sock, ("status", call_id, status))
        _kill_descendants(in_pidns)
        os._exit(0)

    # ------------------------------------------------------------------- signals

    def send_signal(self, call_id: int, signum: int) -> None:
        helper = self.delegated.get(call_id)
        if helper is not None:
            with contextlib.suppress(OSError):
                helper.sock.send(pickle.dumps(("signal", call_id, signum)))
            return
        for pid, cid in self.calls.items():
            if cid == call_id:
                # Our unreaped child: the pid cannot have been recycled.
                with contextlib.suppress(OSError):
                    if self.direct:
                        self._signal_pid1(pid, signum)
                    else:
                        os.kill(pid, signum)  # an init: it forwards or kills all
                return

    def _signal_pid1(self, pid: int, signum: int) -> None:
        """A signal for a call whose command is pid 1 of its namespace. The kernel drops a
        signal sent to a namespace's pid 1 unless it has a handler for it (SIGKILL, sent
        from outside, excepted). So: the signal goes to the command's process group (its
        children, a shell's foreground job), which reaches the command too if it handles
        it (a ``trap``); if it neither handles nor ignores it, it gets SIGKILL instead,
        which is what the signal's default action would have done, and its status is
        reported as that signal's. Its end takes the rest of the namespace with it."""
        if signum == signal.SIGKILL:
            self.substituted.pop(pid, None)
            os.kill(pid, signal.SIGKILL)
            return
        if pid in self.substituted:
            return  # already on its way out
        host = self.hosts.get(pid)
        if host is None:
            with contextlib.suppress(OSError):  # our unreaped child: it cannot fail
                self.hosts[pid] = host = self._host(pid)
        disposition = _disposition(host or pid, signum)
        if disposition == "default" and signum in _TERMINATING:
            # SIGKILL first, and nothing to the group: a shell whose foreground child died
            # of the signal before the shell itself was killed would go on to its next
            # command (`sleep 5; touch marker` left a marker after an interrupt).
            self.substituted[pid] = signum
            os.kill(pid, signal.SIGKILL)
            return
        with contextlib.suppress(OSError):
            os.killpg(pid, signum)  # its group id is its pid (a session of its own)

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            call_id = self.calls.pop(pid, None)
            self.hosts.pop(pid, None)
            replaced = self.substituted.pop(pid, None)
            if replaced and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
                status = replaced  # the wait status of a process ended by that signal
            for err_r, (_, init, _) in list(self.pending.items()):
                if init == pid:  # "started" (or "failed") before "exited"
                    self._check(err_r, block=True)
            if call_id is not None:
                _send(self._reply(call_id, done=True), ("exited", call_id, status))

    def sweep(self) -> None:
        """SIGKILL children that are not an init of ours: descendants of a SIGKILLed init
        that reparented to us (we are a subreaper) when no namespace held them."""
        for pid in _children():
            if pid not in self.calls:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def _client_gone(self, sock: socket.socket) -> None:
        """A socket we serve reached EOF. The daemon's (ours, or a helper's two: the
        spawner's and the daemon's direct one) all closed: every call goes, then we do.
        A helper the spawner let go of serves its direct socket until the daemon closes it."""
        self.clients.remove(sock)
        self.client_env.pop(sock.fileno(), None)
        if not self.applied or not self.clients:
            self.shutdown()
        if sock is not self.sock:
            sock.close()

    def shutdown(self) -> None:
        """The daemon is gone: every call goes, then we do."""
        if self.nested:
            os._exit(0)  # pid 1: the kernel kills our namespace, and every one inside it
        for pid in list(self.calls):
            with contextlib.suppress(OSError):
                os.kill(pid, _KILL_ALL if self.mode in ("subreaper", "group") else signal.SIGKILL)
        for _ in range(100):
            self.reap()
            self.sweep()
            if not _children():
                break
            select.select([], [], [], 0.02)
        for pid in _children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        os._exit(0)

    # ---------------------------------------------------------------------- loop

    def run(self) -> None:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        while True:
            try:
                watched = [*(c.fileno() for c in self.clients), wake_r, *self.pending]
                watched += [h.sock.fileno() for h in self.helpers.values()]
                ready, _, _ = select.select(watched, [], [], _SWEEP_S)
            except InterruptedError:
                continue
            if wake_r in ready:
                with contextlib.suppress(OSError):
                    os.read(wake_r, 4096)
            for err_r in ready:
                if err_r in self.pending:
                    self._check(err_r)
            for helper in list(self.helpers.values()):
                if helper.sock.fileno() in ready:
                    self._from_helper(helper)
            self.reap()
            if self.mode in ("subreaper", "group"):
                self.sweep()
            for client in list(self.clients):
                if client.fileno() in ready:
                    self.serve(client)

    def serve(self, sock: socket.socket) -> None:
        while True:
            try:
                data, fds = _receive(sock)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._client_gone(sock)
                return
            data, message = _unwrap(data, fds)
            kind = message[0]
            if kind == "spawn":
                _, call_id, argv, cwd, env, flags, pre_exec, args, share_key, report = message
                if sock is not self.sock:
                    self.replies[call_id] = sock
                    if env is None:  # the same as the last request's on this socket
                        env = self.client_env[sock.fileno()]
                    else:
                        self.client_env[sock.fileno()] = env
                elif env is None:  # the same as the last request's
                    env = self.env
                else:
                    self.env, self.env_version = env, self.env_version + 1
                self.spawn(
                    call_id, argv, cwd, env, flags, pre_exec, args, fds, share_key, data, report
                )
            elif kind == "signal":
                self.send_signal(message[1], message[2])
            elif kind == "path":
                sys.path[:] = message[1]


# Signals whose default action ends the process (the ones the daemon sends among them).
_TERMINATING = frozenset(
    {
        signal.SIGTERM,
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGQUIT,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGPIPE,
        signal.SIGALRM,
    }
)
_READY = b"ready"  # what a helper writes on its report pipe once it serves
_MAX_HELPERS = 4  # distinct shared set-ups kept (a sandbox plan changes rarely)
PR_SET_DUMPABLE = 4


class _Helper:
    """Our end of a helper's socket and the calls we passed it (not those the daemon sent
    it directly)."""

    def __init__(self, sock: socket.socket, helper_id: int) -> None:
        self.sock = sock
        self.helper_id = helper_id
        self.calls: set[int] = set()
        self.env_version = 0  # of the last environment it was sent (0: none)


def _read_retrying(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, 4096)
        except InterruptedError:
            continue


def _helper_main(
    parent: Spawner,
    sock: socket.socket,
    direct: socket.socket,
    err_w: int,
    pre_exec: Callable[..., None],
    args: tuple[Any, ...],
) -> None:
    """A clone of the spawner that applies a shared set-up (the sandbox's ``enter``: its
    namespaces, mounts, seccomp filter and Landlock domain, all inherited by children)
    once, and then starts each call as the spawner does (``_spawn_in_place``). It makes a
    PID namespace after the set-up and lives as its pid 1 (the first process, forked
    here, the one making it exits): created from inside the sandbox's user namespace, that
    namespace is ours to nest each call's namespace in (``unshare``, and ``setns`` back),
    and when the helper dies, everything it started dies too. It is not dumpable, so a
    command in the same sandbox cannot read or trace it; its pid is not visible to them."""
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if _ppid_outside() != parent.host_pid:
            return
        pre_exec(*args)
        if _libc.unshare(CLONE_NEWPID) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"unshare(pid): {os.strerror(errno)}")
        first = int(os.readlink("/proc/self"))
        if os.fork() != 0:
            os._exit(0)  # our child is pid 1 of the new namespace; it reparents to the spawner
        # Wait for that (an orphan goes to the spawner, the reaper of the namespace the one
        # that made us is in), then tie ourselves to the spawner. Any other new parent: the
        # spawner is not what we think; go.
        while (ppid := _ppid_outside()) == first:
            select.select([], [], [], 0.001)
        if ppid != parent.host_pid:
            return
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if _ppid_outside() != parent.host_pid:
            return
        _prctl(PR_SET_DUMPABLE, 0)
        # Nothing of the spawner's stays open here (the daemon's socket, other helpers').
        for fd in _open_fds():
            if fd > 2 and fd not in (sock.fileno(), direct.fileno(), err_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
        helper = Spawner(sock, nested=True)
        helper.clients.append(direct)
        helper.applied = True
        if helper.own_pidns < 0:
            raise OSError(1, "sandbox helper: cannot nest PID namespaces")
    except BaseException as exc:
        _report(err_w, exc)
        return
    os.write(err_w, _READY)  # an early return above says nothing: the spawner sees failure
    os.close(err_w)
    helper.run()


def _open_fds() -> list[int]:
    try:
        return [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


def _which(name: str, env: dict[str, str]) -> str:
    """The program, looked up in the child's PATH as ``subprocess`` does (posix_spawnp
    would use ours)."""
    if "/" in name:
        return name
    for folder in os.get_exec_path(env):
        path = os.path.join(folder or ".", name)
        if os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise FileNotFoundError(2, "No such file or directory", name)


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    # Not socket.recv_fds: it drops its flags argument (3.11), and we must not block.
    flags = socket.MSG_DONTWAIT | getattr(socket, "MSG_CMSG_CLOEXEC", 0)
    data, ancdata, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(4 * 4), flags)
    fds = array.array("i")
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.strerror}: {exc.filename!r}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _report(err_w: int, exc: BaseException) -> None:
    errno = getattr(exc, "errno", None) or 1
    with contextlib.suppress(OSError):
        os.write(err_w, f"{errno}:{_describe(exc)}".encode())


def _exec(
    spawner: int,
    argv: list[str],
    cwd_fd: int,
    env: dict[str, str],
    pre_exec: Callable[..., None] | None,
    args: tuple[Any, ...],
    fds: list[int],
    err_w: int,
) -> None:
    """In a clone of the spawner, pid 1 of the call's new namespaces: set up and become
    the command (``execve``), so the command is pid 1 and no init of ours stays behind.
    On success ``err_w`` (close-on-exec) reaches EOF; on failure it carries why."""
    try:
        # Tied to the spawner (the namespace dies with its pid 1). Set before the check
        # below, so a spawner that died in between is still seen.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if _linux and _ppid_outside() != spawner:
            return  # the spawner died before the line above: nobody wants this call
        os.setsid()  # a session and group of its own: the group id is its pid
        if cwd_fd >= 0:
            os.fchdir(cwd_fd)
        if pre_exec is not None:
            pre_exec(*args)
        path = _which(argv[0], env)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)  # inheritable; every other fd of ours is close-on-exec
        for sig in _IGNORED_HERE:  # ignored stays ignored across exec; handled does not
            signal.signal(sig, signal.SIG_DFL)
        os.execve(path, argv, env)
    except BaseException as exc:
        _report(err_w, exc)


def _disposition(pid: int, signum: int) -> str:
    """What ``pid`` does with ``signum``: "caught" (a handler), "ignored", or "default"
    (``SigCgt`` and ``SigIgn`` in its status)."""
    bit = 1 << (signum - 1)
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"SigIgn:") and int(line.split()[1], 16) & bit:
                    return "ignored"
                if line.startswith(b"SigCgt:"):
                    return "caught" if int(line.split()[1], 16) & bit else "default"
    except (OSError, ValueError, IndexError):
        pass
    return "default"


def _can_return_to_own_pidns() -> bool:
    """Whether ``setns(2)`` into our own PID namespace is allowed (the check it makes is
    the one the way back from each ``unshare`` needs); tried before any unshare."""
    try:
        fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return bool(_libc.setns(fd, CLONE_NEWPID) == 0)
    finally:
        os.close(fd)


def _command_pid(init: int) -> int:
    """The command's pid as the daemon sees it: the init's one child right after it started
    it (the init knows only its pid inside the namespace)."""
    try:
        with open(f"/proc/{init}/task/{init}/children", "rb") as f:
            return int(f.read().split()[0])
    except (OSError, IndexError, ValueError):
        return init


def _children() -> list[int]:
    if not _linux:
        return []
    found: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children", "rb") as f:
                found.extend(int(p) for p in f.read().split())
    except OSError:
        pass
    return found


def _signal_call(in_pidns: bool, command: int, signum: int) -> None:
    if in_pidns:
        with contextlib.suppress(OSError):
            os.kill(-1, signum)  # every process of the namespace except its init
        return
    for target in (-command, *_descendants()):
        with contextlib.suppress(OSError):
            os.kill(target, signum)


def _descendants() -> list[int]:
    """Our children's trees, children first (a subreaper's orphans are its children)."""
    out: list[int] = []
    todo = _children()
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
                todo.extend(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


def _kill_descendants(in_pidns: bool) -> None:
    if in_pidns:
        return  # the init's exit makes the kernel SIGKILL the whole namespace
    for _ in range(400):  # bounded: a fork bomb outrunning us is still cut off at exit
        found = _descendants()
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        # Reap what died, so the next look sees the orphans that reparented to us.
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        select.select([], [], [], 0.002)


def main() -> None:
    daemon = int(sys.argv[1])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    # The daemon SIGKILLed: we are SIGKILLed too, and each init's own parent-death signal
    # takes its call down. Set before the check below, so a daemon that died in between is
    # still seen.
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if os.getppid() != daemon:
        sys.exit(0)
    sock = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    nested = _enter_own_pidns(sock)
    Spawner(sock, nested).run()


def _enter_own_pidns(sock: socket.socket) -> bool:
    """Where PID namespaces are ours to make (root), the spawner runs as pid 1 of one of
    its own, and every call's namespace is nested in it: when the spawner dies, however
    it dies (the daemon SIGKILLed, or it alone), the kernel kills its whole namespace,
    nested ones included. This process forks that spawner, waits for it and exits with it
    (it keeps no copy of the socket, so the daemon sees EOF when the spawner goes)."""
    forced = os.environ.get("STDIO_EXECUTOR_CONTAINMENT", "")
    if not _linux or forced in ("subreaper", "group", "userns"):
        return False
    if _libc.unshare(CLONE_NEWPID) != 0:
        return False  # not privileged: each call gets a user + PID namespace instead
    outer = os.getpid()
    pid = os.fork()
    if pid == 0:
        # Tied to the outer process, itself tied to the daemon.
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if _ppid_outside() != outer:
            os._exit(0)
        return True
    sock.close()
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


if __name__ == "__main__":
    main()
