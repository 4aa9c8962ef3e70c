"""What a user meets who runs the daemon from a checkout before installing it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_running_without_the_dependencies_says_how_to_install_them() -> None:
    # -S hides site-packages (and the editable install's .pth): the package is found through
    # PYTHONPATH, as from a fresh clone's root, but msgspec and anyio are not.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-S", "-m", "stdio_executor"],
        input=b'{"type":"drain"}\n',
        capture_output=True,
        cwd=REPO_ROOT,
        env=env,
        timeout=30,
    )
    assert out.returncode == 2
    assert out.stdout == b""  # no ready line, no half-started daemon
    assert b"missing dependencies" in out.stderr
    assert b"pip install -e ." in out.stderr
    assert b"Traceback" not in out.stderr
