"""The permission decision for one call: rules, the mode, and workspace confinement.

Owns: the order in which a call is judged (SPEC section 6), Claude Code's:

1. a deny rule that matches -> deny (nothing overrides it: not a mode, a hook or the host);
2. ``plan`` mode and the call is not read-only -> deny;
3. an ask rule that matches, or a Bash command that could not be checked against a deny or
   ask rule because part of it is only known when it runs -> ask; a write to a control file
   (``protected``: ``.git/``, ``.claude/``, shell start-up files ...) by a tool that edits
   a path, or by a Bash line that visibly writes one -> ask, in every mode but
   ``bypassPermissions`` (a hook's allow cannot skip it);
4. a file tool whose path, resolved (``..``, symlinks, case), lies outside the workspace and
   ``additionalDirectories`` (and, for reading tools, the spill directory), unless an allow
   rule names the resolved path -> ask (deny in ``dontAsk`` and ``bypassPermissions``);
5. allow rules that allow the call (for Bash: every simple command) -> allow;
6. the mode: ``bypassPermissions`` runs everything, read-only calls run, ``acceptEdits`` runs
   the tools that edit files (``file_access == "edit"``: Edit, Write, MultiEdit, NotebookEdit),
   ``plan`` denies, ``dontAsk`` denies, ``default`` and ``acceptEdits`` ask.

File deny rules also match the file's identity: a hard link to a file a rule names is that
file (``hidden``). Tools are told apart by facts, not names: a tool says whether it reads or
edits a path and which input field names it (``ToolSpec.file_access``, ``path_field``); Edit
rules, ``acceptEdits`` and the control-file check apply to every tool that edits.

In ``dontAsk`` mode every ask becomes a deny (the gate does that after hooks had their say).
Bash is not confined to the workspace (its ``cd`` may leave it; SPEC section 9), but a ``cd``
counts as harmless inside a compound command only when it stays inside.
Must not: wait, emit events or run hooks (the gate does); it is a pure function of the call,
the settings and the file system's view of the paths.
"""

from __future__ import annotations

import glob
import os
import re
import stat
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from ..confine import Confinement, inside, realpath
from .hidden import HiddenFiles, overlaps
from .implicit_writes import WORK_TREE, implicit_dirs
from .protected import hook_scripts, protected
from .rules import PATH_TOOLS, Rule, bash_allowed, bash_first_match, canonical, data_run_as_code
from .settings import Settings
from .shell import ParsedCommand, SimpleCommand, Word, parse

__all__ = ["DONT_ASK_REASON", "Decision", "Facts", "Policy", "has_assignment_prefix"]

# The mode allows it because it only reads (the gate may still ask: repo_config).
READ_ONLY_REASON = "read-only"
DONT_ASK_REASON = "dontAsk mode: no rule allows it"

Kind = Literal["allow", "ask", "deny"]


class Facts(msgspec.Struct, frozen=True):
    """What the policy needs to know about one call."""

    name: str
    tool_input: Mapping[str, Any]
    read_only: bool
    cwd: str
    aliases: tuple[str, ...] = ()
    # The tool's own facts (``ToolSpec``): "read" / "edit" file access and the input key of
    # its path; and what a rule's specifier is compared with (WebFetch: ``domain:HOST``).
    file_access: str | None = None
    path_field: str | None = None
    rule_content: str | None = None


class Decision(msgspec.Struct, frozen=True):
    kind: Kind
    # allow: what allowed it; ask: why the host is asked (host-facing); deny: the model-facing
    # explanation.
    reason: str
    # An ask that a PreToolUse hook's "allow" cannot skip: an ask rule, a path outside the
    # workspace, a command that could not be checked against a deny rule.
    firm: bool = False
    # A file tool's path lay inside the roots by itself (no allow rule granted a place
    # outside): the decision holds only for a file that is still inside when the tool opens
    # it, which the tool checks on the descriptor (``confine``).
    confined: bool = False


class _Target(msgspec.Struct, frozen=True):
    given: str  # as the call wrote it
    lexical: str  # absolute, `..` resolved as text
    resolved: str | None  # symlinks resolved; None if it cannot be resolved


class _Writes(msgspec.Struct):
    """The words of a Bash line that may name what it writes (``_bash_write_words``)."""

    words: list[str]
    unknown: str | None = None  # a redirect target or the line itself not known
    unknown_args: str | None = None  # an operand of a writing command not known
    cd_words: list[str] = []  # where its `cd`s go
    lost: bool = False  # a `cd` to a place only known when it runs
    work_tree: bool = False  # a git command rewrites the work tree (`git reset --hard`)
    from_data: str | None = None  # files named by an archive or a patch are written

    def merge(self, other: _Writes) -> None:
        self.words += other.words
        self.cd_words += other.cd_words
        self.unknown = self.unknown or other.unknown
        self.unknown_args = self.unknown_args or other.unknown_args
        self.lost = self.lost or other.lost
        self.work_tree = self.work_tree or other.work_tree
        self.from_data = self.from_data or other.from_data


class _WriteTargets(msgspec.Struct):
    targets: list[_Target]
    unknown: str | None
    unknown_args: str | None
    cd: list[_Target] = []
    from_data: str | None = None


class _Reads(msgspec.Struct):
    """What a Bash line reads, as targets (see ``Policy._read_targets``)."""

    paths: list[_Target]
    unknown: str | None  # why some of it is only known when it runs
    dynamic: bool  # a file it reads is named only when it runs
    trees: list[_Target] = []  # directories it descends into
    visible_trees: list[_Target] = []  # the same, hidden files and directories skipped
    maybe_trees: list[_Target] = []  # directories a program not known either way is given
    git_trees: list[_Target] = []  # directories whose repository's stored files it prints


def _braces(word: str, limit: int = 256) -> list[str]:
    """bash's brace expansion of one word (``{.env,x}`` is ``.env`` and ``x``, ``a{1,2}b``
    is ``a1b a2b``, nested braces too); the word itself when it has none."""
    start = word.find("{")
    if start < 0:
        return [word]
    depth, parts, last = 0, [], start + 1
    for i in range(start, len(word)):
        c = word[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                parts.append(word[last:i])
                head, tail = word[:start], word[i + 1 :]
                if len(parts) < 2:  # `{x}` is no expansion: look further on
                    return [word[: i + 1] + w for w in _braces(tail, limit)][:limit]
                out = [x for p in parts for x in _braces(head + p + tail, limit)]
                return out[:limit]
        elif c == "," and depth == 1:
            parts.append(word[last:i])
            last = i + 1
    return [word]


# Tools whose path deny rules hold for what a Bash line visibly writes.
_EDIT_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
# Files a glob in a read-only Bash line may match before the line needs approval anyway.
_MAX_MATCHES = 256


def _other_names(target: _Target) -> str | None:
    """Why editing a file with other names (hard links) needs approval: the edit changes
    the file under every name, and another name may be a control file (``.git/config``
    linked as ``notes.cfg``, by an archive or an earlier session) that no path check sees.
    Finding every name would take a walk of every file system, so it asks instead."""
    if target.resolved is None:
        return None
    try:
        st = os.stat(target.resolved)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_nlink <= 1:
        return None
    others = st.st_nlink - 1
    return (
        f"{target.given} has {others} other name{'s' if others > 1 else ''} (hard "
        f"link{'s' if others > 1 else ''}): an edit changes the file under every name, and "
        "one of them could be a file that controls what runs next"
    )


def has_assignment_prefix(command: str) -> bool:
    """Whether some simple command starts with ``NAME=value`` (``PATH=. ls``): a read-only
    program then may not be the program that runs. Unparseable lines count as yes."""
    from .bash_syntax import split_simple_commands  # Bash-only tables: not at start-up

    commands = split_simple_commands(command)
    if commands is None:
        return True
    for words in commands:
        name, eq, _ = (words[0] if words else "").partition("=")
        if eq and name.isidentifier():
            return True
    return False


class Policy:
    def __init__(
        self,
        settings: Settings,
        *,
        mode: str,
        workspace: str,
        spill_dir: str | None = None,
        ignore_case: bool = False,
    ) -> None:
        self.mode = mode
        self.settings = settings
        self.spill_dir = spill_dir
        self.ignore_case = ignore_case
        self._ignore_case = ignore_case
        roots = [workspace, *settings.additional_directories]
        self._roots = tuple(self._real(r) for r in roots)
        self._read_roots = self._roots + ((self._real(spill_dir),) if spill_dir else ())
        given = [os.path.abspath(r) for r in roots]
        read_given = given + ([os.path.abspath(spill_dir)] if spill_dir else [])
        self._confinements = {
            "read": Confinement(self._read_roots, ignore_case, read_given),
            "edit": Confinement(
                self._roots, ignore_case, given, one_name=mode != "bypassPermissions"
            ),
            # After the host allowed an edit it was asked about (a file with other names
            # included): the roots still hold, the names were the host's to judge.
            "edit-answered": Confinement(self._roots, ignore_case, given),
        }
        self._by_tool: dict[str, tuple[tuple[Rule, ...], ...]] = {}
        # Read deny rules over paths: they hold for Bash's reading programs too.
        self.read_deny = tuple(
            r for r in settings.deny if r.path is not None and r.names("Read", (), "read")
        )
        # Edit/Write deny rules over paths: they hold for what Bash visibly writes.
        self.edit_deny = tuple(
            r
            for r in settings.deny
            if r.path is not None and any(r.names(t, (), "edit") for t in _EDIT_TOOLS)
        )
        self.uses_shell_parser = any(
            r.bash is not None for r in (*settings.allow, *settings.deny, *settings.ask)
        )
        self._workspace = workspace
        # Hook scripts are protected whether or not the hooks run yet (an untrusted
        # workspace's hooks are held back, and become real on trust).
        hooks = (settings.pending or settings).hooks
        commands = [h.command for g in hooks.pre_tool_use for h in g.hooks]
        commands += [h.command for g in hooks.post_tool_use for h in g.hooks]
        self.hook_files = hook_scripts(commands, workspace)

    # ----------------------------------------------------------------------- decisions

    def evaluate(self, facts: Facts) -> Decision:
        """The decision before a hook has its say (the gate turns asks into denials in
        ``dontAsk`` mode after that)."""
        deny, ask, allow = self._rules(facts)
        if facts.name == "Bash":
            return self._bash(facts, deny, ask, allow)
        if facts.file_access is not None or facts.name in PATH_TOOLS:
            return self._files(facts, deny, ask, allow)
        deny, ask, allow = (self._by_content(rules, facts) for rules in (deny, ask, allow))
        if deny:
            return self._denied_by(facts, deny[0])
        if self.mode == "plan" and not facts.read_only:
            return self._plan(facts)
        if ask:
            return Decision("ask", f"ask rule {ask[0].describe()}", firm=True)
        if allow:
            return Decision("allow", f"allow rule {allow[0].describe()}")
        return self._by_mode(facts)

    def denied(self, facts: Facts) -> Decision | None:
        """The deny rule that forbids the call, if any (an input the host rewrote)."""
        deny, _, _ = self._rules(facts)
        if facts.name == "Bash":
            command = str(facts.tool_input.get("command", ""))
            found = self._bash_reads_denied(command, facts.cwd) or self._bash_writes_denied(
                command, None, facts.cwd
            )
            if found is not None and found[1]:  # (the host answered a line it could read)
                return self._denied_by(facts, found[0], found[1])
            if not deny:
                return None
            rule, _ = bash_first_match(command, self._parse(command), deny, facts.cwd)
            return self._denied_by(facts, rule) if rule else None
        if not deny:
            return None
        if facts.file_access is not None or facts.name in PATH_TOOLS:
            for target in self._targets(facts):
                rule = self._path_rule(deny, target, either=True) or self._same_file(deny, target)
                if rule is not None:
                    return self._denied_by(facts, rule, target.given)
            return None
        deny = self._by_content(deny, facts)
        return self._denied_by(facts, deny[0]) if deny else None

    def _bash(
        self,
        facts: Facts,
        deny: Sequence[Rule],
        ask: Sequence[Rule],
        allow: Sequence[Rule],
    ) -> Decision:
        command = str(facts.tool_input.get("command", ""))
        parsed = self._parse(command) if any(r.bash for r in (*deny, *ask, *allow)) else None
        unsure: Rule | None = None
        if deny:
            rule, unsure = bash_first_match(command, parsed, deny, facts.cwd)
            if rule is not None:
                return self._denied_by(facts, rule)
        denied = self._bash_reads_denied(command, facts.cwd) or self._bash_writes_denied(
            command, parsed, facts.cwd
        )
        if denied is not None and not denied[1]:
            return Decision(
                "ask",
                f"the command could not be checked against the rule {denied[0].describe()}: "
                + (denied[2] or "a file it reads is only known when it runs"),
                firm=True,
            )
        if denied is not None:
            return self._denied_by(facts, denied[0], denied[1])
        if self.mode == "plan" and not facts.read_only:
            return self._plan(facts)
        if ask:
            rule, unsure_ask = bash_first_match(command, parsed, ask, facts.cwd)
            if rule is not None:
                return Decision("ask", f"ask rule {rule.describe()}", firm=True)
            unsure = unsure or unsure_ask
        written = None
        if unsure is None and parsed is not None and any(r.bash for r in (*deny, *ask)):
            written = self._runs_written(parsed)
            unsure = (deny or ask)[0] if written else None
        if unsure is not None:
            because = (
                written
                or data_run_as_code(command, parsed)
                or "part of it is only known when it runs"
            )
            return Decision(
                "ask",
                f"the command could not be checked against the rule {unsure.describe()}: "
                + because,
                firm=True,
            )
        # Only where something could let the command run without asking (an allow rule, a
        # hook's allow) is it worth parsing for writes to control files.
        could_run = bool(allow) or bool(self.settings.hooks.pre(facts.name))
        if could_run and self.mode != "bypassPermissions" and not facts.read_only:
            why = self._bash_protected(command, parsed, facts.cwd)
            if why is not None:
                return Decision("ask", why, firm=True)
        if allow:
            used, _why = bash_allowed(command, parsed, allow, self._harmless(facts.cwd))
            if used:
                return Decision("allow", "allow rule " + ", ".join(r.describe() for r in used))
        if facts.read_only and self.mode != "bypassPermissions":
            why = self._reads_outside(command, facts.cwd)
            if why is not None:
                return Decision("ask", why)
        return self._by_mode(facts)

    def _read_targets(self, command: str, cwd: str, *, contents: bool) -> _Reads | None:
        """The files a line reads (``contents``: whose contents it shows, copies or runs),
        globs matched as bash would, and why some cannot be known before it runs; None
        when the line cannot be understood."""
        from .bash_syntax import read_operands, read_operands_parsed

        found = read_operands(command, contents=contents)
        reads: tuple[str | None, ...] = ()
        if found is None and contents:
            # A line the lexer cannot read (`cat $(echo .env)`): the shell parser's view.
            parsed = self._parse(command)
            if not parsed.ok:
                return _Reads([], None, True)
            found = read_operands_parsed(parsed.commands, contents=contents)
            reads = parsed.reads
        if found is None:
            return None
        dynamic = found.dynamic or None in reads
        paths, unknown = self._expand(
            [*found.paths, *(r for r in reads if r is not None)], found.globs, cwd
        )
        trees, unknown_tree = self._expand(found.trees, found.tree_globs, cwd)
        visible, _ = self._expand(found.visible_trees, [], cwd)
        maybe, unknown_maybe = self._expand(found.maybe_trees, found.maybe_tree_globs, cwd)
        git_trees, _ = self._expand(found.git_trees, [], cwd)
        return _Reads(
            paths,
            found.unknown or unknown or unknown_tree or unknown_maybe,
            dynamic,
            trees=trees,
            visible_trees=visible,
            maybe_trees=maybe,
            git_trees=git_trees,
        )

    def _expand(
        self, words: list[str], globs: list[str], cwd: str
    ) -> tuple[list[_Target], str | None]:
        from .bash_syntax import shell_path

        given = list(words)
        unknown: str | None = None
        for pattern in globs:
            matches: list[str] = []
            alternatives = _braces(pattern)
            for one in alternatives:
                try:
                    expanded = shell_path(one, cwd)
                    matches += glob.glob(expanded) if expanded is not None else []
                except (OSError, ValueError):
                    expanded = ""
                if expanded is None:
                    unknown = unknown or f"{pattern} is only known when the command runs"
            if len(alternatives) > 1:  # a brace's words are passed even when nothing matches
                matches += [a for a in alternatives if not any(c in a for c in "*?[")]
            if len(matches) > _MAX_MATCHES:
                unknown = unknown or f"{pattern} matches more than {_MAX_MATCHES} files"
            # With no match bash passes the word as written; its directory is read either way.
            given += matches[:_MAX_MATCHES] or [os.path.dirname(pattern) or "."]
        targets = []
        for word in dict.fromkeys(given):
            try:
                lexical = shell_path(word, cwd)
            except ValueError:
                continue
            if lexical is None:
                unknown = unknown or f"{word} is only known when the command runs"
                continue
            targets.append(_Target(word, lexical, self._real(lexical)))
        return targets, unknown

    def _reads_outside(self, command: str, cwd: str) -> str | None:
        """Why a read-only line needs approval: a file or directory it reads or lists lies
        outside the workspace and additionalDirectories (as the Read tool asks), or what it
        reads is only known when it runs."""
        found = self._read_targets(command, cwd, contents=False)
        if found is None:
            return "the command could not be checked for reads outside the workspace"
        for target in found.paths:
            where = target.resolved or target.lexical
            if not self._inside(where, self._read_roots):
                shown = where if where == target.given else f"{target.given} (= {where})"
                return (
                    f"{shown} is outside the workspace and additionalDirectories "
                    "(the command reads it)"
                )
        if found.unknown is not None:
            return f"{found.unknown}: what it reads cannot be checked against the workspace"
        return None

    def _bash_reads_denied(self, command: str, cwd: str) -> tuple[Rule, str, str] | None:
        """The Read deny rule (and the path) that a line's reading names: the rules hold
        for ``cat .env`` as they do for the Read tool, through links and globs, for a
        directory a program may descend into (``grep -r KEY .``, ``tar c secrets``) and for
        what git stores (``git show HEAD:.env``, ``git log -p``). The path is "" when a
        file it reads is only known when it runs (``cat $f``): the line asks, as a Bash
        deny rule that cannot be checked does."""
        rules = self.read_deny
        if not rules:
            return None
        found = self._read_targets(command, cwd, contents=True)
        if found is None:
            return None
        for target in found.paths:
            rule = self._path_rule(rules, target, either=True) or self._same_file(rules, target)
            if rule is not None:
                return rule, target.given, ""
        hidden = HiddenFiles(rules)
        walked = [(t, False) for t in found.trees] + [(t, True) for t in found.visible_trees]
        for target, skip_hidden in walked:
            if target.resolved is None or not os.path.isdir(target.resolved):
                continue
            below, complete = hidden.first_below(target.resolved, skip_hidden=skip_hidden)
            if not complete:
                why = f"there is too much below {target.given} to look through"
                return rules[0], "", why  # it asks
            if below is not None:
                return self._rule_for(rules, below), below, ""
        for target in found.maybe_trees:
            if target.resolved is None or not os.path.isdir(target.resolved):
                continue
            below, complete = hidden.first_below(target.resolved)
            if below is not None or not complete:
                # A program not known to descend, or not to: `ruff check .` reads only its
                # sources, `docker build .` sends everything. It asks, naming the file.
                where = below or f"something below {target.given}"
                why = f"{target.given} is a directory, and the program may read {where}"
                return self._rule_for(rules, below) if below else rules[0], "", why
        for target in found.git_trees:
            if target.resolved is None:
                continue
            stored, complete = _tracked_denied(target.resolved, hidden)
            if not complete:
                return rules[0], "", "git could not list the files it stores"
            if stored is not None:
                return self._rule_for(rules, stored), stored, ""
        if found.dynamic:
            return rules[0], "", ""  # a file named at run time: cannot be told apart
        if _MAY_EVALUATE.search(_QUOTING.sub("", command)):
            evaluated = data_run_as_code(command, self._parse(command))
            if evaluated is not None:
                return rules[0], "", evaluated
        return None

    def _rule_for(self, rules: Sequence[Rule], path: str) -> Rule:
        target = _Target(path, path, self._real(path))
        return self._path_rule(rules, target, either=True) or rules[0]

    def _files(
        self,
        facts: Facts,
        deny: Sequence[Rule],
        ask: Sequence[Rule],
        allow: Sequence[Rule],
    ) -> Decision:
        targets = self._targets(facts)
        for target in targets:
            rule = self._path_rule(deny, target, either=True)
            if rule is None:
                rule = self._same_file(deny, target)
            if rule is not None:
                return self._denied_by(facts, rule, target.given)
        if self.mode == "plan" and not facts.read_only:
            return self._plan(facts)
        roots = self._read_roots if facts.file_access == "read" else self._roots
        confined = bool(targets) and all(self._inside(t.resolved, roots) for t in targets)
        for target in targets:
            rule = self._path_rule(ask, target, either=True)
            if rule is not None:
                return Decision("ask", f"ask rule {rule.describe()}", True, confined)
        if facts.file_access == "edit" and self.mode != "bypassPermissions":
            for target in targets:
                why = self._protected(target, allow)
                if why is not None:
                    return Decision("ask", why, True, confined)
        for target in targets:
            if self._inside(target.resolved, roots):
                continue
            if any(r.path is not None and self._matches(r, target.resolved) for r in allow):
                continue
            where = target.resolved or target.lexical
            shown = where if where == target.given else f"{target.given} (= {where})"
            if self.mode in ("bypassPermissions", "dontAsk"):
                return Decision(
                    "deny",
                    f"Permission to use {facts.name} has been denied: {shown} is outside the "
                    "workspace and its additional directories, and no allow rule names it.",
                )
            return Decision(
                "ask", f"{shown} is outside the workspace and additionalDirectories", firm=True
            )
        if allow and all(self._path_rule(allow, t, either=False) for t in targets):
            used = self._path_rule(allow, targets[0], either=False) if targets else allow[0]
            assert used is not None
            return Decision("allow", f"allow rule {used.describe()}", confined=confined)
        decision = self._by_mode(facts)
        return msgspec.structs.replace(decision, confined=True) if confined else decision

    def confinement(self, file_access: str | None, *, answered: bool = False) -> Confinement:
        """The roots a file tool's path must lie in (reading tools: the spill directory too);
        ``answered``: the host allowed the call when asked."""
        if file_access == "read":
            return self._confinements["read"]
        return self._confinements["edit-answered" if answered else "edit"]

    def rules_for(
        self, name: str, aliases: tuple[str, ...], file_access: str | None
    ) -> tuple[tuple[Rule, ...], ...]:
        """(deny, ask, allow): the rules that speak about this tool at all."""
        cached = self._by_tool.get(name)
        if cached is None:
            s = self.settings
            cached = tuple(
                tuple(r for r in rules if r.names(name, aliases, file_access))
                for rules in (s.deny, s.ask, s.allow)
            )
            self._by_tool[name] = cached
        return cached

    def _by_mode(self, facts: Facts) -> Decision:
        if self.mode == "bypassPermissions":
            return Decision("allow", "bypassPermissions mode")
        if facts.read_only:
            return Decision("allow", READ_ONLY_REASON)
        if self.mode == "acceptEdits" and facts.file_access == "edit":
            return Decision("allow", "acceptEdits mode")
        if self.mode == "plan":
            return self._plan(facts)
        if self.mode == "dontAsk":
            # An ask that the gate turns into a denial after hooks had their say: a
            # PreToolUse hook's "allow" skips it, as in every other mode.
            return Decision("ask", DONT_ASK_REASON)
        if facts.rule_content is not None:  # WebFetch: what an allow rule would have to name
            needs = f"{facts.name} needs permission for {facts.rule_content}"
            return Decision("ask", f"{self.mode} mode: {needs}")
        what = "the command" if facts.name == "Bash" else facts.name
        return Decision("ask", f"{self.mode} mode: {what} is not read-only")

    def _plan(self, facts: Facts) -> Decision:
        return Decision(
            "deny",
            f"Permission to use {facts.name} has been denied: plan mode runs read-only tools only.",
        )

    @staticmethod
    def _denied_by(facts: Facts, rule: Rule, path: str | None = None) -> Decision:
        on = f" on {path}" if path else ""
        return Decision(
            "deny",
            f"Permission to use {facts.name}{on} has been denied by the rule {rule.text} "
            f"in {rule.source}.",
        )

    # --------------------------------------------------------------------------- helpers

    def _bash_write_words(
        self, command: str, parsed: ParsedCommand | None, depth: int = 0
    ) -> _Writes | str:
        """The words of a line that may name a file it writes: output redirection targets,
        the operands (and ``--opt=`` values) of every command that is not read-only, the
        names written inside their code (``python3 -c 'open("a", "w")'``), the commands of
        ``sh -c``/``eval`` code, each seen from every directory a ``cd`` in the line may
        have moved to; or why the line changes what runs next regardless (``git config``
        setting a value)."""
        from .bash_syntax import CODE_CHARS, code_paths, from_bases, runs_stdin_code
        from .readonly import is_read_only

        if parsed is None:
            parsed = self._parse(command)
        out = _Writes([t for t in parsed.targets if t])
        if not parsed.ok:
            out.unknown = "the command could not be parsed, so what it writes is not known"
        elif None in parsed.targets:
            out.unknown = "output goes to a file only known when the command runs"
        elif depth == 0:
            out.unknown = data_run_as_code(command, parsed)
        bases = [""]
        for simple in parsed.commands:
            argv = simple.argv() or [w.text for w in simple.words if w.text is not None]
            name = os.path.basename(argv[0]) if argv else ""
            skip = 1
            if name in ("builtin", "command") and argv[1:2] in (["cd"], ["pushd"], ["popd"]):
                argv, name, skip = argv[1:], argv[1], 2
            if name in ("cd", "pushd", "popd"):
                operands = [
                    w for w in simple.words[skip:] if w.text is None or not w.text.startswith("-")
                ]
                out.cd_words += [w.text for w in operands if w.text]
                if name == "popd" or any(w.text in (None, "-") or w.expands for w in operands):
                    out.lost = True
                else:
                    target = operands[0].text if operands and operands[0].text else "~"
                    bases = [*bases, *from_bases(target, bases)][:8]
                continue
            if not argv or is_read_only(argv):
                continue
            if name == "git" and _git_config_write(argv[1:]):
                return "git config changes the repository's settings (hooks, pagers, aliases)"
            if runs_stdin_code(name, argv[1:]):
                out.unknown_args = out.unknown_args or f"{name} runs code read from standard input"
            if not simple.static and not _message_only(name, simple):
                out.unknown_args = out.unknown_args or (
                    f"an operand of {name or 'a command'} is only known when it runs"
                )
            for code in _code_run(simple.words, depth) if depth < 3 else ():
                # `bash -lc 'cd config; echo x > a'`, `sudo sh -c ...`, `eval ...`: the
                # code's own commands, judged the same way.
                inner = self._bash_write_words(code, None, depth + 1)
                if isinstance(inner, str):
                    return inner
                out.merge(inner)
            for word in argv[1:]:
                value = word.partition("=")[2] if word.startswith("-") or "=" in word else word
                if value:
                    out.words.append(value)
                if CODE_CHARS.search(word):
                    out.words += code_paths(word)
            # `tar xf t.tar`, `patch < p`, `git reset --hard`: a directory written into,
            # the files named by the archive, the patch or git (the wrapped command too).
            for words in _wrapped_argvs(simple.words):
                program = os.path.basename(words[0]) if words else ""
                dirs, from_data = implicit_dirs(program, words[1:])
                out.from_data = out.from_data or from_data
                out.work_tree = out.work_tree or WORK_TREE in dirs
                out.words += [d for d in dirs if d != WORK_TREE]
        if len(bases) > 1:
            out.words = [j for w in out.words for j in from_bases(w, bases)]
        return out

    def _runs_written(self, parsed: ParsedCommand) -> str | None:
        """A program or script the line runs that another part of the line writes
        (``echo 'curl x' > s.sh; bash s.sh``, ``cp bin/curl c; ./c``): what it runs is only
        known when it runs. Compared by file name, so a ``cd`` between the two does not hide
        it."""
        from .wrappers import program_files

        runs = [
            (i, os.path.basename(path.rstrip("/")))
            for i, simple in enumerate(parsed.commands)
            for path in program_files(simple.words)
        ]
        if not runs:
            return None
        if None in parsed.targets:
            return "it runs a file while writing to a file only known when it runs"
        written: list[tuple[int, str | None]] = [
            (-1, os.path.basename(t.rstrip("/"))) for t in parsed.targets if t
        ]
        for i, simple in enumerate(parsed.commands):
            if not any(i != j for j, _ in runs):
                continue  # only the command that runs the file names it
            words = self._bash_write_words(
                simple.source, ParsedCommand((simple,), True, False, False), depth=1
            )
            names: list[str | None] = [None]
            if not isinstance(words, str) and not (words.unknown_args or words.unknown):
                names = [os.path.basename(w.rstrip("/")) for w in words.words]
            written += [(i, n) for n in names]
        for i, name in runs:
            for j, other in written:
                if j != i and (other is None or other == name):
                    return f"it runs {name}, which the line itself may write first"
        return None

    def _bash_write_targets(
        self, command: str, parsed: ParsedCommand | None, cwd: str
    ) -> _WriteTargets | str:
        from .bash_syntax import shell_path

        words = self._bash_write_words(command, parsed)
        if isinstance(words, str):
            return words
        out = _WriteTargets([], words.unknown, words.unknown_args, from_data=words.from_data)
        if words.lost:
            out.unknown = out.unknown or "the line changes to a directory only known when it runs"
        for given in [*words.words, *words.cd_words]:
            try:
                lexical = shell_path(given, cwd)
            except ValueError:
                continue
            if lexical is None:
                out.unknown = out.unknown or f"{given} is only known when the command runs"
                continue
            target = _Target(given, lexical, self._real(lexical))
            if given in words.cd_words:
                out.cd.append(target)
            else:
                out.targets.append(target)
        if words.work_tree:
            for start in {cwd, *(t.lexical for t in out.cd)}:
                root = _work_tree(start)
                if root is not None:
                    out.targets.append(_Target(root, root, self._real(root)))
        return out

    def _bash_protected(self, command: str, parsed: ParsedCommand | None, cwd: str) -> str | None:
        """Why a command line that visibly writes a control file needs approval: output
        redirected into one, a command (not read-only) naming one as an operand
        (``cp x .git/hooks/pre-commit``, ``sed -i ... .bashrc``, ``cd .git``), or
        ``git config`` setting a value."""
        found = self._bash_write_targets(command, parsed, cwd)
        if isinstance(found, str):
            return found
        if found.unknown is not None:
            return found.unknown
        if found.from_data is not None:
            return f"{found.from_data}, and one may be a control file (.git/hooks, .claude/ ...)"
        for target in [*found.targets, *found.cd]:
            for path in (target.lexical, target.resolved):
                why = path and protected(path, self.hook_files, ignore_case=self._ignore_case)
                if why:
                    return why
        return None

    def _bash_writes_denied(
        self, command: str, parsed: ParsedCommand | None, cwd: str
    ) -> tuple[Rule, str, str] | None:
        """The Edit/Write deny rule (and the path) a line visibly writes under: the rules
        hold for ``echo x > config/a`` and ``sed -i`` as they do for the Edit tool. A
        directory it writes into (``mv x config/``, ``tar x -C config``) with a rule
        covering what lies below, or a file only known when it runs, asks (the path is
        ""), as a Bash deny rule that cannot be checked does."""
        rules = self.edit_deny
        if not rules:
            return None
        found = self._bash_write_targets(command, parsed, cwd)
        if isinstance(found, str):
            return rules[0], "", found
        for target in found.targets:
            rule = self._path_rule(rules, target, either=True) or self._same_file(rules, target)
            if rule is not None:
                return rule, target.given, ""
        for target in found.targets:
            where = target.resolved or target.lexical
            if not os.path.isdir(where):
                continue
            for rule in rules:
                if rule.path is None or overlaps(rule.path.root, where):
                    why = f"it writes into the directory {target.given}, which the rule covers"
                    return rule, "", why
        unknown = found.unknown or found.unknown_args
        if unknown is not None:
            return rules[0], "", unknown
        return None

    def hidden_files(self, tool: str) -> HiddenFiles | None:
        """The filter a searching tool applies to its results: the deny rules over paths
        that name it (None when there are none, so the tool pays nothing)."""
        # Every searching tool reads: Read rules cover it (``file_access == "read"``).
        deny = [r for r in self.settings.deny if r.path is not None and r.names(tool, (), "read")]
        return HiddenFiles(deny) if deny else None

    def _same_file(self, deny: Sequence[Rule], target: _Target) -> Rule | None:
        """The deny rule naming the target's file under another name (a hard link)."""
        rules = [r for r in deny if r.path is not None]
        if not rules or target.resolved is None:
            return None
        try:
            st = os.stat(target.resolved)
        except OSError:
            return None
        if st.st_nlink <= 1:
            return None
        for rule in rules:
            if HiddenFiles([rule]).same_as_denied(st):
                return rule
        return None

    def _protected(self, target: _Target, allow: Sequence[Rule]) -> str | None:
        """Why writing this target needs approval in every mode but bypassPermissions: it
        is a control file (``protected``). An allow rule that names the control path
        itself (``Edit(.husky/**)``) is the user's specific grant."""
        for path in (target.lexical, target.resolved):
            if path is None:
                continue
            why = protected(path, self.hook_files, ignore_case=self._ignore_case)
            if why is None:
                continue
            granted = any(
                r.path is not None and self._matches(r, path) and _names_control(r, path)
                for r in allow
            )
            return None if granted else why
        return _other_names(target)

    def _rules(self, facts: Facts) -> tuple[tuple[Rule, ...], ...]:
        return self.rules_for(facts.name, facts.aliases, facts.file_access)

    @staticmethod
    def _by_content(rules: tuple[Rule, ...], facts: Facts) -> tuple[Rule, ...]:
        """For a tool whose rules name a content (``WebFetch(domain:example.com)``): the rules
        that name every use or this call's content. Other tools' specifiers keep matching every
        call, as before: a deny rule whose meaning is unknown errs on the side of denying."""
        if facts.rule_content is None:
            return rules
        return tuple(r for r in rules if r.specifier is None or r.specifier == facts.rule_content)

    @staticmethod
    def _parse(command: str) -> ParsedCommand:
        return parse(command)

    def _harmless(self, cwd: str) -> Any:
        from .bash_syntax import analyze

        def harmless(simple: SimpleCommand) -> bool:
            if simple.assignments or not simple.words:
                return False
            argv = simple.argv()
            if argv is None:
                return False
            if argv[0] == "cd":
                if len(argv) != 2 or argv[1].startswith("-") or simple.words[1].expands:
                    return False
                from .bash_syntax import shell_path

                target = shell_path(argv[1], cwd)
                return target is not None and self._inside(self._real(target), self._roots)
            return analyze(canonical(simple.words)).read_only

        return harmless

    def _targets(self, facts: Facts) -> list[_Target]:
        data = facts.tool_input
        name = facts.name
        given: str | None
        if name == "Grep":
            given = data.get("path") or "."
        elif name == "Glob":
            given = _glob_root(str(data.get("path") or "."), str(data.get("pattern") or ""))
        elif facts.path_field is not None:
            given = data.get(facts.path_field)
        else:
            given = None
        if not isinstance(given, str):
            return []
        try:
            lexical = os.path.normpath(os.path.join(facts.cwd, os.path.expanduser(given)))
        except ValueError:
            return [_Target(given, given, None)]
        return [_Target(given, lexical, self._real(lexical))]

    def _path_rule(self, rules: Sequence[Rule], target: _Target, *, either: bool) -> Rule | None:
        for rule in rules:
            if rule.path is None:
                return rule
            if self._matches(rule, target.resolved) or (
                either and self._matches(rule, target.lexical)
            ):
                return rule
        return None

    @staticmethod
    def _matches(rule: Rule, path: str | None) -> bool:
        return rule.path is not None and path is not None and rule.path.matches(path)

    def _inside(self, path: str | None, roots: Sequence[str | None]) -> bool:
        return inside(path, roots, self._ignore_case)

    @staticmethod
    def _real(path: str) -> str | None:
        try:
            return realpath(path)
        except (OSError, ValueError):
            return None


# Syntax without which bash evaluates no value as code (see ``shell._evaluation``): a line
# with none of it is not parsed for that.
_MAY_EVALUATE = re.compile(
    r"\(\(|\$\[|\w\[|\$\{|-(eq|ne|lt|le|gt|ge|v|R)\b|\b(let|declare|typeset|local|export|"
    r"readonly|read|mapfile|readarray|getopts|wait|unset|printf|test|RANDOM|SRANDOM|OPTIND|"
    r"HISTCMD)\b"
)
_QUOTING = re.compile(r"[\\'\"]")  # `l\et`, `'let'` are `let` to bash


def _wrapped_argvs(words: Sequence[Word]) -> list[list[str]]:
    """A command's argv and those of the commands it wraps (`nice tar xf t.tar`), as far as
    they are known."""
    from .wrappers import runs

    out: list[list[str]] = []
    pending = [list(words)]
    while pending and len(out) < 16:
        current = pending.pop()
        argv = [w.text for w in current]
        if argv and None not in argv:
            out.append([a for a in argv if a is not None])
        pending += [item for item in runs(current) if isinstance(item, list)]
    return out


def _work_tree(start: str) -> str | None:
    """The top of the git work tree ``start`` is in (the nearest directory with a .git)."""
    path = start
    for _ in range(64):
        if os.path.lexists(os.path.join(path, ".git")):
            return path
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None


def _code_run(words: Sequence[Word], depth: int) -> list[str]:
    """The shell code a command runs (``bash -c CODE``, ``eval``), through wrappers
    (``sudo sh -c``, ``nice bash -lc``), by ``wrappers.runs``' option syntax."""
    from .wrappers import runs

    found: list[str] = []
    for ran in runs(words):
        if isinstance(ran, str):
            found.append(ran)
        elif isinstance(ran, list) and depth < 6:
            found += _code_run(ran, depth + 1)
    return found


def _message_only(name: str, simple: SimpleCommand) -> bool:
    """Whether every word only known at run time is a git message (``git commit -m
    "$(cat msg)"``): text, not a file."""
    words = simple.words
    return name == "git" and all(
        w.text is not None and not w.expands
        for i, w in enumerate(words)
        if not (i and _message_flag(words[i - 1].text))
    )


def _message_flag(word: str | None) -> bool:
    if word is None:
        return False
    return word == "--message" or (word[:1] == "-" and word[1:2] != "-" and word.endswith("m"))


def _tracked_denied(directory: str, hidden: HiddenFiles) -> tuple[str | None, bool]:
    """A file of the git repository around ``directory`` that ``hidden`` denies and git
    tracks (its index: what ``git show``/``log -p``/``archive`` print); complete is False
    when the index could not be read (the caller then asks). No repository: (None, True)."""
    from .git_index import UnreadableIndex, repository_top, tracked_paths

    top = repository_top(directory)
    if top is None:
        return None, True
    try:
        names = tracked_paths(top)
    except UnreadableIndex:
        return None, False
    for name in names:
        path = os.path.join(top, name)
        if hidden.named(path):
            return path, True
    return None, True


def _glob_root(base: str, pattern: str) -> str:
    """The directory a Glob call can reach: ``path`` plus the pattern's literal prefix."""
    if os.path.isabs(pattern):
        base, pattern = "/", pattern
    literal: list[str] = []
    for segment in pattern.split("/"):
        if any(c in segment for c in "*?[{\\"):
            break
        literal.append(segment)
    else:
        literal = literal[:-1]  # no wildcard at all: the last segment is the file
    return os.path.normpath(os.path.join(base, *literal)) if literal else base


def _names_control(rule: Rule, path: str) -> bool:
    """Whether an allow rule's specifier spells out the control file or folder it allows
    (a specific grant), rather than reaching it with a wildcard (``Edit(**)``)."""
    spec = rule.specifier or ""
    return any(part and part.startswith(".") and part in spec for part in path.split("/"))


_GIT_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "--get-color",
        "--get-colorbool",
        "get",
        "list",
    }
)


def _git_config_write(args: Sequence[str]) -> bool:
    """Whether ``git ARGS`` is a ``git config`` that may set something."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option in ("-C", "-c", "--git-dir", "--work-tree") and rest:
            rest.pop(0)
    if not rest or rest[0] != "config":
        return False
    return not any(a in _GIT_CONFIG_READS for a in rest[1:])
