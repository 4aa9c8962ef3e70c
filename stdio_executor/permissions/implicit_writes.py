"""The directories a known program writes into without the line naming the files.

Owns: telling, from a simple command's words, which directory an extractor (``tar x``,
``unzip``, ``cpio -i``, ``7z x``, ``ar x``) or a patch (``patch``, ``git apply``, ``git
am``) writes files into whose names come from its input, and whether a git command
rewrites the work tree (``git reset --hard``, ``git checkout BRANCH``, ``git stash``,
``git merge`` ...).
Must not: decide anything (``policy`` asks when a rule covers something below such a
directory, as it does for ``mv x config/``), or read the file system.

Why: the write check judges the paths a line names. ``tar xf t.tar`` names none of the
files it writes: they are named inside t.tar and land in the working directory (or the
``-C`` one); ``git reset --hard`` overwrites any tracked file of the work tree. Without
this, an ``Edit(./config/**)`` deny rule held for ``cp x config/a`` and not for ``tar xf
t.tar`` whose archive holds ``config/a``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WORK_TREE", "implicit_dirs"]

# Stands for the git work tree the command runs in (found by the caller from the cwd).
WORK_TREE = "\0work-tree"

_ARCHIVERS = frozenset({"tar", "bsdtar", "gtar"})
# git subcommands that write files of the work tree by their own logic (not only those
# named as operands, which the write check sees anyway).
_GIT_WORK_TREE = frozenset(
    {
        "checkout",
        "switch",
        "restore",
        "merge",
        "pull",
        "rebase",
        "cherry-pick",
        "revert",
        "am",
        "clean",
        "read-tree",
        "checkout-index",
        "submodule",
        "bisect",
        "filter-branch",
        "sparse-checkout",
    }
)
_GIT_VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env"}
)


def implicit_dirs(name: str, args: Sequence[str]) -> tuple[list[str], str | None]:
    """The directories ``name ARGS`` writes into without naming the files (``.`` for the
    working directory, ``WORK_TREE``), and why, when the names come from its input (an
    archive or a patch: one may be any file, a control file included)."""
    if name in _ARCHIVERS:
        return _tar(args)
    if name == "unzip":
        if any(a in ("-l", "-t", "-v", "-Z", "-p", "-z") for a in args):
            return [], None
        return [_value_of(args, ("-d",)) or "."], "unzip writes the files named in the archive"
    if name == "cpio":
        first = next((a for a in args if a.startswith("-")), "")
        extract = "--extract" in args or (not first.startswith("--") and "i" in first[1:])
        if not extract:
            return [], None
        where = _value_of(args, ("-D", "--directory"))
        return [where or "."], "cpio writes the files named in its input"
    if name in ("7z", "7za", "7zr"):
        if not args or args[0] not in ("x", "e"):
            return [], None
        out = next((a[2:] for a in args if a.startswith("-o") and len(a) > 2), None)
        return [out or "."], f"{name} writes the files named in the archive"
    if name == "ar":
        if args and "x" in args[0].lstrip("-"):
            return ["."], "ar writes the files named in the archive"
        return [], None
    if name == "patch":
        if any(a in ("--dry-run", "-C", "--check") for a in args):
            return [], None
        where = _value_of(args, ("-d", "--directory"))
        return [where or "."], "patch writes the files named in the patch"
    if name == "git":
        return _git(args)
    return [], None


def _tar(args: Sequence[str]) -> tuple[list[str], str | None]:
    extract = False
    for i, arg in enumerate(args):
        if arg in ("--extract", "--get") or arg.startswith(("--extract=", "--get=")):
            extract = True
        elif arg.startswith("-") and not arg.startswith("--"):
            extract = extract or "x" in arg[1:]
        elif i == 0:
            extract = "x" in arg  # the old bundle: `tar xzf t.tgz`
    if not extract:
        return [], None
    where = _value_of(args, ("-C", "--directory"))
    return [where or "."], "tar writes the files named in the archive"


def _git(args: Sequence[str]) -> tuple[list[str], str | None]:
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in _GIT_VALUED and rest:
            rest.pop(0)
    if not rest:
        return [], None
    sub, options = rest[0], rest[1:]
    if sub == "apply":
        reports = any(o in ("--check", "--stat", "--numstat", "--summary") for o in options)
        if "--cached" in options or (reports and "--apply" not in options):
            return [], None  # the index only, or a report
        return [WORK_TREE], "git apply writes the files named in the patch"
    if sub == "am":
        return [WORK_TREE], "git am writes the files named in the patches"
    if sub == "reset":
        if any(o in ("--hard", "--merge", "--keep") for o in options):
            return [WORK_TREE], None
        return [], None
    if sub == "stash":
        if options[:1] in (["list"], ["show"], ["create"]):
            return [], None
        return [WORK_TREE], None
    if sub in ("checkout", "switch") and _new_branch_here(sub, options):
        return [], None  # `git checkout -b x`: a branch at HEAD, the files as they are
    if sub in ("clean", "bisect") and any(o in ("-n", "--dry-run", "log", "view") for o in options):
        return [], None
    if sub in _GIT_WORK_TREE:
        return [WORK_TREE], None
    return [], None


def _new_branch_here(sub: str, options: Sequence[str]) -> bool:
    """``git checkout -b NAME`` / ``git switch -c NAME`` with no start point."""
    creates = ("-b", "-B", "--orphan") if sub == "checkout" else ("-c", "-C", "--create")
    rest = list(options)
    if not rest or rest[0] not in creates:
        return False
    operands = [o for o in rest[1:] if not o.startswith("-")]
    return len(operands) == 1 and rest[0] != "--orphan"


def _value_of(args: Sequence[str], flags: Sequence[str]) -> str | None:
    """The value of the last of ``flags`` (``-C DIR``, ``-CDIR``, ``--directory=DIR``)."""
    found = None
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                found = args[i + 1]
            elif flag.startswith("--") and arg.startswith(flag + "="):
                found = arg[len(flag) + 1 :]
            elif not flag.startswith("--") and arg.startswith(flag) and len(arg) > len(flag):
                found = arg[len(flag) :]
    return found
