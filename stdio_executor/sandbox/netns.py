"""The session's network namespace: created once, joined by sandboxed calls that can.

Owns: starting the short-lived *holder* process that creates a user namespace and a network
namespace holding only a loopback interface, brings ``lo`` up, and (when a proxy is wanted)
opens a listening TCP socket on that namespace's 127.0.0.1 and hands it to the daemon; then
keeping the namespaces alive through file descriptors after the holder exits.
Must not: run anything of the tool's, or keep a process alive for the session (the fds to
``/proc/PID/ns/*`` keep the namespaces; no extra process can be left behind).

Why one namespace for the session and not one per call: creating a network namespace runs
every pernet subsystem's set-up, and its teardown as much again in a kworker: CPU that
parallel calls serialise on (bench/NOTES.md); joining one with ``setns`` costs microseconds.
A call whose process already sits in a user namespace of its own (the spawner gives one to
each call when the daemon is not root) may not join it, and makes its own (``kernel.enter``).

Why the holder hands over a *socket*: the namespace's loopback is not the host's, so a proxy
listening on the host's 127.0.0.1 is out of reach from inside; a socket created inside the
namespace is reachable there, and the daemon can ``accept`` on it from outside and connect
onward through the host's network.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys

import msgspec

__all__ = ["NetNamespace", "create"]

_HOLDER = r"""
import ctypes, fcntl, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
chan = socket.socket(fileno=int(sys.argv[2]))
uid, gid = os.getuid(), os.getgid()
if libc.unshare(0x10000000 | 0x40000000) != 0:
    chan.send(b"unshare: " + os.strerror(ctypes.get_errno()).encode()); sys.exit(1)
def put(name, text):
    with open("/proc/self/" + name, "w") as f:
        f.write(text)
put("setgroups", "deny")
put("uid_map", "%d %d 1" % (uid, uid))
put("gid_map", "%d %d 1" % (gid, gid))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
# SIOCSIFFLAGS: IFF_UP | IFF_LOOPBACK | IFF_RUNNING
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", 0x1 | 0x8 | 0x40))
s.close()
fds = []
if sys.argv[1] == "listen":
    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.bind(("127.0.0.1", 0))
    lst.listen(512)
    fds.append(lst.fileno())
socket.send_fds(chan, [b"ok"], fds)
chan.recv(1)  # the daemon has opened /proc/PID/ns/*: the namespaces outlive us
"""


class NetNamespace(msgspec.Struct, frozen=True):
    userns_fd: int
    netns_fd: int
    listener: socket.socket | None  # listening on 127.0.0.1 inside the namespace

    @property
    def proxy_port(self) -> int | None:
        return self.listener.getsockname()[1] if self.listener is not None else None

    def close(self) -> None:
        for fd in (self.userns_fd, self.netns_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.listener is not None:
            self.listener.close()


def create(*, listen: bool, timeout: float = 10.0) -> NetNamespace:
    """Start the holder, take its namespaces (and listener), let it exit. Raises OSError
    with the holder's reason when the system refuses."""
    ours, theirs = socket.socketpair()
    try:
        holder = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _HOLDER,
                "listen" if listen else "none",
                str(theirs.fileno()),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            close_fds=True,
        )
    finally:
        theirs.close()
    try:
        ours.settimeout(timeout)
        msg, fds, _, _ = socket.recv_fds(ours, 256, 1)
        if msg != b"ok":
            raise OSError(f"the network namespace could not be created: {msg.decode()!r}")
        base = f"/proc/{holder.pid}/ns/"
        userns = os.open(base + "user", os.O_RDONLY | os.O_CLOEXEC)
        netns = os.open(base + "net", os.O_RDONLY | os.O_CLOEXEC)
        listener = socket.socket(fileno=fds[0]) if fds else None
        if listener is not None:
            os.set_inheritable(listener.fileno(), False)
        return NetNamespace(userns, netns, listener)
    finally:
        ours.close()  # the holder's recv returns: it exits
        try:
            holder.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - defensive
            holder.kill()
            holder.wait()
