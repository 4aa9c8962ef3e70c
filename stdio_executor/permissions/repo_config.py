"""Whether a repository's own git config can make a read-only git command run a program.

Owns: listing the config keys git reads from the repository itself (the ``local`` and
``worktree`` scopes, with every file they include) for the repository a command runs in
and for every populated submodule git would recurse into, and naming those that are not
known to be inert.
Must not: decide anything (the gate turns a non-empty answer into an ask while the
workspace is untrusted) or start a process outside ``processes`` (every child has the
daemon's one lifetime).

Why: ``git status``, ``git diff``, ``git log -p``, ``git show`` and ``git blame`` only read,
so they run unasked, yet a repository's ``.git/config`` can name programs they run:
``diff.external``, a textconv or external diff driver (``diff.<driver>.textconv``) or a
clean filter (``filter.<driver>.clean``) chosen by ``.gitattributes``, ``gpg.program`` under
``log.showSignature``, and more in every git release. A directory that arrives with its own
``.git`` (an archive, a copied checkout) carries that file, and a submodule's config is
read when ``git status`` recurses into it. The command-scope settings of ``readonly.harden_git``
turn off what can be turned off (fsmonitor, pagers, transports); the rest cannot be unset
from outside without breaking diffs, so the question is asked instead: the keys below are
an allowlist, like the read-only flags, because listing what runs programs never ends and
listing what does not is finite. An unknown key, a config git cannot read, or submodules
nested deeper than ``_MAX_DEPTH`` mean "not known inert".

The system and global files and ``-c``/``GIT_CONFIG_*`` settings are the user's and are not
looked at. Git itself lists the keys, so the answer follows git's own parsing and include
rules rather than a second parser's.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping

import anyio

from ..processes import ProcessRegistry, read_until_exit, spawn_group, stop_group, supervised

__all__ = ["is_inert", "untrusted_program_keys"]

_MAX_DEPTH = 4
_TIMEOUT_S = 10.0
_MAX_OUTPUT = 64 * 1024 * 1024
_GITLINK = b"160000 "

# Keys that readonly.harden_git outranks (core.fsmonitor, core.pager, core.hooksPath) are
# inert here. Git prints keys lower-cased except for a subsection, which keeps its case.
# Each entry is "section.key" (two parts) or "section.*.key" (any subsection); "section.*"
# is every key of a section whose keys name no program at all.
_INERT = """
core.repositoryformatversion core.filemode core.bare core.logallrefupdates core.ignorecase
core.precomposeunicode core.symlinks core.autocrlf core.eol core.safecrlf core.quotepath
core.abbrev core.sparsecheckout core.sparsecheckoutcone core.splitindex core.untrackedcache
core.checkstat core.trustctime core.whitespace core.commentchar core.commentstring
core.hidedotfiles core.longpaths core.fscache core.preloadindex core.compression
core.loosecompression core.bigfilethreshold core.deltabasecachelimit core.packedgitlimit
core.packedgitwindowsize core.multipackindex core.commitgraph core.warnambiguousrefs
core.excludesfile core.attributesfile core.worktree core.filesreflocktimeout
core.packedrefstimeout core.sharedrepository core.protecthfs core.protectntfs
core.usereplacerefs core.fsync core.fsyncmethod core.fsyncobjectfiles core.notesref
core.fsmonitor core.fsmonitorhookversion core.pager core.hookspath
remote.*.url remote.*.pushurl remote.*.fetch remote.*.push remote.*.mirror remote.*.tagopt
remote.*.prune remote.*.prunetags remote.*.skipdefaultupdate remote.*.skipfetchall
remote.*.promisor remote.*.partialclonefilter
branch.*.remote branch.*.pushremote branch.*.merge branch.*.rebase branch.*.description
user.name user.email user.signingkey user.useconfigonly
author.name author.email committer.name committer.email
submodule.*.url submodule.*.active submodule.*.branch submodule.*.fetchrecursesubmodules
submodule.*.ignore submodule.*.shallow submodule.recurse submodule.active
submodule.fetchjobs
pull.rebase pull.ff push.default push.autosetupremote push.followtags fetch.prune
fetch.prunetags fetch.writecommitgraph fetch.recursesubmodules fetch.parallel
init.defaultbranch merge.ff merge.conflictstyle merge.renames merge.log rebase.autostash
rebase.autosquash rebase.updaterefs rerere.enabled rerere.autoupdate
log.date log.decorate log.abbrevcommit log.follow log.mailmap log.showroot
log.excludedecoration log.initialdecorationset
diff.renames diff.algorithm diff.noprefix diff.mnemonicprefix diff.colormoved
diff.colormovedws diff.indentheuristic diff.context diff.interhunkcontext
diff.statgraphwidth diff.ignoresubmodules diff.submodule diff.orderfile diff.wordregex
diff.relative diff.suppressblankempty diff.dirstat diff.autorefreshindex diff.renamelimit
blame.date blame.coloring blame.ignorerevsfile blame.markignoredlines
blame.markunblamablelines blame.showemail blame.showroot blame.blankboundary
grep.linenumber grep.column grep.patterntype grep.extendedregexp grep.fullname
grep.fallbacktonoindex grep.threads commit.cleanup commit.status commit.verbose
commit.template tag.sort include.path includeif.*.path url.*.insteadof url.*.pushinsteadof
lfs.repositoryformatversion lfs.url lfs.pushurl lfs.locksverify lfs.fetchinclude
lfs.fetchexclude lfs.*.access lfs.*.locksverify gc.* pack.* index.* feature.* extensions.*
advice.* color.* column.* i18n.* status.*
http.* protocol.* transfer.* fetch.* checkout.* sparse.* splitindex.* versionsort.*
worktree.* stash.* apply.* clean.* safe.*
"""


def _table() -> tuple[frozenset[str], frozenset[str], re.Pattern[str]]:
    exact: set[str] = set()
    sections: set[str] = set()
    sub: list[str] = []
    for entry in _INERT.split():
        section, _, rest = entry.partition(".")
        if rest == "*":
            sections.add(section)
        elif rest.startswith("*."):
            sub.append(re.escape(section) + r"\..+\." + re.escape(rest[2:]))
        else:
            exact.add(entry)
    return frozenset(exact), frozenset(sections), re.compile("|".join(sub))


_EXACT, _SECTIONS, _SUBSECTION = _table()


def is_inert(key: str) -> bool:
    """Whether a config key, as ``git config --list`` names it, names no program that a
    read-only git command could run."""
    if key in _EXACT:
        return True
    section, _, _rest = key.partition(".")
    if section in _SECTIONS:
        return True
    return _SUBSECTION.fullmatch(key) is not None


async def untrusted_program_keys(
    cwd: str, env: Mapping[str, str], processes: ProcessRegistry
) -> list[str]:
    """The repository's own config keys (and its submodules') not known to be inert, each
    with where it was found; empty when git would run nothing the repository names."""
    return await _check(cwd, env, processes, depth=0, label="")


async def _check(
    cwd: str, env: Mapping[str, str], processes: ProcessRegistry, *, depth: int, label: str
) -> list[str]:
    where = f" (submodule {label})" if label else ""
    if depth > _MAX_DEPTH:
        return [f"submodules nested deeper than {_MAX_DEPTH}{where}"]
    listed = await _git(
        ["config", "--list", "--show-scope", "--name-only", "-z", "--includes"], cwd, env, processes
    )
    if listed is None:
        return [f"the repository's config could not be read{where}"]
    found: list[str] = []
    tokens = listed.split(b"\0")
    for scope, key in zip(tokens[0::2], tokens[1::2], strict=False):
        if scope in (b"system", b"global", b"command"):
            continue
        name = key.decode("utf-8", "surrogateescape")
        if not is_inert(name):
            found.append(name + where)
    # Submodules: git status and git diff look inside every populated gitlink, with its
    # own config. The index lists them; a missing work tree is not an error.
    staged = await _git(["ls-files", "--stage", "-z", ":/"], cwd, env, processes, ok=(0, 128))
    for entry in (staged or b"").split(b"\0"):
        if entry.startswith(_GITLINK):
            path = os.fsdecode(entry.partition(b"\t")[2])
            sub = os.path.join(cwd, path)
            if await anyio.Path(sub, ".git").exists():
                shown = f"{label}/{path}" if label else path
                found += await _check(sub, env, processes, depth=depth + 1, label=shown)
    return found


async def _git(
    args: list[str],
    cwd: str,
    env: Mapping[str, str],
    processes: ProcessRegistry,
    ok: tuple[int, ...] = (0,),
) -> bytes | None:
    """git's stdout, or None when it failed, timed out or could not start. Exit 128 with
    ``ok`` containing it (not a repository, no work tree) is an empty answer."""
    try:
        process = await spawn_group(
            processes,
            ["git", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(env),
        )
    except FileNotFoundError:
        return b""  # no git: a git command cannot run either
    except OSError:
        return None
    out = bytearray()

    async def read() -> None:
        assert process.stdout is not None
        try:
            while len(out) <= _MAX_OUTPUT:
                out.extend(await process.stdout.receive(1 << 20))
        except (anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            return

    async with supervised(process, processes):
        with anyio.move_on_after(_TIMEOUT_S) as deadline:
            await read_until_exit(process, read)
        if deadline.cancelled_caught or len(out) > _MAX_OUTPUT:
            await stop_group(process)
            return None
    code = process.returncode
    if code == 128 and 128 in ok:
        return b""
    return bytes(out) if code in ok else None
