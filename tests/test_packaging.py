"""One version for everything: the package metadata, ``stdio-executor --version`` and
``ready.version`` read ``stdio_executor.__version__``; CHANGELOG.md has an entry for it, and the
npm client carries the same number."""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

from stdio_executor import __version__

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_metadata_has_the_packages_version() -> None:
    assert version("stdio-executor") == __version__


def test_the_changelog_has_an_entry_for_the_version() -> None:
    headings = re.findall(r"^## (\S+)", (REPO_ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert __version__ in headings
    released = [h for h in headings if h != "Unreleased"]
    assert released[0] == __version__, "the newest release heading is the current version"


def test_the_typescript_client_has_the_same_version() -> None:
    package = json.loads((REPO_ROOT / "clients" / "typescript" / "package.json").read_text())
    assert package["name"] == "stdio-executor"
    assert package["version"] == __version__
