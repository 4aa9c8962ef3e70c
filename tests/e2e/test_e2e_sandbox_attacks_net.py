"""Adversarial spellings against the sandbox's network, process and routing promises, through
the real daemon: servers only on the host's 127.0.0.1 (started here), real signals, the
daemon's own /proc entries. Companion of ``test_e2e_sandbox_attacks.py`` (files)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use

from stdio_executor.sandbox.kernel import probe

_SUPPORT = probe()
pytestmark = pytest.mark.skipif(
    not (_SUPPORT.landlock_abi and _SUPPORT.user_namespaces),
    reason=f"no sandbox on this system: {_SUPPORT.problem}",
)
PY = shlex.quote(sys.executable)
SECRET = "hunter2-environ"


def bash(d: DaemonProcess, tool_use_id: str, command: str, **extra: Any) -> tuple[str, bool]:
    d.send(tool_use(tool_use_id, {"command": command, **extra}))
    result = d.result(tool_use_id)
    assert isinstance(result.content, str)
    return result.content, result.is_error


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's 127.0.0.1 that records what reaches it, and answers like
    a tiny HTTP server."""
    hits: list[bytes] = []
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    hits.append(conn.recv(1000))
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nhi\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], hits
    finally:
        stop.set()
        thread.join(5)
        srv.close()


@pytest.fixture
def udp_server() -> Iterator[tuple[int, list[bytes]]]:
    hits: list[bytes] = []
    srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    srv.bind(("127.0.0.1", 0))
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                hits.append(srv.recv(1000))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], hits
    finally:
        stop.set()
        thread.join(5)
        srv.close()


# ------------------------------------------------------------------------ network


def test_raw_spellings_reach_no_host_service(
    tmp_path: Path,
    tcp_server: tuple[int, list[bytes]],
    udp_server: tuple[int, list[bytes]],
) -> None:
    tport, thits = tcp_server
    uport, uhits = udp_server
    abstract = b"\0stdio-executor-redsandbox-%d" % os.getpid()
    unix_srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix_srv.bind(abstract)
    unix_srv.listen(1)
    unix_srv.settimeout(0.1)
    on_disk = tmp_path.parent / f"redsandbox-{os.getpid()}.sock"
    disk_srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    disk_srv.bind(str(on_disk))
    disk_srv.listen(1)
    disk_srv.settimeout(0.1)
    script = (
        "import socket\n"
        "def tryit(name, fam, kind, addr):\n"
        "    try:\n"
        "        s = socket.socket(fam, kind); s.settimeout(2); s.connect(addr)\n"
        "        s.send(b'GET /leak HTTP/1.0\\r\\n\\r\\n'); print('REACHED', name)\n"
        "    except OSError as e:\n"
        "        print('blocked', name, e)\n"
        f"tryit('udp', socket.AF_INET, socket.SOCK_DGRAM, ('127.0.0.1', {uport}))\n"
        f"tryit('abstract', socket.AF_UNIX, socket.SOCK_STREAM, {abstract!r})\n"
        f"tryit('disk', socket.AF_UNIX, socket.SOCK_STREAM, {str(on_disk)!r})\n"
        f"tryit('v6', socket.AF_INET6, socket.SOCK_STREAM, ('::ffff:127.0.0.1', {tport}))\n"
    )
    (tmp_path / "probe.py").write_text(script)
    try:
        for allow_unix in (False, True):
            config = json.dumps(
                {
                    "permissions": {"defaultMode": "bypassPermissions"},
                    "sandbox": {"network": {"allowAllUnixSockets": allow_unix}},
                }
            )
            with run_daemon(tmp_path, "--settings", config) as d:
                out, _ = bash(
                    d,
                    "n",
                    f"echo hi > /dev/tcp/127.0.0.1/{tport}; echo hi > /dev/udp/127.0.0.1/{uport}; "
                    f"curl -s -m 2 http://127.0.0.1:{tport}/curl; "
                    f"curl -s -m 2 http://[::1]:{tport}/; "
                    f"{PY} probe.py; nslookup example.com 127.0.0.53 2>&1 | head -2; true",
                )
            # Abstract sockets are per network namespace; path-named ones are refused by
            # seccomp unless allowAllUnixSockets lifts that (then they are reachable: the
            # documented meaning of the setting).
            assert "REACHED abstract" not in out, out
            with pytest.raises(OSError):
                unix_srv.accept()
            if not allow_unix:
                assert "REACHED disk" not in out, out
                with pytest.raises(OSError):
                    disk_srv.accept()
    finally:
        unix_srv.close()
        disk_srv.close()
        on_disk.unlink()
    assert thits == [] and uhits == []


_PROXY_TRICKS = [
    "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "CONNECT 127.1:{port} HTTP/1.1\r\n\r\n",
    "CONNECT 2130706433:{port} HTTP/1.1\r\n\r\n",
    "CONNECT 0x7f000001:{port} HTTP/1.1\r\n\r\n",
    "CONNECT [::ffff:127.0.0.1]:{port} HTTP/1.1\r\n\r\n",
    "CONNECT evil-localhost:{port} HTTP/1.1\r\n\r\n",
    "CONNECT localhost.127.0.0.1.nip.io:{port} HTTP/1.1\r\n\r\n",
    "CONNECT localhost:{port}@127.0.0.1:{port} HTTP/1.1\r\n\r\n",
    "CONNECT 127.0.0.1:{port}#localhost HTTP/1.1\r\n\r\n",
    "GET http://127.0.0.1:{port}/host-header HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n",
    "GET http://127.0.0.1:{port}\\@localhost/ HTTP/1.1\r\n\r\n",
    "GET /origin-form HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n",
    "GET HTTP://127.0.0.1:{port}/upper HTTP/1.1\r\n\r\n",
]


def test_the_proxy_refuses_every_spelling_of_a_host_not_allowed(
    tmp_path: Path, tcp_server: tuple[int, list[bytes]]
) -> None:
    """Only ``localhost`` is allowed; the server listens on 127.0.0.1, which is the same
    socket by another name: every trick that would reach it without saying ``localhost``
    (and having the proxy connect to ``localhost``) must fail."""
    port, hits = tcp_server
    script = (
        "import json, os, socket, sys, urllib.parse\n"
        "proxy = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])\n"
        "for req in json.load(open('tricks.json')):\n"
        "    s = socket.create_connection((proxy.hostname, proxy.port), timeout=5)\n"
        "    s.sendall(req.encode('latin-1'))\n"
        "    try:\n"
        "        head = s.recv(200).split(b'\\r\\n')[0]\n"
        "    except OSError as e:\n"
        "        head = repr(e).encode()\n"
        "    print('REPLY', repr(req.split()[1]), head)\n"
    )
    (tmp_path / "tricks.py").write_text(script)
    (tmp_path / "tricks.json").write_text(json.dumps([t.format(port=port) for t in _PROXY_TRICKS]))
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"network": {"allowedDomains": ["localhost"]}},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        out, _ = bash(d, "p", f"{PY} tricks.py")
        ok, _ = bash(d, "ok", f"curl -s -m 5 http://localhost:{port}/allowed")
    assert out.count("REPLY") == len(_PROXY_TRICKS), out
    assert "200" not in out.replace(str(port), ""), out
    assert "hi" in ok
    assert [h.split(b" ")[1] for h in hits] == [b"/allowed"]


def _names_of_loopback() -> list[str]:
    """Names other than ``localhost`` this machine resolves to a loopback address (its
    host name usually is, in /etc/hosts): what a rebinding domain would answer."""
    names = []
    for name in (socket.gethostname(), "localhost.localdomain", "ip6-localhost"):
        with contextlib.suppress(OSError):
            if any(i[4][0] in ("127.0.0.1", "::1") for i in socket.getaddrinfo(name, 80)):
                names.append(name)
    return names


def test_a_wildcard_entry_does_not_lead_to_this_machine(
    tmp_path: Path, tcp_server: tuple[int, list[bytes]]
) -> None:
    """A name let through by a wildcard that resolves to 127.0.0.1 (a subdomain whose DNS
    the model's author controls) would reach the host's own services through the proxy,
    which runs outside the sandbox's network. Refused; an entry spelling the name is the
    user's choice and passes."""
    port, hits = tcp_server
    entry = "*"
    names = _names_of_loopback()
    if not names:
        pytest.skip("no name but localhost resolves to loopback on this machine")
    config = {
        "permissions": {"defaultMode": "bypassPermissions"},
        "sandbox": {"network": {"allowedDomains": [entry]}},
    }
    with run_daemon(tmp_path, "--settings", json.dumps(config)) as d:
        for i, name in enumerate(names):
            out, _ = bash(d, f"w{i}", f"curl -s -m 5 -w ' %{{http_code}}' http://{name}:{port}/x")
            assert out.rstrip().endswith("403"), (name, out)
    assert hits == []
    exact = {
        "permissions": {"defaultMode": "bypassPermissions"},
        "sandbox": {"network": {"allowedDomains": [names[0]]}},
    }
    with run_daemon(tmp_path, "--settings", json.dumps(exact)) as d:
        out, _ = bash(d, "e", f"curl -s -m 5 http://{names[0]}:{port}/exact")
    assert "hi" in out
    assert [h.split(b" ")[1] for h in hits] == [b"/exact"]


# ---------------------------------------------------------------- processes


def test_no_signal_ptrace_or_proc_peek_reaches_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDSANDBOX_TOKEN", SECRET)
    with run_daemon(tmp_path) as d:
        pid = d.proc.pid
        out, _ = bash(
            d,
            "k",
            f"cat /proc/{pid}/environ; tr '\\0' '\\n' < /proc/{pid}/environ; "
            f"ls -l /proc/{pid}/fd/ /proc/{pid}/cwd/ /proc/{pid}/root/; "
            f"cat /proc/{pid}/fd/0 </dev/null & sleep 0.2; kill $! 2>/dev/null; "
            f"gdb -p {pid} -batch -ex 'call (int)system(\"true\")' 2>&1 | tail -1; "
            f"kill -STOP {pid}; kill -9 {pid}; kill -9 $PPID; true",
        )
        assert SECRET not in out
        # `kill -9 -1` kills everything the call may signal: only its own processes.
        bash(d, "all", "kill -9 -1; true")
        after, is_error = bash(d, "alive", "echo still-here")
    assert "still-here" in after and not is_error


def test_a_sandboxed_call_inherits_no_socket_or_daemon_pipe(tmp_path: Path) -> None:
    """A leaked fd of the daemon's (its stdout, the spawner's control socket, the proxy's)
    would hand a sandboxed command a way out that no rule checks."""
    with run_daemon(tmp_path) as d:
        out, _ = bash(
            d,
            "fds",
            'for f in /proc/self/fd/*; do echo "$f -> $(readlink $f)"; done',
        )
    leaked = [line for line in out.splitlines() if "socket:" in line or "anon_inode" in line]
    assert leaked == [], out


# ---------------------------------------------------------------- routing


@pytest.mark.parametrize(
    "command",
    [
        "touch ok.txt; echo escaped > {outside}/a.txt",
        "touch ok.txt && {py} -c \"open('{outside}/a.txt','w').write('escaped')\"",
        "echo escaped > {outside}/a.txt | touch ok.txt",
        "touch $(echo escaped > {outside}/a.txt; echo ok.txt)",
        "touch ok.txt `echo escaped > {outside}/a.txt`",
    ],
)
def test_an_excluded_command_does_not_carry_its_neighbours_outside(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, command: str
) -> None:
    """``excludedCommands: ["touch"]``: a line that also runs something else (after ``;``,
    ``&&``, in a pipe, in a substitution) stays in the sandbox as a whole (Claude Code
    issues #40831 and #81157 report the opposite as an escape)."""
    outside = tmp_path_factory.mktemp("outside")
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"excludedCommands": ["touch"]},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        bash(d, "x", command.format(outside=outside, py=PY) + "; true")
        bash(d, "y", f"touch {outside}/alone.txt")
    assert not (outside / "a.txt").exists()
    assert (outside / "alone.txt").exists()  # alone, the excluded command runs outside


@pytest.mark.parametrize(
    "flag", [True, "true", "yes", 1, "1", "TRUE", {"v": True}, [True]], ids=repr
)
def test_no_spelling_of_dangerously_disable_sandbox_skips_its_gate(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, flag: object
) -> None:
    """Whatever spelling the input coercion accepts as true goes through the same gate as
    ``true``: with ``allowUnsandboxedCommands: false`` none of them leaves the sandbox, even
    in ``bypassPermissions``."""
    outside = tmp_path_factory.mktemp("outside")
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"allowUnsandboxedCommands": False},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        bash(d, "u", f"touch {outside}/escaped.txt; true", dangerouslyDisableSandbox=flag)
    assert not (outside / "escaped.txt").exists()
