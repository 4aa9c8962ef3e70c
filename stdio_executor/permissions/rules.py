"""Permission rules in Claude Code's settings format, and how one call matches them.

Owns: parsing ``Tool`` and ``Tool(specifier)``; which tools a rule names (``Read`` rules also
cover Glob and Grep, ``Edit`` rules also cover Write, ``mcp__server`` covers every tool of
that server); Bash specifiers (an exact command, ``prefix:*``, ``*`` wildcards) matched
against each simple command of a parsed command line; file specifiers as gitignore patterns
(the glob language is ``globs``, the one the Glob tool uses)
anchored the way Claude Code anchors them (``//abs``, ``~/home``, ``/`` = the settings
file's project, anything else = the workspace).
Must not: read settings files, touch the clock, or know about modes (``policy`` does).

Bash matching works on a canonical form of each simple command: its words after quote
removal, re-quoted only where needed and joined by single spaces. The rule's specifier is
brought into the same form, so ``Bash(git commit -m "x")`` matches ``git commit -m 'x'``,
and quoting tricks (``'rm' -rf``, ``r\\m``) cannot slip past a deny rule. A deny or ask rule
matches a command line when it matches *any* of its simple commands (including those inside
``$(...)``, subshells, code handed to a shell, and behind wrappers: ``wrappers`` says what
a command runs), and *might* match one it cannot resolve: then the call asks in every mode
(expansion in the command word, an interpreter's code, a program-selecting variable, an
unknown program whose operands name the rule's program). An allow rule set allows a line
only when *every* simple command is allowed and the line is plain (see ``shell``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence

import msgspec

from ..globs import path_regex
from .shell import ParsedCommand, SimpleCommand, Word, parse

__all__ = [
    "BashPattern",
    "PathPattern",
    "Rule",
    "RuleError",
    "bash_allowed",
    "bash_first_match",
    "canonical",
    "data_run_as_code",
    "parse_rule",
]


class RuleError(ValueError):
    """A rule string that cannot be read (the message says why)."""


# Which tools a file rule speaks for. Claude Code applies Edit rules to every tool that
# edits files and, as best effort, Read rules to every tool that reads them: a tool says
# which it does (``ToolSpec.file_access``); the rest name themselves only.
_COVERS = {
    "Read": frozenset({"Read", "Glob", "Grep"}),
    "Edit": frozenset({"Edit", "Write"}),
    "Write": frozenset({"Write"}),
    "Glob": frozenset({"Glob"}),
    "Grep": frozenset({"Grep"}),
    "MultiEdit": frozenset({"MultiEdit"}),
    "NotebookEdit": frozenset({"NotebookEdit"}),
    "LS": frozenset({"LS"}),
}
_BY_ACCESS = {"read": "Read", "edit": "Edit"}
# Rule names whose specifier is a path pattern.
PATH_TOOLS = frozenset(_COVERS)
_RULE = re.compile(r"([A-Za-z0-9_.*-]+)(?:\((.*)\))?", re.DOTALL)


class Rule(msgspec.Struct, frozen=True):
    text: str
    tool: str
    specifier: str | None  # None: every use of the tool
    source: str  # the settings file it came from
    bash: BashPattern | None = None
    path: PathPattern | None = None

    def describe(self) -> str:
        return f"{self.text} (from {self.source})"

    def names(self, tool: str, aliases: Sequence[str] = (), access: str | None = None) -> bool:
        """Whether the rule is about this tool at all (its specifier aside); ``access`` is
        the tool's file access ("read" / "edit"), which Read / Edit rules cover."""
        if self.tool.startswith("mcp__") and tool.startswith("mcp__"):
            server = self.tool.removesuffix("__*")
            if "__" not in server[len("mcp__") :]:
                return tool.startswith(server + "__")
            return tool == self.tool
        covered = _COVERS.get(self.tool, frozenset({self.tool}))
        if tool in covered or any(a in covered for a in aliases):
            return True
        return access is not None and _BY_ACCESS.get(access) == self.tool


def parse_rule(
    text: str,
    source: str,
    *,
    base_dir: str,
    workspace: str,
    home: str,
    ignore_case: bool = False,
) -> Rule:
    """Read one rule; ``base_dir`` is what ``/path`` specifiers are relative to."""
    if not isinstance(text, str) or not text.strip():
        raise RuleError("a rule must be a non-empty string")
    m = _RULE.fullmatch(text.strip())
    if m is None:
        raise RuleError(
            f"{text!r} is not a rule: expected `Tool` or `Tool(specifier)`, e.g. "
            "`Bash(npm run test:*)` or `Read(./src/**)`"
        )
    tool, spec = m.group(1), m.group(2)
    if spec is not None and spec.strip() in ("", "*"):
        spec = None  # `Bash()` and `Bash(*)` mean every use, like `Bash`
    rule = Rule(text.strip(), tool, spec, source)
    if spec is None:
        return rule
    if tool == "Bash":
        return Rule(rule.text, tool, spec, source, bash=BashPattern.compile(spec))
    if tool in PATH_TOOLS:
        path = PathPattern.compile(
            spec, base_dir=base_dir, workspace=workspace, home=home, ignore_case=ignore_case
        )
        return Rule(rule.text, tool, spec, source, path=path)
    return rule  # other specifiers (WebFetch(domain:...)) name nothing this daemon runs


# ------------------------------------------------------------------------------- Bash

_SAFE_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


def _quote(word: str) -> str:
    if _SAFE_WORD.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def canonical(words: Sequence[Word]) -> str:
    """One simple command as rules see it: known words re-quoted, others as written."""
    return " ".join(
        _quote(w.text) if w.text is not None and not w.expands else w.raw for w in words
    )


class _Wild:
    """An unquoted ``*`` in a rule's specifier."""


_WILD = _Wild()
_Part = str | _Wild


class BashPattern(msgspec.Struct, frozen=True):
    spec: str
    regex: re.Pattern[str]
    # The whole specifier when it has no wildcard: compared with the whole command line.
    literal: str | None
    # The program the rule is about, or None if its first word has a wildcard.
    program: re.Pattern[str] | None
    # The same, as a name to look up in PATH (None: a wildcard in it).
    program_name: str | None = None

    @classmethod
    def compile(cls, spec: str) -> BashPattern:
        text = spec.strip()
        legacy = text.endswith(":*")
        if legacy:  # `npm run test:*` is the older spelling of `npm run test *`
            text = text[:-2] + " *"
        words = _spec_words(text)
        if not words:
            raise RuleError(f"Bash({spec}) has no command")
        wilds = sum(isinstance(p, _Wild) for word in words for p in word)
        pieces = [_word_regex(word) for word in words]
        if words[-1] == [_WILD] and wilds == 1:
            # A single trailing ` *` may match nothing: `ls *` allows `ls` (not `lsof`).
            regex = " ".join(pieces[:-1]) + "(?: .*)?"
        else:
            regex = " ".join(pieces)
        first = words[0]
        program = None if any(isinstance(p, _Wild) for p in first) else re.compile(pieces[0])
        literal = None if wilds or legacy else spec.strip()
        name = "".join(p for p in first if isinstance(p, str)) if program is not None else None
        return cls(spec, re.compile(regex, re.DOTALL), literal, program, name)

    def matches(self, text: str) -> bool:
        return self.regex.fullmatch(text) is not None


def _spec_words(spec: str) -> list[list[_Part]]:
    """A specifier split into words the way the shell would, unquoted ``*`` kept apart.

    An unbalanced quote is taken literally (Claude Code compares strings; such a rule
    stays usable).
    """
    words: list[list[_Part]] = []
    parts: list[_Part] = []
    buf: list[str] = []
    started = False
    i, n = 0, len(spec)

    def flush() -> None:
        if buf:
            parts.append("".join(buf))
            buf.clear()

    while i < n:
        ch = spec[i]
        if ch in " \t\n":
            flush()
            if started:
                words.append(_merge(parts))
                parts = []
                started = False
            i += 1
            continue
        started = True
        if ch == "\\" and i + 1 < n:
            buf.append(spec[i + 1])
            i += 2
        elif ch == "'" and (end := spec.find("'", i + 1)) >= 0:
            buf.append(spec[i + 1 : end])
            i = end + 1
        elif ch == '"' and (end := _closing_double(spec, i + 1)) >= 0:
            buf.append(re.sub(r'\\([$`"\\])', r"\1", spec[i + 1 : end]))
            i = end + 1
        elif ch == "*":
            flush()
            parts.append(_WILD)
            i += 1
        else:
            buf.append(ch)
            i += 1
    flush()
    if started:
        words.append(_merge(parts))
    return words


def _closing_double(spec: str, i: int) -> int:
    while i < len(spec):
        if spec[i] == "\\":
            i += 2
            continue
        if spec[i] == '"':
            return i
        i += 1
    return -1


def _merge(parts: list[_Part]) -> list[_Part]:
    if not parts:
        return [""]  # an empty quoted word: ''
    merged: list[_Part] = []
    for part in parts:
        if merged and isinstance(part, str) and isinstance(merged[-1], str):
            merged[-1] = merged[-1] + part
        else:
            merged.append(part)
    return merged


def _word_regex(word: list[_Part]) -> str:
    if all(isinstance(p, str) for p in word):
        return re.escape(_quote("".join(str(p) for p in word)))
    # A word with wildcards: literal pieces as written (a piece that would need quotes
    # then fails to match, which errs towards asking).
    return "".join(".*" if isinstance(p, _Wild) else re.escape(p) for p in word)


# Programs that run the rest of their arguments as a command and do nothing else: allow
# rules look through these (Claude Code strips them too). Deny and ask rules look through
# every wrapper ``wrappers`` knows, with its option syntax.
_NEUTRAL_WRAPPERS = frozenset({"timeout", "time", "nice", "nohup", "stdbuf"})
# Options of the neutral wrappers that take a value as the next word.
_OPTION_ARGS = {
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
}
_MAX_DEPTH = 4
_MAX_HOPS = 8

# Programs known never to run one of their operands as a command. Any other program whose
# operands name the program of a deny or ask rule (`chronic rm x`, `tmux new 'rm x'`)
# *might* run it: the call then asks (see ``bash_first_match``). Deliberately absent: `hash`
# (`hash -p /bin/rm ls`), `enable`, `man` (`-P pager`), `tar` (`--to-command`, `-I`),
# `zip` (`-TT`), `wget` (`--use-askpass`).
_NON_RUNNERS = frozenset(
    [
        "echo",
        "printf",
        "cd",
        "pushd",
        "popd",
        "dirs",
        "mkdir",
        "rmdir",
        "rm",
        "unlink",
        "touch",
        "cp",
        "mv",
        "ln",
        "chmod",
        "chown",
        "chgrp",
        "tee",
        "kill",
        "pkill",
        "killall",
        "pgrep",
        "ps",
        "whatis",
        "apropos",
        "whereis",
        "which",
        "type",
        "help",
        "unset",
        "shift",
        "wait",
        "jobs",
        "fg",
        "bg",
        "umask",
        "ulimit",
        "mkfifo",
        "mknod",
        "truncate",
        "true",
        "false",
        "test",
        "[",
        "[[",
        "exit",
        "return",
        "break",
        "continue",
        "shopt",
        "history",
        "disown",
        "logout",
        "times",
        "compgen",
        "complete",
        "cat",
        "ls",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "diff",
        "cmp",
        "stat",
        "du",
        "df",
        "file",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "sleep",
        "date",
        "pwd",
        "id",
        "whoami",
        "uname",
        "seq",
        "jq",
        "column",
        "tree",
        "od",
        "hexdump",
        "strings",
        "nl",
        "fold",
        "rev",
        "tac",
        "printenv",
        "locale",
        "nproc",
        "arch",
        "groups",
        "touch",
        "curl",
        "gzip",
        "gunzip",
        "xz",
        "bzip2",
        "chattr",
        "lsattr",
        "sync",
    ]
)
# Variables that choose which program runs, or hold code a program runs: an assignment to
# one makes every later command of the line (or the prefixed one) unknown.
_PROGRAM_VARIABLES = re.compile(
    r"PATH|LD_\w+|DYLD_\w+|BASH_ENV|ENV|PROMPT_COMMAND|PS[0-4]|IFS|SHELLOPTS|BASHOPTS|"
    r"BASH_FUNC_.*|GIT_\w+|PAGER|EDITOR|VISUAL|MANPAGER|BROWSER|LESSOPEN|LESSCLOSE|"
    r"\w*ASKPASS|NODE_OPTIONS|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|"
    r"RUBYOPT|RUBYLIB|\w+_(COMMAND|CMD|PAGER|EDITOR|PROGRAM)"
)
_ASSIGNING = frozenset(
    {
        "export",
        "declare",
        "typeset",
        "local",
        "readonly",
        "read",
        "printf",
        "mapfile",
        "readarray",
        "getopts",
        "let",
    }
)
_TOKEN = re.compile(r"[\s;&|()<>'\"`=:,@{}]+")


def _unwrap(words: Sequence[Word], wrappers: frozenset[str]) -> list[Word] | None:
    """The command a neutral wrapper runs (``timeout 5 npm test`` -> ``npm test``), or None
    (allow rules only; anything unusual is not looked through, so it asks)."""
    if not words or words[0].text is None or words[0].expands:
        return None
    name = os.path.basename(words[0].text)
    if name not in wrappers:
        return None
    rest = list(words[1:])
    takes = _OPTION_ARGS.get(name, set())
    while rest:
        word = rest[0].text
        if word is None or rest[0].expands:
            return None
        if word == "--":
            rest = rest[1:]
            break
        if not word.startswith("-") or word == "-":
            break
        rest = rest[1:]
        if word in takes and "=" not in word:
            rest = rest[1:]
    if name == "timeout" and rest:
        rest = rest[1:]  # the duration
    return rest or None


def _variants(words: Sequence[Word], wrappers: frozenset[str]) -> Iterator[list[Word]]:
    """The command itself, then what each neutral wrapper around it runs."""
    current: list[Word] | None = list(words)
    seen = 0
    while current and seen < _MAX_HOPS:
        yield current
        current = _unwrap(current, wrappers)
        seen += 1


class _Candidate(msgspec.Struct, frozen=True):
    text: str
    certain: bool  # every word is known: a rule that does not match this text cannot match
    program: str | None
    # Words of a program that might run one of them as a command (see _NON_RUNNERS).
    tokens: tuple[str, ...] = ()


_UNKNOWN_CANDIDATE = _Candidate("", False, None)


def _program_text(word: Word) -> str | None:
    """The command word as the shell will run it, or None if the shell still changes it:
    globs and braces, `~user`, a line continuation inside the word, `$`..."""
    text = word.text
    if text is None or word.expands or "\\\n" in word.raw:
        return None
    if text.startswith("~") and not text.startswith("~/"):
        return None
    return text


def _candidates(
    command: SimpleCommand, depth: int, who: _Identities | None = None
) -> Iterator[_Candidate]:
    for word in command.assignments:
        if _risky_assignment(word):
            yield _UNKNOWN_CANDIDATE
    yield from _expand(list(command.words), depth, 0, who)


def _risky_assignment(word: Word) -> bool:
    name = (word.text if word.text is not None else word.raw).partition("=")[0]
    return _PROGRAM_VARIABLES.fullmatch(name.lstrip("-")) is not None


def _expand(
    words: list[Word], depth: int, hops: int, who: _Identities | None = None
) -> Iterator[_Candidate]:
    if not words:
        return
    text = _program_text(words[0])
    program = None if text is None else _quote(text)
    certain = program is not None and all(w.text is not None and not w.expands for w in words)
    yield _Candidate(canonical(words), certain, program)
    if text is not None and "/" in text and os.path.basename(text):
        base = os.path.basename(text)  # `/bin/rm` is `rm` to a deny rule
        yield _Candidate(canonical([Word(base, base), *words[1:]]), certain, _quote(base))
    if text is not None and who is not None:
        # The rule's program under another name: a symlink or hard link to it (`./x` made
        # by `ln -s /bin/rm x`), or a path that does not exist yet (made earlier in the line).
        named = who.name_of(text)
        if named is _NOT_THERE:
            yield _UNKNOWN_CANDIDATE
        elif named is not None and named != os.path.basename(text):
            yield _Candidate(canonical([Word(named, named), *words[1:]]), certain, _quote(named))
    if text is None:
        return
    name = os.path.basename(text)
    if name in _ASSIGNING and any(_risky_assignment(w) for w in words[1:]):
        yield _UNKNOWN_CANDIDATE
    if hops >= _MAX_HOPS or depth >= _MAX_DEPTH:
        yield _UNKNOWN_CANDIDATE
        return
    # The Bash tables load with the first Bash rule matched, not with every daemon (start-up).
    from .readonly import is_read_only
    from .wrappers import handled, runs

    inner = runs(words)
    for item in inner:
        if isinstance(item, str):
            parsed = parse(item)
            if not parsed.ok:
                yield _UNKNOWN_CANDIDATE
            for sub in parsed.commands:
                yield from _candidates(sub, depth + 1, who)
        elif isinstance(item, list):
            yield from _expand(item, depth, hops + 1, who)
        else:
            yield _UNKNOWN_CANDIDATE
    if not inner and name not in _NON_RUNNERS and not handled(name):
        argv = [w.text for w in words]
        if None in argv or not is_read_only([a for a in argv if a is not None]):
            tokens = tuple(
                os.path.basename(t)
                for w in words[1:]
                if w.text is not None
                for t in _TOKEN.split(w.text)
                if t
            )
            if tokens:
                yield _Candidate("", True, program, tokens)


def bash_first_match(
    command: str, parsed: ParsedCommand | None, rules: Sequence[Rule], cwd: str | None = None
) -> tuple[Rule | None, Rule | None]:
    """The first rule (deny or ask) that matches any part of the command line, and, if
    none does, a rule that might match a part only known at run time. ``cwd``: where the
    line runs, to tell which file a program path names (None: programs by name only)."""
    for rule in rules:
        if rule.bash is None:
            return rule, None
    whole = command.strip()
    for rule in rules:
        if rule.bash is not None and rule.bash.literal == whole:
            return rule, None
    if parsed is None:
        parsed = parse(command)
    unsure: Rule | None = None
    who = None if cwd is None else _Identities.of(rules, cwd)
    # The scheduler's lexer reads the line a second time: a deny rule must see what either
    # parser sees, should one of them misread it.
    for simple in (*parsed.commands, *_lexed(command)):
        for candidate in _candidates(simple, 0, who):
            for rule in rules:
                assert rule.bash is not None
                if candidate.text and rule.bash.matches(candidate.text):
                    return rule, None
            if unsure is None and candidate.tokens:
                unsure = next((r for r in rules if _names_program(r, candidate.tokens)), None)
            if not candidate.certain and unsure is None:
                unsure = next((r for r in rules if _could_match(r, candidate)), None)
    if unsure is None and rules and data_run_as_code(command, parsed):
        unsure = rules[0]
    if unsure is None and rules and (not parsed.ok or _CONTINUATION.search(command)):
        # A line continuation glued to a word: bash joins the lines (`r\` newline `m` is
        # `rm`), parsers may not; what runs is not known for sure.
        unsure = rules[0]
    return None, unsure


def data_run_as_code(command: str, parsed: ParsedCommand | None = None) -> str | None:
    """Why bash may run code that no parser sees in the line: a value that could spell a
    command (``data``) and a place where bash evaluates a value as code (``evaluates``),
    anywhere in the line or in the shell code it runs (``export B='a[$(curl x)]'; bash -c
    'echo $((B))'``). None when there is not both."""
    if parsed is None:
        parsed = parse(command)
    found = [parsed.evaluates, parsed.data]
    _nested_evaluation(parsed, 0, found)
    if found[0] is None or found[1] is None:
        return None
    return f"bash may evaluate {found[1]} as code ({found[0]}): what that runs is not known before"


def _nested_evaluation(parsed: ParsedCommand, depth: int, found: list[str | None]) -> None:
    from .wrappers import runs

    pending: list[list[Word]] = [list(simple.words) for simple in parsed.commands]
    hops = 0
    while pending and hops < 64 and (found[0] is None or found[1] is None):
        hops += 1
        for item in runs(pending.pop()):
            if isinstance(item, list):
                pending.append(item)
            elif isinstance(item, str) and depth < _MAX_DEPTH:
                inner = parse(item)
                found[0] = found[0] or inner.evaluates
                found[1] = found[1] or inner.data
                _nested_evaluation(inner, depth + 1, found)


_CONTINUATION = re.compile(r"\S\\\n|\\\n\S")

_NOT_THERE = "\0not there"


class _Identities:
    """Which rule program a command word names, by the file it runs: a symlink or a hard
    link is the same program under another name. A copy is not (the sandbox, not the
    parser, limits what it can do)."""

    __slots__ = ("cwd", "files")

    def __init__(self, files: dict[tuple[int, int], str], cwd: str) -> None:
        self.files = files
        self.cwd = cwd

    @classmethod
    def of(cls, rules: Sequence[Rule], cwd: str) -> _Identities | None:
        names = tuple(
            sorted({r.bash.program_name for r in rules if r.bash and r.bash.program_name})
        )
        files = _program_files(names, os.pathsep.join(os.get_exec_path()))
        return cls(dict(files), cwd) if files else None

    def name_of(self, word: str) -> str | None:
        """The rule program ``word`` runs, ``_NOT_THERE`` for a path to nothing (yet), or
        None."""
        if "/" in word:
            from .bash_syntax import shell_path

            path = shell_path(word, self.cwd)
            if path is None:
                return None  # ~-/x: only the running shell knows
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return _NOT_THERE
            except OSError:
                return None
        else:
            found = shutil.which(word)
            if found is None:
                return None  # a builtin, a function, or not found at all
            try:
                st = os.stat(found)
            except OSError:
                return None
        return self.files.get((st.st_dev, st.st_ino))


@functools.lru_cache(maxsize=32)
def _program_files(names: tuple[str, ...], path: str) -> tuple[tuple[tuple[int, int], str], ...]:
    found = []
    for name in names:
        where = shutil.which(name, path=path)
        if where is None:
            continue
        real = os.path.realpath(where)
        if os.path.basename(real) != name:
            # A link to a file of another name (`rm -> busybox`): a multi-call binary, which
            # chooses what to do by the name it is called, so another name is not `rm`.
            continue
        try:
            st = os.stat(real)
        except OSError:
            continue
        found.append(((st.st_dev, st.st_ino), name))
    return tuple(found)


def _names_program(rule: Rule, tokens: Sequence[str]) -> bool:
    assert rule.bash is not None
    program = rule.bash.program
    return program is not None and any(program.fullmatch(t) for t in tokens)


_GLOBBY = re.compile(r"[*?\[{]")


def _lexed(command: str) -> list[SimpleCommand]:
    """The simple commands as the scheduler's conservative lexer reads them ([] when it
    cannot: substitutions, heredocs ... which tree-sitter handles)."""
    from .bash_syntax import split_quoted_words

    lexed = split_quoted_words(command)
    if lexed is None:
        return []
    out = []
    for pairs in lexed:
        words = [(t, q) for t, q in pairs if not t.startswith("\0redir:")]
        assignments = []
        while words and "=" in words[0][0] and words[0][0].partition("=")[0].isidentifier():
            assignments.append(Word(words[0][0], words[0][0]))  # NAME=value before the program
            words = words[1:]
        if words or assignments:
            out.append(
                SimpleCommand(
                    tuple(Word(t, t, not q and bool(_GLOBBY.search(t))) for t, q in words),
                    tuple(assignments),
                )
            )
    return out


def _could_match(rule: Rule, candidate: _Candidate) -> bool:
    assert rule.bash is not None
    if rule.bash.program is None or candidate.program is None:
        return True
    return rule.bash.program.fullmatch(candidate.program) is not None


def bash_allowed(
    command: str,
    parsed: ParsedCommand | None,
    rules: Sequence[Rule],
    harmless: Callable[[SimpleCommand], bool],
) -> tuple[list[Rule], str | None]:
    """The allow rules that together allow every part of the command line, or why not.

    ``harmless`` allows a simple command no rule names (a read-only one, a ``cd`` within the
    workspace): Claude Code does not ask about ``ls`` in ``npm test && ls`` either.
    """
    whole = command.strip()
    for rule in rules:
        if rule.bash is None or rule.bash.literal == whole:
            return [rule], None
    if parsed is None:
        parsed = parse(command)
    if not parsed.plain:
        why = parsed.problems[0] if parsed.problems else "the command is not a plain one"
        return [], why
    if parsed.writes:
        return [], "the command redirects output into a file"
    if not parsed.commands:
        return [], "the command is empty"
    used: list[Rule] = []
    for simple in parsed.commands:
        if not simple.static:
            return [], f"part of `{simple.source}` is only known when it runs"
        allowing = _allowing_rule(simple, rules)
        if allowing is not None:
            if allowing not in used:
                used.append(allowing)
            continue
        if harmless(simple):
            continue
        return [], f"`{simple.source}` is not allowed by any rule"
    return used, None


def _allowing_rule(simple: SimpleCommand, rules: Sequence[Rule]) -> Rule | None:
    texts = [
        canonical([*simple.assignments, *words])
        for words in _variants(simple.words, _NEUTRAL_WRAPPERS)
    ]
    if not simple.words:
        texts = [canonical(simple.assignments)]
    for rule in rules:
        assert rule.bash is not None
        if any(rule.bash.matches(text) for text in texts):
            return rule
    return None


# ------------------------------------------------------------------------------- paths


class PathPattern(msgspec.Struct, frozen=True):
    """A gitignore pattern with the directory it is relative to."""

    spec: str
    base: str  # absolute, normalized
    regex: re.Pattern[str]
    anchored: bool  # matched against the whole relative path, else against any one name
    dir_only: bool
    ignore_case: bool
    # The directory every match lies under (base plus the pattern's literal leading
    # segments), and whether the pattern is one literal path: where to look for the files
    # a rule names (deny rules are also enforced on the identity of those files).
    root: str = ""
    literal: bool = False

    @classmethod
    def compile(
        cls, spec: str, *, base_dir: str, workspace: str, home: str, ignore_case: bool = False
    ) -> PathPattern:
        text = spec.strip()
        if text.startswith("//"):
            base, pattern, anchored = "/", text[2:], True
        elif text == "~" or text.startswith("~/"):
            base, pattern, anchored = home, text[2:], True
        elif text.startswith("/"):
            base, pattern, anchored = base_dir, text[1:], True
        elif text.startswith("./"):
            base, pattern, anchored = workspace, text[2:], True
        else:
            base, pattern = workspace, text
            anchored = "/" in pattern.rstrip("/")
        dir_only = pattern.endswith("/")
        pattern = pattern.strip("/")
        if not pattern:
            pattern, dir_only = "**", False  # `Read(//)`, `Read(~/)`: everything below
        flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
        regex = re.compile(path_regex(pattern), flags)  # one language with Glob
        root, literal = os.path.normpath(base), False
        if anchored:
            segments = pattern.split("/")
            fixed = [p for p in _takewhile_literal(segments)]
            root = os.path.normpath(os.path.join(base, *fixed)) if fixed else root
            literal = len(fixed) == len(segments)
        return cls(
            spec, os.path.normpath(base), regex, anchored, dir_only, ignore_case, root, literal
        )

    def matches(self, path: str, is_dir: Callable[[str], bool] = os.path.isdir) -> bool:
        """Whether an absolute, normalized ``path`` (or a directory above it) matches."""
        rel = _relative(path, self.base, self.ignore_case)
        if not rel:
            return False
        parts = rel.split("/")
        for k in range(1, len(parts) + 1):
            if self.dir_only and k == len(parts) and not is_dir(path):
                continue
            subject = "/".join(parts[:k]) if self.anchored else parts[k - 1]
            if self.regex.fullmatch(subject):
                return True
        return False


def _takewhile_literal(segments: list[str]) -> list[str]:
    out = []
    for segment in segments:
        if any(c in segment for c in "*?[\\"):
            break
        out.append(segment)
    return out


def _relative(path: str, base: str, ignore_case: bool) -> str | None:
    p, b = (path.casefold(), base.casefold()) if ignore_case else (path, base)
    if b == "/":
        return path.lstrip("/")
    if p == b:
        return None
    if p.startswith(b + "/"):
        return path[len(base) + 1 :]
    return None
