"""Files that deny rules name, recognised by path *and* by identity.

Owns: whether a file is one a ``Read(...)`` (or ``Edit(...)``) deny rule forbids, under
any name: the name matches a rule; or, resolved through symlinks, it does; or it is a hard
link to (or a bind of) a file whose name matches, found by comparing ``(st_dev, st_ino)``
with the files the rules name. ``HiddenFiles.hides`` is what Grep and Glob filter their
results with, and the policy uses ``same_as_denied`` for a file a call names directly.
Must not: decide anything else, or cost anything when no deny rule names a path (the
daemon then builds no ``HiddenFiles`` at all).

Finding "the files the rules name" means looking where each rule can match: a literal
rule (``Read(./.env)``) is one ``stat``; an anchored pattern (``Read(secrets/**)``) walks
below its literal prefix; a pattern matched at any depth (``Read(.env)``) walks the
workspace. This runs only for a file with more than one link (hard links are rare) and at
most once per call; a walk past ``_MAX_ENTRIES`` entries gives up and treats every
multiply-linked file as possibly denied (fail closed).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from .rules import PathPattern, Rule, _relative

__all__ = ["HiddenFiles", "denied_identities", "overlaps"]

_MAX_ENTRIES = 200_000
# Entries looked through below a directory a Bash line descends into (``grep -r KEY .``)
# before the line asks instead.
_MAX_BELOW = 100_000
Identity = tuple[int, int]


def denied_identities(rules: Sequence[Rule]) -> frozenset[Identity] | None:
    """``(st_dev, st_ino)`` of every existing file the path rules name; None if there were
    too many places to look (the caller must then assume the worst)."""
    found: set[Identity] = set()
    budget = _MAX_ENTRIES
    roots: dict[str, list[Rule]] = {}
    for rule in rules:
        pattern = rule.path
        if pattern is None:
            continue
        if pattern.literal:
            _add_tree(pattern.root, found)
            continue
        roots.setdefault(pattern.root, []).append(rule)
    for root, group in roots.items():
        patterns = [r.path for r in group if r.path is not None]
        # A file is named when its own name or path matches, or a directory above it does
        # (tested once per directory, on the way down).
        denied_dirs = {root} if any(p.matches(root) for p in patterns) else set()
        for directory, dirs, files in os.walk(root):
            budget -= len(dirs) + len(files)
            if budget < 0:
                return None
            inherited = directory in denied_dirs
            for name in dirs:
                path = os.path.join(directory, name)
                if inherited or _own_match(patterns, path, name, True):
                    denied_dirs.add(path)
            for name in files:
                path = os.path.join(directory, name)
                if inherited or _own_match(patterns, path, name, False):
                    _add(path, found)
    return frozenset(found)


def _own_match(patterns: Sequence[PathPattern], path: str, name: str, is_dir: bool) -> bool:
    """Whether a pattern matches ``path`` itself (not a directory above it): its name for
    a pattern matched at any depth, its path from the base for an anchored one."""
    for pattern in patterns:
        if pattern.dir_only and not is_dir:
            continue
        if pattern.anchored:
            rel = _relative(path, pattern.base, pattern.ignore_case)
            if rel and pattern.regex.fullmatch(rel):
                return True
        elif pattern.regex.fullmatch(name):
            return True
    return False


def _add(path: str, found: set[Identity]) -> None:
    try:
        st = os.stat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode):
        found.add((st.st_dev, st.st_ino))


def _add_tree(path: str, found: set[Identity]) -> None:
    """A literal rule names a file, or a directory and everything under it."""
    if os.path.isdir(path):
        for directory, _dirs, files in os.walk(path):
            for name in files:
                _add(os.path.join(directory, name), found)
    else:
        _add(path, found)


def overlaps(root: str, top: str) -> bool:
    """Whether a rule whose matches lie under ``root`` can match something under ``top``
    (a file read below a directory, or created below it)."""
    return (
        root == top
        or top == "/"
        or root.startswith(top.rstrip("/") + "/")
        or (top.startswith(root.rstrip("/") + "/"))
    )


class HiddenFiles:
    """Deny rules over file paths, as a filter for search results."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = tuple(r for r in rules if r.path is not None)
        self._identities: frozenset[Identity] | None = None
        self._computed = False

    def fresh(self) -> HiddenFiles:
        """A filter for one call: the identities are looked up again (files change)."""
        return HiddenFiles(self.rules)

    def named(self, path: str) -> bool:
        return any(r.path is not None and r.path.matches(path) for r in self.rules)

    def hides(self, path: str, st: os.stat_result | None = None) -> bool:
        """Whether ``path`` (absolute) is, or reaches, a denied file."""
        path = os.path.normpath(path)
        if self.named(path):
            return True
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return True
        if real != path and self.named(real):
            return True
        if st is None:
            try:
                st = os.stat(path)
            except OSError:
                return False
        return self.same_as_denied(st)

    def first_below(
        self, top: str, budget: int = _MAX_BELOW, *, skip_hidden: bool = False
    ) -> tuple[str | None, bool]:
        """A denied file or directory at or below the directory ``top`` (absolute,
        resolved), by name or as a hard link, and whether the look was complete (False:
        more than ``budget`` entries; the caller must assume the worst). Symbolic links
        below are not followed (a program that follows them is asked about anyway);
        ``skip_hidden``: names starting with a dot are neither matched nor entered."""
        rules = [r for r in self.rules if r.path is not None and overlaps(r.path.root, top)]
        if not rules:
            return None, True
        if self.named(top):
            return top, True
        # Each entry's own name (a pattern matched at any depth) or its path from the
        # pattern's base (an anchored one) is all there is left to test: the directories
        # above it were tested on the way down, and ``top`` and those above it just now.
        patterns = [r.path for r in rules if r.path is not None]
        stack = [top]
        while stack:
            try:
                listing = os.scandir(stack.pop())
            except OSError:
                continue
            with listing:
                for entry in listing:
                    budget -= 1
                    if budget < 0:
                        return None, False
                    if skip_hidden and entry.name.startswith("."):
                        continue  # `rg` without --hidden never reads it
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                        if _own_match(patterns, entry.path, entry.name, is_dir):
                            return entry.path, True
                        if is_dir:
                            stack.append(entry.path)
                            continue
                        if not entry.is_file(follow_symlinks=False):
                            continue
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_nlink > 1:
                        if not self._computed:
                            self._identities = denied_identities(self.rules)
                            self._computed = True
                        if self._identities is None:
                            return None, False  # another name of a denied file? too much to tell
                        if (st.st_dev, st.st_ino) in self._identities:
                            return entry.path, True
        return None, True

    def same_as_denied(self, st: os.stat_result) -> bool:
        """A file with several names: is one of them denied?"""
        if st.st_nlink <= 1 or not stat.S_ISREG(st.st_mode):
            return False
        if not self._computed:
            self._identities = denied_identities(self.rules)
            self._computed = True
        if self._identities is None:
            return True  # too much to search: assume the worst
        return (st.st_dev, st.st_ino) in self._identities

    def rg_excludes(self) -> list[str]:
        """``--glob !PATTERN`` arguments for rules ripgrep can apply itself (names at any
        depth, like ``.env`` or ``*.pem``): fewer denied lines to read and drop."""
        out: list[str] = []
        for rule in self.rules:
            assert rule.path is not None
            spec = rule.path.spec.strip()
            if not rule.path.anchored and "/" not in spec.rstrip("/"):
                out += ["--glob", "!" + spec]
        return out
