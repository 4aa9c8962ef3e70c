"""Bash in the OS sandbox, through the real daemon: real processes, files and sockets.

Each test starts the daemon as a host would, runs commands that try to step outside the
sandbox, and checks the file system or a server on 127.0.0.1 for what actually happened (the
command's own output is not trusted as proof). Skipped where this kernel offers no Landlock
or user namespaces; "unsupported" is simulated through ``STDIO_EXECUTOR_SANDBOX_DISABLE``,
which turns a mechanism off in the daemon as if the kernel lacked it.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import REPO_ROOT, DaemonProcess, run_daemon, tool_use, wait_until

from stdio_executor.protocol import PermissionRequest, Ready
from stdio_executor.sandbox.kernel import probe

_SUPPORT = probe()
pytestmark = pytest.mark.skipif(
    not (_SUPPORT.landlock_abi and _SUPPORT.user_namespaces),
    reason=f"no sandbox on this system: {_SUPPORT.problem}",
)
PY = shlex.quote(sys.executable)


def settings(**sandbox: Any) -> str:
    return json.dumps({"sandbox": sandbox})


def bash(d: DaemonProcess, tool_use_id: str, command: str, **extra: Any) -> tuple[str, bool]:
    d.send(tool_use(tool_use_id, {"command": command, **extra}))
    result = d.result(tool_use_id)
    assert isinstance(result.content, str)
    return result.content, result.is_error


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the workspace that the test itself can write."""
    return tmp_path_factory.mktemp("outside")


class _Hello(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b"hello from 127.0.0.1\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[int, list[str]]]:
    """An HTTP server on the host's 127.0.0.1 (never any other address)."""
    hits: list[str] = []
    handler = type("Hello", (_Hello,), {"hits": hits})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], hits
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


# --------------------------------------------------------------------------- files


def test_writes_land_only_in_the_workspace_and_the_session_temp_dir(
    tmp_path: Path, outside: Path
) -> None:
    with run_daemon(tmp_path) as d:
        ready = d.ready()
        assert ready.sandbox is not None and ready.sandbox.enabled
        assert ready.sandbox.mechanism == "landlock+namespaces"
        out, _is_error = bash(
            d,
            "w",
            f'echo in > inside.txt; echo tmp > "$TMPDIR/t.txt" && cat "$TMPDIR/t.txt"; '
            f"echo out > {outside}/escaped.txt; echo home > ~/.stdio-executor-escape; "
            f"mkdir {outside}/newdir; rm -f {outside}/keep.txt; true",
        )
    assert (tmp_path / "inside.txt").read_text() == "in\n"
    assert "tmp" in out
    assert not (outside / "escaped.txt").exists()
    assert not (outside / "newdir").exists()
    assert not Path("~/.stdio-executor-escape").expanduser().exists()
    assert "Permission denied" in out


def test_a_removal_outside_the_workspace_fails(tmp_path: Path, outside: Path) -> None:
    keep = outside / "keep.txt"
    keep.write_text("precious\n")
    with run_daemon(tmp_path) as d:
        _out, is_error = bash(d, "rm", f"rm -f {keep}")
    assert is_error and keep.read_text() == "precious\n"


def test_control_files_stay_read_only_under_a_writable_workspace(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".mcp.json").write_text("{}\n")
    with run_daemon(tmp_path) as d:
        _out, _ = bash(
            d,
            "c",
            "echo '[core] fsmonitor = evil' >> .git/config; "
            "echo evil > .git/hooks/pre-commit; "
            "echo '{}' > .claude/settings.local.json; "
            "echo '{\"mcpServers\":{}}' > .mcp.json; "
            "mv .git/config moved; "
            "echo ok > src.txt && cat src.txt",
        )
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    assert not (tmp_path / ".claude" / "settings.local.json").exists()
    assert (tmp_path / ".mcp.json").read_text() == "{}\n"
    # `mv` across the read-only view falls back to copy-and-remove: the copy may appear,
    # the original stays (checked above).
    assert (tmp_path / "src.txt").read_text() == "ok\n"  # the rest of the workspace is writable


def test_a_read_deny_rule_makes_the_file_unreadable_from_bash(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("API_KEY=hunter2\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "db.txt").write_text("password=hunter2\n")
    os.link(tmp_path / ".env", tmp_path / "innocent.txt")  # another name for the same file
    denied = json.dumps(
        {
            "permissions": {"deny": ["Read(./.env)"], "defaultMode": "bypassPermissions"},
            "sandbox": {"filesystem": {"denyRead": ["./secrets"]}},
        }
    )
    # From a script file: the permission layer denies `cat .env` spelled out on the line
    # (and a file named at run time asks); this is the kernel's test.
    (tmp_path / "kernel.sh").write_text(
        "cat .env innocent.txt secrets/db.txt; ls secrets; "
        f"{PY} -c \"print(open('.env').read())\"; "
        "cat /proc/$PPID/root$PWD/.env; umount .env; cat .env; "
        f"{PY} -c \"open('.env', 'a')\"; "
        "echo x > .env; echo done\n"
    )
    with run_daemon(tmp_path, "--settings", denied) as d:
        out, _ = bash(d, "r", "bash kernel.sh")
    assert "hunter2" not in out
    assert "done" in out
    assert (tmp_path / ".env").read_text() == "API_KEY=hunter2\n"  # nor was it overwritten


# --------------------------------------------------------------------------- network


def test_the_network_is_closed_by_default(tmp_path: Path, server: tuple[int, list[str]]) -> None:
    port, hits = server
    probe_script = (
        "import socket\n"
        "for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):\n"
        "    s = socket.socket(socket.AF_INET, kind)\n"
        "    s.settimeout(2)\n"
        "    try:\n"
        f"        s.connect(('127.0.0.1', {port})); s.send(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
        "        print('sent', kind, s.recv(100))\n"
        "    except OSError as e:\n"
        "        print('refused', kind, e)\n"
        "try:\n"
        "    socket.socket(socket.AF_UNIX)\n"
        "    print('unix socket made')\n"
        "except OSError as e:\n"
        "    print('unix refused', e)\n"
    )
    (tmp_path / "probe.py").write_text(probe_script)
    with run_daemon(tmp_path) as d:
        assert d.ready().sandbox is not None
        assert d.ready().sandbox.network == "blocked"  # type: ignore[union-attr]
        out, _ = bash(
            d, "n", f"{PY} probe.py; {PY} -c 'import socket; print(socket.if_nameindex())'"
        )
    assert hits == []
    assert "sent" not in out and "unix refused" in out
    assert "'lo'" in out and "eth" not in out


def test_io_uring_cannot_be_set_up_to_make_sockets_seccomp_would_not_see(
    tmp_path: Path,
) -> None:
    # IORING_OP_SOCKET creates a socket without the socket system call, so the AF_UNIX
    # filter would never see it: io_uring_setup itself is refused.
    (tmp_path / "uring.py").write_text(
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "params = ctypes.create_string_buffer(120)\n"
        "fd = libc.syscall(425, 4, params)\n"
        "print('io_uring fd' if fd >= 0 else f'io_uring refused errno {ctypes.get_errno()}')\n"
    )
    outside_sandbox = subprocess.run(
        [sys.executable, "uring.py"], cwd=tmp_path, capture_output=True, text=True, timeout=30
    ).stdout
    with run_daemon(tmp_path) as d:
        out, _ = bash(d, "u", f"{PY} uring.py")
    assert "io_uring refused errno 1" in out, out
    # The test means something only where io_uring works outside the sandbox.
    if "io_uring fd" not in outside_sandbox:
        pytest.skip(f"io_uring is not available on this kernel: {outside_sandbox.strip()}")


def _fetch_through_proxy(url: str) -> str:
    return (
        "import os, urllib.request\n"
        "try:\n"
        f"    print('BODY', urllib.request.urlopen({url!r}, timeout=5).read())\n"
        "except Exception as e:\n"
        "    print('FAILED', e)\n"
    )


@pytest.mark.parametrize("namespace", ["session", "own"])
def test_an_allowed_domain_passes_through_the_proxy_and_no_other(
    tmp_path: Path,
    server: tuple[int, list[str]],
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the session's network namespace (joined) and through one the call makes
    itself (what a call does when it may not join: a non-root daemon's spawner)."""
    if namespace == "own":
        monkeypatch.setenv("STDIO_EXECUTOR_SANDBOX_DISABLE", "join")
    port, hits = server
    (tmp_path / "allowed.py").write_text(_fetch_through_proxy(f"http://localhost:{port}/ok"))
    (tmp_path / "other.py").write_text(_fetch_through_proxy(f"http://127.0.0.1:{port}/no"))
    connect = (
        "import os, socket, urllib.parse\n"
        "proxy = urllib.parse.urlsplit(os.environ['HTTPS_PROXY'])\n"
        "s = socket.create_connection((proxy.hostname, proxy.port), timeout=5)\n"
        f"s.sendall(b'CONNECT localhost:{port} HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n"
        "head = s.recv(1000)\n"
        "print('CONNECT', head.split(b'\\r\\n')[0])\n"
        "s.sendall(b'GET /tunnel HTTP/1.0\\r\\n\\r\\n')\n"
        "print('TUNNEL', s.recv(1000).split(b'\\r\\n')[0])\n"
    )
    (tmp_path / "connect.py").write_text(connect)
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"network": {"allowedDomains": ["localhost"]}},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        info = d.ready().sandbox
        assert info is not None and info.network == "proxy"
        assert info.allowed_domains == ["localhost"]
        allowed, _ = bash(d, "a", f"{PY} allowed.py")
        other, _ = bash(d, "o", f"{PY} other.py")
        tunnel, _ = bash(d, "t", f"{PY} connect.py")
        _direct, _ = bash(
            d, "d", f"curl -sS -m 3 --noproxy '*' http://127.0.0.1:{port}/direct; true"
        )
    assert "hello from 127.0.0.1" in allowed
    assert "FAILED" in other and "403" in other
    assert "200" in tunnel.split("TUNNEL")[0] and "TUNNEL b'HTTP/1.0 200" in tunnel
    assert hits == ["/ok", "/tunnel"]  # nothing else reached the server


# ------------------------------------------------------------------- outside the sandbox


def test_excluded_commands_run_outside_the_sandbox(tmp_path: Path, outside: Path) -> None:
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"excludedCommands": ["touch"]},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        bash(d, "x", f"touch {outside}/excluded.txt")
        bash(d, "y", f"echo no > {outside}/sandboxed.txt")
    assert (outside / "excluded.txt").exists()
    assert not (outside / "sandboxed.txt").exists()


@pytest.mark.parametrize("flag", [True, "true"])  # Claude Code accepts the string too
def test_dangerously_disable_sandbox_runs_outside_only_after_an_ask(
    tmp_path: Path, outside: Path, flag: object
) -> None:
    with run_daemon(
        tmp_path, "--settings", settings(enabled=True), "--permission-mode", "default"
    ) as d:
        d.send(
            tool_use(
                "u",
                {"command": f"touch {outside}/unsandboxed.txt", "dangerouslyDisableSandbox": flag},
            )
        )
        request = d.wait_for(lambda e: isinstance(e, PermissionRequest) and e.tool_use_id == "u")
        assert isinstance(request, PermissionRequest)
        assert not (outside / "unsandboxed.txt").exists()
        d.send(
            {"type": "permission_response", "request_id": request.request_id, "decision": "allow"}
        )
        assert not d.result("u").is_error
    assert (outside / "unsandboxed.txt").exists()


def test_dangerously_disable_sandbox_is_refused_when_unsandboxed_commands_are_not_allowed(
    tmp_path: Path, outside: Path
) -> None:
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "sandbox": {"allowUnsandboxedCommands": False},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        out, is_error = bash(d, "u", f"touch {outside}/nope.txt", dangerouslyDisableSandbox=True)
    assert is_error and "allowUnsandboxedCommands" in out
    assert not (outside / "nope.txt").exists()


def test_auto_allow_runs_sandboxed_bash_without_asking_when_settings_enable_it(
    tmp_path: Path,
) -> None:
    config = json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}, "sandbox": {"enabled": True}})
    with run_daemon(tmp_path, "--settings", config, "--permission-mode", "default") as d:
        _out, is_error = bash(d, "w", "echo made > made.txt")
        _denied, denied_error = bash(d, "rm", "rm made.txt")
        assert not any(isinstance(e, PermissionRequest) for e in d.events)
    assert not is_error and (tmp_path / "made.txt").read_text() == "made\n"
    assert denied_error  # deny rules still hold


def test_an_untrusted_workspace_can_tighten_the_sandbox_but_not_loosen_it(
    tmp_path: Path, outside: Path
) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "sandbox": {
                    "enabled": True,
                    "excludedCommands": ["touch"],
                    "filesystem": {"allowWrite": [str(outside)]},
                }
            }
        )
    )
    with run_daemon(tmp_path, "--permission-mode", "default") as d:
        info = d.ready().sandbox
        assert info is not None and info.enabled
        assert any("excludedCommands" in h for h in info.held_back)
        assert any("allowWrite" in h for h in info.held_back)
        d.send(tool_use("t", f"touch {outside}/x"))
        # enabled: true from an untrusted file does not auto-allow: the mode still asks.
        request = d.wait_for(lambda e: isinstance(e, PermissionRequest) and e.tool_use_id == "t")
        assert isinstance(request, PermissionRequest)
        d.send(
            {"type": "permission_response", "request_id": request.request_id, "decision": "allow"}
        )
        assert d.result("t").is_error  # ran sandboxed: excludedCommands did not count
    assert not (outside / "x").exists()


# ------------------------------------------------------------------------ unsupported


def _start(tmp_path: Path, *args: str, disable: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, STDIO_EXECUTOR_SANDBOX_DISABLE=disable)
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "stdio_executor", *args],
        cwd=tmp_path,
        env=env,
        input=b"",
        capture_output=True,
        timeout=60,
    )


def test_sandbox_on_fails_start_up_where_the_kernel_cannot_sandbox(tmp_path: Path) -> None:
    done = _start(tmp_path, "--sandbox", "on", disable="landlock,bwrap")
    assert done.returncode == 2
    assert done.stdout == b""  # no ready line: nothing runs unprotected
    assert b"sandbox is required but not available: Landlock is disabled" in done.stderr
    no_userns = _start(tmp_path, "--sandbox", "on", disable="userns,bwrap")
    assert no_userns.returncode == 2 and b"user namespaces are disabled" in no_userns.stderr


def test_settings_that_require_the_sandbox_fail_start_up_where_it_is_missing(
    tmp_path: Path,
) -> None:
    done = _start(
        tmp_path,
        "--settings",
        settings(enabled=True, failIfUnavailable=True),
        disable="landlock,bwrap",
    )
    assert done.returncode == 2 and b"sandbox is required" in done.stderr


def test_auto_says_in_ready_that_nothing_is_sandboxed_where_unsupported(tmp_path: Path) -> None:
    done = _start(tmp_path, disable="landlock,bwrap")
    assert done.returncode == 0
    ready = json.loads(done.stdout.splitlines()[0])
    assert ready["type"] == "ready"
    assert ready["sandbox"]["enabled"] is False
    assert ready["sandbox"]["mechanism"] == "none"
    assert "Landlock is disabled" in ready["sandbox"]["reason"]


def test_landlock_alone_confines_writes_and_says_the_network_is_open(
    tmp_path: Path, outside: Path
) -> None:
    with contextlib.ExitStack() as stack:
        os.environ["STDIO_EXECUTOR_SANDBOX_DISABLE"] = "userns"
        stack.callback(os.environ.pop, "STDIO_EXECUTOR_SANDBOX_DISABLE", None)
        d = stack.enter_context(run_daemon(tmp_path))
        info = d.ready().sandbox
        assert isinstance(d.ready(), Ready) and info is not None
        assert info.mechanism == "landlock" and info.network == "unrestricted"
        assert any("network" in n for n in info.not_enforced)
        out, _ = bash(d, "w", f"echo x > {outside}/f; echo y > g; grep CapEff /proc/self/status")
    assert not (outside / "f").exists() and (tmp_path / "g").exists()
    assert "CapEff:\t0000000000000000" in out  # not even a root daemon's command keeps any


def test_additional_directories_and_allow_write_are_writable(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    extra, allowed, other = (tmp_path_factory.mktemp(n) for n in ("extra", "allowed", "other"))
    config = json.dumps(
        {
            "permissions": {
                "defaultMode": "bypassPermissions",
                "additionalDirectories": [str(extra)],
            },
            "sandbox": {"filesystem": {"allowWrite": [f"/{allowed}"]}},
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        bash(d, "w", f"touch {extra}/a {allowed}/b {other}/c; true")
    assert (extra / "a").exists() and (allowed / "b").exists()
    assert not (other / "c").exists()


def test_background_bash_runs_in_the_sandbox_too(tmp_path: Path, outside: Path) -> None:
    with run_daemon(tmp_path) as d:
        out, is_error = bash(
            d,
            "bg",
            f"echo x > {outside}/bg.txt; echo y > inside-bg.txt",
            run_in_background=True,
        )
        assert not is_error, out
        assert wait_until(lambda: (tmp_path / "inside-bg.txt").exists(), timeout=10)
    assert not (outside / "bg.txt").exists()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_bubblewrap_takes_over_where_landlock_is_missing(tmp_path: Path, outside: Path) -> None:
    (tmp_path / ".env").write_text("API_KEY=hunter2\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    config = json.dumps(
        {"permissions": {"deny": ["Read(./.env)"], "defaultMode": "bypassPermissions"}}
    )
    (tmp_path / "kernel.sh").write_text("cat .env\n")
    with contextlib.ExitStack() as stack:
        os.environ["STDIO_EXECUTOR_SANDBOX_DISABLE"] = "landlock"
        stack.callback(os.environ.pop, "STDIO_EXECUTOR_SANDBOX_DISABLE", None)
        d = stack.enter_context(run_daemon(tmp_path, "--settings", config))
        info = d.ready().sandbox
        assert info is not None and info.mechanism == "bubblewrap" and info.network == "blocked"
        out, _ = bash(
            d,
            "b",
            # `bash kernel.sh`: past the permission layer, which denies `cat .env` itself.
            f"echo x > {outside}/f; echo y > g; bash kernel.sh; echo evil >> .git/config; "
            f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', 9), 2)\"",
        )
    assert not (outside / "f").exists() and (tmp_path / "g").exists()
    assert "hunter2" not in out
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"
    assert "Network is unreachable" in out or "Connection refused" in out


def test_scripts_that_hooks_run_stay_read_only(tmp_path: Path) -> None:
    """Hooks run outside the sandbox: a sandboxed command rewriting one would escape."""
    (tmp_path / "scripts").mkdir()
    hook = tmp_path / "scripts" / "check.sh"
    hook.write_text("#!/bin/sh\nexit 0\n")
    config = json.dumps(
        {
            "permissions": {"defaultMode": "bypassPermissions"},
            "hooks": {
                "PostToolUse": [
                    {
                        "matcher": "Read",
                        "hooks": [{"type": "command", "command": "sh ./scripts/check.sh"}],
                    }
                ]
            },
        }
    )
    with run_daemon(tmp_path, "--settings", config) as d:
        bash(d, "h", "echo 'touch /tmp/escaped' >> scripts/check.sh; echo ok > scripts/other.sh")
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    assert (tmp_path / "scripts" / "other.sh").exists()


@pytest.mark.parametrize(
    "deny",
    [
        {"permissions": {"deny": ["Read(./secrets/**)"]}},
        {"permissions": {"deny": ["Read(./secrets)"]}},
        {"permissions": {"deny": ["Read(**/deep/**)"]}},
        {"sandbox": {"filesystem": {"denyRead": ["./secrets"]}}},
        {"sandbox": {"filesystem": {"denyRead": ["OUTSIDE"]}}},
        {"permissions": {"deny": ["Read(/OUTSIDE/**)"]}},
    ],
    ids=["dir-glob", "dir", "pattern-dir", "denyRead-dir", "denyRead-outside", "rule-outside"],
)
def test_a_file_below_a_denied_directory_is_denied_under_every_name(
    tmp_path: Path, deny: dict[str, Any]
) -> None:
    """A deny on a directory covers the files below it; a hard link to one of them made
    before the session (another name, anywhere in the workspace) must be masked too."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "secrets" / "deep").mkdir(parents=True)
    (outside / "deep").mkdir(parents=True)
    (ws / "secrets" / "deep" / "key.txt").write_text("hunter2-inside\n")
    (outside / "deep" / "id.txt").write_text("hunter2-outside\n")
    (ws / "docs").mkdir()
    os.link(ws / "secrets" / "deep" / "key.txt", ws / "docs" / "notes.txt")
    os.link(outside / "deep" / "id.txt", ws / "readme.txt")
    text = json.dumps(deny).replace("/OUTSIDE", "/" + str(outside)).replace("OUTSIDE", str(outside))
    names = ["docs/notes.txt", "readme.txt", "secrets/deep/key.txt", f"{outside}/deep/id.txt"]
    with run_daemon(ws, "--settings", text, "--permission-mode", "bypassPermissions") as d:
        # From a script file: the permission layer denies `cat NAME` spelled out on the
        # line; this is the kernel's test.
        (ws / "kernel.sh").write_text("".join(f"cat {n}\n" for n in names) + "echo done\n")
        out, _ = bash(d, "r", "bash kernel.sh")
    assert "done" in out
    leaked = [s for s in ("hunter2-inside", "hunter2-outside") if s in out]
    covered = "outside" if "OUTSIDE" in json.dumps(deny) else "inside"
    assert f"hunter2-{covered}" not in out, (leaked, out)


def test_ready_says_what_git_stores_of_read_denied_files_is_not_masked(tmp_path: Path) -> None:
    settings = json.dumps({"permissions": {"deny": ["Read(./.env)"]}})
    with run_daemon(tmp_path, "--settings", settings, "--sandbox", "on") as d:
        info = d.ready().sandbox
    assert info is not None and info.enabled
    assert any(".git/objects" in n for n in info.not_enforced)
    with run_daemon(tmp_path, "--sandbox", "on") as d:
        plain = d.ready().sandbox
    assert plain is not None and not any(".git/objects" in n for n in plain.not_enforced)
