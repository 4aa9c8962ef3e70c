"""The spawner: the one process that starts, signals and outlives nothing of the daemon's.

Run by ``processes`` as ``python -I -S _spawner.py DAEMON_PID`` with a ``SOCK_SEQPACKET``
socket on fd 0; it imports nothing of the package until a sandbox plan needs it.

Owns: creating every child of the daemon (Bash, hooks, MCP servers, ripgrep) as the pid 1
("init") of a PID namespace of its own where the kernel allows it, else as a child
subreaper; signalling a call only while it is its own unreaped child (so a recycled pid or
process group is never hit: the root cause of the old reaper's losses); reporting each
call's exit status; killing everything when the daemon is gone (socket EOF, or the parent-
death signal when the daemon is SIGKILLed).
Must not: decide when anything stops (the daemon sends ``signal`` requests), read a
child's output, or run Python in a command's process except the sandbox's ``pre_exec``.

Per call there are two processes: the *init* (a fork of this one, created by ``clone(2)``
as pid 1 of the call's PID namespace, its parent-death signal tied to the spawner), which
changes directory, runs the sandbox's ``pre_exec`` and starts the *command* with
``posix_spawn`` (vfork-based: forking even this small interpreter costs several times
more than spawning bash). The init forwards SIGTERM/SIGINT/SIGHUP to every
process of the call (``kill(-1)`` inside the namespace reaches all but itself, including
anything that called ``setsid``), and when the command exits it exits too: the kernel then
SIGKILLs whatever is left in the namespace. Without namespaces (unprivileged, user
namespaces off; not Linux) the init is a child subreaper instead: orphans of the call
reparent to it, and it SIGKILLs every descendant before it exits.

Messages are pickled tuples (the socket is a private socketpair with the daemon):
daemon -> spawner: ``("path", sys_path)``, ``("spawn", id, argv, cwd, env, flags, pre_exec,
args)`` with three fds, ``("signal", id, signum)``;
spawner -> daemon: ``("started", id, init_pid, command_pid, mode)``,
``("failed", id, errno, message)``,
``("status", id, wait_status)`` (from the init: the command's own status),
``("exited", id, wait_status)`` (the init is reaped: nothing of the call is left).
"""

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


def _send(sock: socket.socket, message: tuple[Any, ...]) -> None:
    # The daemon gone: the EOF on our next read ends everything.
    with contextlib.suppress(OSError):
        sock.send(pickle.dumps(message))


class Spawner:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pid = os.getpid()
        self.calls: dict[int, int] = {}  # init pid -> call id
        # report pipe -> (call id, init pid, what it said so far): inits still starting
        self.pending: dict[int, tuple[int, int, bytearray]] = {}
        self.mode = ""  # "pidns", "userns+pidns" or "subreaper"/"group", found on first use

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
    ) -> None:
        try:
            flags = self._base_flags() | extra_flags
            err_r, err_w = os.pipe()
            go_r, go_w = os.pipe() if flags & CLONE_NEWUSER else (-1, -1)
            pid = _clone(flags)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            _send(self.sock, ("failed", call_id, exc.errno or 1, exc.strerror or str(exc)))
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
                self._init(call_id, argv, cwd, env, flags, pre_exec, args, fds, err_w)
            finally:
                os._exit(127)
        os.close(err_w)
        for fd in fds:
            os.close(fd)
        self.calls[pid] = call_id
        os.set_blocking(err_r, False)
        if go_r >= 0:
            os.close(go_r)
            try:
                _map_ids(pid)
            except OSError as exc:
                os.kill(pid, signal.SIGKILL)
                os.close(go_w)
                os.close(err_r)
                _send(self.sock, ("failed", call_id, exc.errno or 1, f"user namespace: {exc}"))
                return
            os.write(go_w, b"x")
            os.close(go_w)
        # Not waited for here: the init's set-up (copy-on-write faults, the sandbox's system
        # calls, the command's exec) takes milliseconds, and the next call's clone need not
        # wait behind it. ``_check`` reports the call once the pipe reaches EOF.
        self.pending[err_r] = (call_id, pid, bytearray())

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
            _send(self.sock, ("failed", call_id, int(errno or 1), message))
        else:
            _send(self.sock, ("started", call_id, pid, _command_pid(pid), self.mode))

    def _init(
        self,
        call_id: int,
        argv: list[str],
        cwd: str | None,
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
            if _linux and _ppid_outside() != self.pid:
                return  # the spawner died before the line above: nobody wants this call
            os.setsid()
            if not in_pidns:
                _prctl(PR_SET_CHILD_SUBREAPER, 1)
            if cwd:
                os.chdir(cwd)
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
        for pid, cid in self.calls.items():
            if cid == call_id:
                # Our unreaped child: the pid cannot have been recycled.
                with contextlib.suppress(OSError):
                    os.kill(pid, signum)
                return

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            call_id = self.calls.pop(pid, None)
            for err_r, (_, init, _) in list(self.pending.items()):
                if init == pid:  # "started" (or "failed") before "exited"
                    self._check(err_r, block=True)
            if call_id is not None:
                _send(self.sock, ("exited", call_id, status))

    def sweep(self) -> None:
        """SIGKILL children that are not an init of ours: descendants of a SIGKILLed init
        that reparented to us (we are a subreaper) when no namespace held them."""
        for pid in _children():
            if pid not in self.calls:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def shutdown(self) -> None:
        """The daemon is gone: every call goes, then we do."""
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
                watched = [self.sock.fileno(), wake_r, *self.pending]
                ready, _, _ = select.select(watched, [], [], _SWEEP_S)
            except InterruptedError:
                continue
            if wake_r in ready:
                with contextlib.suppress(OSError):
                    os.read(wake_r, 4096)
            for err_r in ready:
                if err_r in self.pending:
                    self._check(err_r)
            self.reap()
            if self.mode in ("subreaper", "group"):
                self.sweep()
            if self.sock.fileno() in ready:
                self.serve()

    def serve(self) -> None:
        while True:
            try:
                data, fds = _receive(self.sock)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.shutdown()
            if not data:
                self.shutdown()
            message = pickle.loads(data)
            kind = message[0]
            if kind == "spawn":
                _, call_id, argv, cwd, env, flags, pre_exec, args = message
                self.spawn(call_id, argv, cwd, env, flags, pre_exec, args, fds)
            elif kind == "signal":
                self.send_signal(message[1], message[2])
            elif kind == "path":
                sys.path[:] = message[1]


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
    data, ancdata, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(3 * 4), flags)
    fds = array.array("i")
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    return data, list(fds)


def _report(err_w: int, exc: BaseException) -> None:
    errno = getattr(exc, "errno", None) or 1
    if isinstance(exc, OSError) and exc.filename is not None:
        text = f"{exc.strerror}: {exc.filename!r}"
    elif isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    with contextlib.suppress(OSError):
        os.write(err_w, f"{errno}:{text}".encode())


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
    Spawner(sock).run()


if __name__ == "__main__":
    main()
