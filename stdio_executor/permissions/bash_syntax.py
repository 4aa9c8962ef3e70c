"""What a Bash command line does, as far as scheduling needs to know.

Owns: splitting a command into its simple commands (through pipelines, lists, subshells and
groups), deciding whether the *whole* command only reads (SPEC section 4), and whether exit
status 1 means "nothing found" rather than failure.
Must not: run anything. Wrong answers must err on the safe side: anything this lexer does
not fully understand (command substitution, process substitution, a heredoc, unbalanced
quotes, an unknown command) makes the command *not* read-only, which costs parallelism but
never correctness.

Words whose value is only known when bash runs them: a parameter expansion (``$X``,
``${X:-default}``, ``$'\\x2d'``), a glob (``*``, ``?``, ``[...]``) or a brace expansion
(``{a,b}``) can turn into an option (a file named ``--output=x`` in the directory,
``${X:---output=x}`` with X unset) or into more operands than were checked (``uniq *``
writes its second operand). Such a word is read-only only where that cannot matter: in a
program none of whose options writes or runs anything (``_ANY_ARGUMENTS``), or, for globs and
braces, when the expansion cannot start an option (a literal prefix such as ``src/*``, or
after ``--``) and the command stays read-only with one and with two words in its place.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import msgspec

from .readonly import is_read_only

if TYPE_CHECKING:
    from .shell import SimpleCommand

__all__ = [
    "CODE_CHARS",
    "CommandInfo",
    "ReadOperands",
    "analyze",
    "code_paths",
    "from_bases",
    "read_operands",
    "read_operands_parsed",
    "runs_stdin_code",
    "shell_path",
    "split_quoted_words",
    "split_simple_commands",
]

# Exit status 1 of these means "no match / differs / false", not "failed".
_NOTHING_FOUND = frozenset({"grep", "egrep", "fgrep", "rg", "diff", "cmp", "test", "["})

# A command line longer than this is not analyzed: it is not read-only (it runs alone and, in
# a mode that asks, asks). Lexing costs ~8 us per word in Python, and the validation runs in
# the event loop: a 64 MiB line of one-letter words would stall it for minutes.
MAX_ANALYZED = 256 * 1024

_OPERATORS = ("&&", "||", ";;", "|&", "|", ";", "&", "\n", "(", ")")
_SEPARATORS = frozenset({"&&", "||", ";", "\n", "|", "|&", "&", ";;"})


class CommandInfo(msgspec.Struct, frozen=True):
    read_only: bool
    # Exit status 1 is "nothing found" (a single pipeline ending in grep, diff, test...).
    exit_1_is_not_error: bool


class _Unsupported(Exception):
    pass


class _Word(msgspec.Struct):
    text: str
    quoted: bool = False
    # Where in ``text`` the first part bash expands starts (None: the word is literal), and
    # whether any such part is a parameter expansion (``$``) rather than a glob or brace.
    dynamic_at: int | None = None
    parameter: bool = False


# Programs whose every option, known or not, only changes what they print or read: a word
# that expands into any option or any number of operands cannot make them write or run
# anything. (Not: sort -o/--compress-program, rg --pre, tree -o, file -C, date -s, find's
# actions, git's --output and drivers, uniq's output operand, printf -v, jq.)
_ANY_ARGUMENTS = frozenset(
    [
        "arch",
        "b2sum",
        "basename",
        "cat",
        "cksum",
        "cmp",
        "column",
        "cut",
        "df",
        "diff",
        "dirname",
        "du",
        "echo",
        "egrep",
        "expr",
        "false",
        "fgrep",
        "fold",
        "grep",
        "groups",
        "head",
        "hexdump",
        "id",
        "locale",
        "ls",
        "md5sum",
        "nl",
        "nproc",
        "numfmt",
        "od",
        "printenv",
        "pwd",
        "readlink",
        "realpath",
        "rev",
        "seq",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "sleep",
        "stat",
        "strings",
        "tac",
        "tail",
        "test",
        "[",
        "tr",
        "true",
        "type",
        "uname",
        "wc",
        "which",
        "whoami",
    ]
)
# Characters after `$` that start an expansion (anything else leaves the `$` literal);
# `$[...]` is bash's old arithmetic expansion.
_EXPANSION_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789{['\"@*#?$!-"
)
_WORD_END = " \t\n;&|()<>"
_WORD_END_RE = re.compile("[ \t\n;&|()<>]")


def analyze(command: str) -> CommandInfo:
    try:
        tokens = _lex(command)
    except _Unsupported:
        return CommandInfo(False, False)
    commands, separators = _split(tokens)
    read_only = bool(commands) and all(_is_read_only(words) for words in commands)
    if "&" in separators:
        read_only = False  # a background job outlives the call
    last = commands[-1] if commands else []
    single_pipeline = not (set(separators) - {"|", "|&"})
    exit_1_ok = single_pipeline and bool(last) and _program(last) in _NOTHING_FOUND
    return CommandInfo(read_only, exit_1_ok)


class ReadOperands(msgspec.Struct):
    """The words of a read-only line that may name a file it reads or lists."""

    paths: list[str]  # literal: operands, option values, input redirections
    globs: list[str]  # a glob or brace word, as bash would match it (quotes removed)
    # Why the files read cannot be known before the line runs (a parameter expansion where
    # a path could be, a walk that follows symlinks), or None.
    unknown: str | None = None
    # A file operand (or shell code) only known when the line runs: ``cat $f``, ``eval "$c"``.
    dynamic: bool = False
    # Words a program may descend into when they name a directory (``grep -r KEY .``,
    # ``tar c secrets``, ``find . -exec cat {} +``), and globs of such words.
    trees: list[str] = []
    tree_globs: list[str] = []
    # Trees walked by a program that skips hidden files unless told (``rg KEY``).
    visible_trees: list[str] = []
    # The same for programs not known either way (``ruff check .``, ``docker build .``).
    maybe_trees: list[str] = []
    maybe_tree_globs: list[str] = []
    # Directories whose git repository's stored files a command prints (``git log -p``).
    git_trees: list[str] = []

    def merge(self, other: ReadOperands) -> None:
        """Take in what code run by the line reads (``sh -c``, ``eval``)."""
        for name in self.__struct_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, list):
                mine += theirs
        self.unknown = self.unknown or other.unknown
        self.dynamic = self.dynamic or other.dynamic


# Programs that read or list no file named by an operand (``test -e`` reveals existence
# only, like ``ls``'s error would; ``which``/``type`` search PATH).
_NO_FILE_OPERANDS = frozenset(
    {
        "arch",
        "basename",
        "date",
        "dirname",
        "echo",
        "expr",
        "false",
        "groups",
        "id",
        "locale",
        "nproc",
        "numfmt",
        "printenv",
        "printf",
        "pwd",
        "seq",
        "sleep",
        "test",
        "[",
        "true",
        "type",
        "uname",
        "which",
        "whoami",
    }
)
# Programs whose first operand is a pattern or a program text, not a file, unless an
# option gave it (-e/-f and their long forms).
_PATTERN_FIRST = {
    "grep": ("-e", "-f", "--regexp", "--file"),
    "egrep": ("-e", "-f", "--regexp", "--file"),
    "fgrep": ("-e", "-f", "--regexp", "--file"),
    "rg": ("-e", "-f", "--regexp", "--file"),
    "ugrep": ("-e", "-f", "--regexp", "--file"),
    "ug": ("-e", "-f", "--regexp", "--file"),
    "ag": (),
    "ack": ("--match",),
    "ack-grep": ("--match",),
    "pt": (),
    "sift": ("-e", "-f", "--regexp"),
    "zgrep": ("-e", "-f", "--regexp", "--file"),
    "jq": ("-f", "--from-file"),
}
# Shells whose -c operand is code (its commands' files are looked at too).
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox"})
# Programs whose last operand is where they write (unless -t names it): not a file read.
_COPIERS = frozenset({"cp", "mv", "rsync", "scp", "install", "ln"})
# Options that make a walk follow symbolic links (into anything they point at).
_FOLLOWS = {
    "grep": ("R", "--dereference-recursive"),
    "egrep": ("R", "--dereference-recursive"),
    "fgrep": ("R", "--dereference-recursive"),
    "rg": ("L", "--follow"),
    "ag": ("f", "--follow"),
    "find": ("L", "-follow"),
    "tree": ("l",),
    "du": ("L", "--dereference"),
    "ls": ("L", "--dereference"),
}


# Programs that look at names and metadata only, never at what a file holds: for Read
# deny rules their operands are not reads (`ls secrets/`, `rm .env`, `find . -name .env`).
# Every other program counts as reading its operands: an unknown program is assumed to.
_NAMES_ONLY = frozenset(
    {
        "chgrp",
        "chmod",
        "chown",
        "dir",
        "du",
        "find",
        "getfacl",
        "kill",
        "ls",
        "lsattr",
        "mkdir",
        "mkfifo",
        "namei",
        "readlink",
        "realpath",
        "rm",
        "rmdir",
        "stat",
        "touch",
        "tree",
        "unlink",
        "vdir",
    }
)
# find's actions that run a program on each file found.
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Programs that run a command on names read from standard input.
_RUN_STDIN_NAMES = frozenset({"xargs", "parallel"})
# Programs that change the working directory of the commands after them.
_CHDIR = frozenset({"cd", "pushd", "popd"})
_MAX_BASES = 8
# Programs that never descend into a directory operand: a directory among their operands
# is not a tree of files read. Every other program that reads may (cp -r, tar, zip, diff -r,
# rsync, an interpreter given a directory...).
_FLAT = frozenset(
    {
        "awk",
        "b2sum",
        "base64",
        "bzcat",
        "cat",
        "cksum",
        "cmp",
        "column",
        "comm",
        "csplit",
        "cut",
        "dd",
        "expand",
        "file",
        "fmt",
        "fold",
        "gawk",
        "head",
        "hexdump",
        "iconv",
        "jq",
        "join",
        "less",
        "look",
        "mawk",
        "md5sum",
        "more",
        "nawk",
        "nl",
        "od",
        "paste",
        "pr",
        "rev",
        "sed",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "shuf",
        "sort",
        "split",
        "strings",
        "sum",
        "tac",
        "tail",
        "tr",
        "unexpand",
        "uniq",
        "wc",
        "xxd",
        "xzcat",
        "zcat",
    }
)
# Programs that descend into directories only with one of these options.
_RECURSE_FLAGS: dict[str, tuple[str, frozenset[str]]] = {
    **{
        name: ("rR", frozenset({"--recursive", "--dereference-recursive"}))
        for name in ("grep", "egrep", "fgrep", "zgrep", "gzip", "bzip2", "xz", "zstd")
    },
    "cp": ("rRa", frozenset({"--recursive", "--archive"})),
    "diff": ("r", frozenset({"--recursive"})),
    "zip": ("r", frozenset({"--recurse-paths"})),
    "scp": ("r", frozenset()),
}
# Programs that always descend into a directory operand (and the walkers, below).
_RECURSIVE = frozenset(
    {"tar", "bsdtar", "rsync", "7z", "7za", "7zr", "rar", "jar", "pax", "sift", "pt"}
    | {"rg", "ag", "ack", "ack-grep", "ugrep", "ug"}
)
_RECURSE_VALUE = frozenset({"-d", "--directories"})
# Walkers that skip hidden files and directories (``.env``, ``.git``) unless one of these
# options (or ``-uu``) is given.
_SKIPS_HIDDEN = {
    "rg": frozenset({"--hidden", "-.", "--unrestricted"}),
    "ag": frozenset({"--hidden", "-u", "--unrestricted"}),
}
# Programs that search the working directory when given no path.
_WALKERS = frozenset({"rg", "ag", "ack", "ack-grep", "pt", "sift", "ugrep", "ug"})
# git commands that print what the repository stores (any tracked file's contents).
_GIT_SHOWS = frozenset(
    {
        "archive",
        "cat-file",
        "diff",
        "fast-export",
        "format-patch",
        "grep",
        "range-diff",
        "show",
    }
)
# git commands that print stored contents only with a patch option (``git log -p``).
_GIT_PATCHES = frozenset({"log", "reflog", "stash", "whatchanged"})
_GIT_PATCH_FLAGS = frozenset(
    {"-p", "-u", "--patch", "--cc", "--patch-with-stat", "--patch-with-raw", "--word-diff"}
)


def _git_shows(command: str, rest: list[_Word]) -> bool:
    if command in _GIT_SHOWS:
        return True
    return command in _GIT_PATCHES and any(
        _is_long(w.text, _GIT_PATCH_FLAGS) or w.text.startswith(("-L", "--word-diff=", "--color-w"))
        for w in rest
    )


# A word with one of these is code, a URL or an option's value rather than one path.
CODE_CHARS = re.compile(r"[\s()'\"=;,@:{}<>|&]")
_PIECES = re.compile(r"[^A-Za-z0-9_.~/+-]+")


def read_operands(command: str, *, contents: bool = False) -> ReadOperands | None:
    """The words of ``command`` that may name a file it reads or lists (``contents``: whose
    contents it shows, copies or runs; see ``_NAMES_ONLY``); None when the line cannot
    be understood. Errs towards more words: an option's value, a word that is really a
    pattern, every operand of a program that may read one, ``.`` for the working
    directory."""
    try:
        tokens = _lex(command)
    except _Unsupported:
        return None
    return _operands(_split(tokens)[0], contents)


def read_operands_parsed(commands: Sequence[SimpleCommand], *, contents: bool) -> ReadOperands:
    """``read_operands`` for a line this lexer cannot read (``$(...)``, a heredoc), from
    the shell parser's simple commands (those inside substitutions included). A word only
    known when the line runs counts as a parameter expansion; input redirections are not
    seen (the parser reports output targets only)."""
    lines = [
        [
            _Word(w.raw, False, 0, True)
            if w.text is None
            else _Word(w.text, False, 0 if w.expands else None, False)
            for w in (*simple.assignments, *simple.words)
        ]
        for simple in commands
    ]
    return _operands(lines, contents)


def _operands(commands: list[list[_Word]], contents: bool) -> ReadOperands:
    """``contents``: only what shows or copies contents (Read deny rules), else every
    file read or listed (reads outside the workspace)."""
    out = ReadOperands([], [])
    # Directories the line may have changed into (`cd secrets && cat key.txt`): a relative
    # operand after a `cd` is looked at from each; `lost`: a `cd` only known at run time.
    bases: list[str] = [""]
    lost = False
    queue = list(commands)
    git_stored: list[str] = []  # what a git command of the line stores (git add -A)
    taken = 0
    while taken < len(queue):
        words = queue[taken]
        taken += 1
        # Input redirections read their file whatever the program (`tr a a < .env`), and
        # with no program at all (`{ cat; } < .env`, `while ...; done < .env`).
        for word in words:
            if word.text.startswith("\0redir:<") and not word.text.startswith("\0redir:<<<"):
                target = word.text[len("\0redir:") :].removeprefix("<>").removeprefix("<")
                out.paths.extend(from_bases(target, bases))
        # The program: the first word that is neither an assignment nor a redirection
        # (`< .env cat` reads .env with cat).
        at = next(
            (i for i, w in enumerate(words) if not _is_assignment(w) and not _is_redirect(w)),
            None,
        )
        # Reserved words open the command they lead (`if grep -r KEY; then ...`).
        while (
            at is not None
            and at < len(words)
            and not words[at].quoted
            and (
                words[at].text in _RESERVED
                or (words[at].text == "-p" and at and words[at - 1].text == "time")
            )
        ):
            at += 1
        if at is None or at >= len(words):
            continue
        program = words[at].text
        before = [w for w in words[:at] if _is_assignment(w) or _is_redirect(w)]
        rest = before + words[at + 1 :]
        name = program.rpartition("/")[2]
        if contents and len(queue) < _MAX_COMMANDS:
            # What a wrapper runs is a command of the line too (`nice grep -r KEY`, `env
            # cat .env`, `timeout 5 rg KEY`); the wrapper's own words stay operands.
            queue[taken:taken] = _wrapped_commands(words[at:])
        if name in ("builtin", "command") and rest and rest[0].text in ("cd", "pushd", "popd"):
            name, rest = rest[0].text, rest[1:]
        if contents and runs_stdin_code(name, [w.text for w in rest if not _is_redirect(w)]):
            # Code from a file (`bash < x.sh`) is a script, like `bash x.sh`; from a pipe,
            # a here-string or a heredoc it is only known when the line runs.
            stdin = [w.text for w in words if w.text.startswith("\0redir:<")]
            if not stdin or any(t.startswith("\0redir:<<<") for t in stdin):
                out.unknown = out.unknown or f"{name} runs code read from standard input"
                out.dynamic = True
        if name in _CHDIR:
            bases, lost = _changed_dir(name, rest, bases, lost)
            if contents:
                continue
        if name in _NO_FILE_OPERANDS:
            continue
        walks_found = False
        tree_count = len(out.trees)
        if contents and name in _NAMES_ONLY:
            actions = [rest[i + 1].text for i, w in enumerate(rest[:-1]) if w.text in _FIND_RUNS]
            if name != "find" or all(
                a.rpartition("/")[2] in _NAMES_ONLY | _NO_FILE_OPERANDS for a in actions
            ):
                continue  # `find . -name '*.tmp' -exec rm {} +` reads no contents
            walks_found = True  # `find . -exec cat {} +`: what it runs reads what it finds
        git_sub, git_dir = _git_command(rest) if name == "git" else ("", ".")
        git_shows = name == "git" and _git_shows(git_sub, rest)
        if contents and git_sub in _GIT_STORES:
            # What it stores, a later command of the line may print (`git add -A; git
            # diff --cached`), before any index the check reads has it.
            after = rest[next(i for i, w in enumerate(rest) if w.text == git_sub) + 1 :]
            named = [w.text for w in after if not w.text.startswith("-")]
            every = not named or any(w.text in _GIT_STORE_ALL for w in after)
            git_stored += [p for d in ([git_dir] if every else named) for p in from_bases(d, bases)]
        if contents and name == "git" and not git_shows and not _is_read_only(words):
            # git shows contents only in its read-only commands (git rm --cached), but some
            # copy a file into what it stores or prints: a message or config file (`git
            # commit -F .env`, `git config -f .env -l`), a patch, trailers.
            for i, word in enumerate(rest):
                flag, eq, value = word.text.partition("=")
                if (flag in _GIT_FILE_FLAGS or (flag == "-f" and git_sub == "config")) and (
                    not word.quoted
                ):
                    named_file = value if eq else (rest[i + 1].text if i + 1 < len(rest) else "")
                    out.paths.extend(from_bases(named_file, bases) if named_file else [])
            if git_sub in _GIT_READS_OPERANDS:
                out.paths.extend(
                    p
                    for w in rest
                    if not w.text.startswith("-") and w.text != git_sub
                    for p in from_bases(w.text, bases)
                )
            continue
        if contents and name in _RUN_STDIN_NAMES:
            # `find secrets | xargs cat`: the files come from standard input at run time.
            runs = next((w.text for w in rest if not w.text.startswith("-")), "echo")
            if runs.rpartition("/")[2] not in _NO_FILE_OPERANDS | _NAMES_ONLY:
                out.unknown = out.unknown or f"{name} gives {runs} files only known when it runs"
                out.dynamic = True
        follows = _FOLLOWS.get(name, ())
        pattern_given = False
        # Whether a directory operand stands for the files below it: surely (`tar`, `rg`,
        # `grep -r`), maybe (a program not known either way: it asks), or not (`cat`).
        recursive = contents and name in _RECURSIVE
        maybe = contents and not recursive and name not in _FLAT and name not in _RECURSE_FLAGS
        # The working directory: where a program with no operand reads or walks.
        operands: list[_Word] = [_Word(".")]
        ended = skip = targeted = code = False
        # A shell's option values: `--rcfile FILE` is read (as code), `-o NAME` names an
        # option; neither is the `-c` string, which is the first operand after them.
        shell_value = ""
        previous = ""
        for word in rest:
            text = word.text
            if shell_value:
                if shell_value in ("--rcfile", "--init-file"):
                    out.paths.extend(from_bases(text, bases))
                shell_value = ""
                continue
            if _is_long(previous, _RECURSE_VALUE) and text == "recurse" and name in _RECURSE_FLAGS:
                recursive = contents  # `grep -d recurse`
            previous = text
            if skip:  # the pattern of -e PATTERN
                skip = False
                continue
            if text.startswith("\0redir:"):
                continue
            if contents and word.dynamic_at is None and CODE_CHARS.search(text):
                # Code, a URL or an option's value (`python -c 'open(".env")'`,
                # `curl -F f=@.env`, `git show HEAD:.env`): the names written in it.
                out.paths.extend(p for piece in code_paths(text) for p in from_bases(piece, bases))
            if name == "dd" and text.startswith("if="):
                operands.append(_Word(text[3:], word.quoted, word.dynamic_at, word.parameter))
                continue
            if name in _SHELLS and text in ("+o", "+O") and not word.quoted:
                shell_value = text
                continue
            if ended or not text.startswith("-") or text == "-" or word.quoted:
                operands.append(word)
                continue
            if text == "--":
                ended = True
                continue
            flag, eq, value = text.partition("=")
            letters = "" if flag.startswith("--") else flag[1:]  # a bundle: -rf FILE
            if name in _RECURSE_FLAGS:
                short, long = _RECURSE_FLAGS[name]
                if _is_long(flag, long) or any(c in letters for c in short) or value == "recurse":
                    recursive = contents
            if name in _SHELLS and "c" in letters:
                code = True  # the first operand is shell code: its commands are read too
            if name in _SHELLS and not eq and flag in ("-o", "-O", "--rcfile", "--init-file"):
                shell_value = flag
            if name in _COPIERS and (_is_long(flag, _TARGET) or "t" in letters):
                targeted = True  # -t DIR: every operand is a source
            given = _PATTERN_FIRST.get(name, ())
            if _is_long(flag, given) or any(len(f) == 2 and f[1] in letters for f in given):
                pattern_given = True
                takes_pattern = name != "jq" and (flag == "--regexp" or letters.endswith("e"))
                skip = takes_pattern and not eq
                if takes_pattern:
                    continue
            if _is_long(flag, follows) or any(len(f) == 1 and f in letters for f in follows):
                out.unknown = f"{name} {text} follows symbolic links wherever they lead"
            if eq:
                operands.append(_Word(value, word.quoted, word.dynamic_at, word.parameter))
            elif not flag.startswith("--") and "/" in flag:
                # A short option with its value attached (``-f/etc/x``).
                operands.append(_Word(flag[flag.index("/") :], False, None))
        if name in _PATTERN_FIRST and not pattern_given and len(operands) > 1:
            del operands[1]
        if name in _COPIERS and len(operands) > 2 and not targeted:
            del operands[-1]  # the destination: written, not read (`cp .env.example .env`)
        if (code and len(operands) > 1) or name == "eval":
            # `sh -c 'cat .env'`, `eval cat .env`: the code's own commands, read in turn.
            text = operands[1].text if code else " ".join(w.text for w in operands[1:])
            if any(w.dynamic_at is not None for w in operands[1:]):
                out.dynamic = True
            inner = read_operands(text, contents=contents)
            if inner is None:
                out.dynamic = True
            else:
                out.merge(inner)
            operands = operands[:1] if name == "eval" else [operands[0], *operands[2:]]
        explicit = operands[1:]
        if walks_found:
            out.trees += [p for w in _find_starts(rest) for p in from_bases(w, bases)]
            recursive = maybe = False
        elif contents and recursive and not explicit and name in _WALKERS | _RECURSE_FLAGS.keys():
            out.trees += from_bases(".", bases)  # `rg KEY`, `grep -r KEY`: the working directory
        if contents and git_shows:
            out.git_trees += from_bases(
                git_dir, bases
            )  # `git show HEAD`, `git log -p`: stored files
        if not contents:
            explicit = operands  # the working directory is listed or read (`ls`)
        for word in explicit:
            if word.dynamic_at is None:
                found = from_bases(word.text, bases)
                out.paths += found
                if recursive:
                    out.trees += found
                elif maybe:
                    out.maybe_trees += found
                if lost and not _absolute(word.text):
                    out.unknown = (
                        out.unknown
                        or f"{word.text} is read from a directory only known when it runs"
                    )
                    out.dynamic = True
            elif word.parameter:
                out.unknown = out.unknown or f"{word.text} is only known when the command runs"
                out.dynamic = True
            else:
                out.globs += from_bases(word.text, bases)
                if recursive:
                    out.tree_globs += from_bases(word.text, bases)
                elif maybe:
                    out.maybe_tree_globs += from_bases(word.text, bases)
        if name in _SKIPS_HIDDEN and not any(
            _is_long(w.text, _SKIPS_HIDDEN[name]) or w.text.startswith("-uu") for w in rest
        ):
            out.visible_trees += out.trees[tree_count:]
            del out.trees[tree_count:]
    if git_stored and out.git_trees:
        out.paths += git_stored
        out.trees += git_stored
    return out


# Options of git commands whose value is a file git copies into what it stores or prints.
_GIT_FILE_FLAGS = frozenset({"-F", "--file"})
_GIT_STORE_ALL = frozenset({"-A", "--all", "-u", "--update", "-a", "--include-untracked"})
# git commands that print or store their operand files' contents.
_GIT_READS_OPERANDS = frozenset(
    {"interpret-trailers", "mailinfo", "mailsplit", "apply", "am", "fmt-merge-msg"}
)
# git commands that store work-tree files (their operands, or all of them).
_GIT_STORES = frozenset({"add", "stash", "commit", "update-index", "hash-object", "notes"})
# git's options before its command that take a value (the next word, or after `=`).
_GIT_VALUED = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
)


def _git_command(rest: list[_Word]) -> tuple[str, str]:
    """git's command (``show`` in ``git -C dir --no-pager show``) and the directory it
    runs in (``-C``), relative to the line's."""
    directory = "."
    words = iter(rest)
    for word in words:
        text = word.text
        if text in _GIT_VALUED:
            value = next(words, None)
            if text == "-C" and value is not None:
                directory = os.path.join(directory, value.text)
            continue
        if text.startswith("-") and not word.quoted:
            continue
        return text, os.path.normpath(directory)
    return "", os.path.normpath(directory)


# Reserved words that may open a simple command (`if`, `while`, `do` ..., `time -p`).
_RESERVED = frozenset(
    {"if", "then", "elif", "else", "while", "until", "do", "time", "coproc", "!", "{"}
)
_MAX_COMMANDS = 256


def _wrapped_commands(argv: list[_Word]) -> list[list[_Word]]:
    """The commands a wrapper runs (``wrappers.runs``: its option syntax), as words."""
    from .shell import Word
    from .wrappers import runs

    words = [w for w in argv if not _is_redirect(w)]
    shell_words = [
        Word(w.text, None if w.parameter else w.text, w.dynamic_at is not None and not w.parameter)
        for w in words
    ]
    out: list[list[_Word]] = []
    for ran in runs(shell_words):
        if not isinstance(ran, list):
            continue  # code strings are read by the `sh -c`/`eval` branch; the rest: unknown
        out.append(
            [
                _Word(w.raw, False, 0, True)
                if w.text is None
                else _Word(w.text, False, 0 if w.expands else None, False)
                for w in ran
            ]
        )
    return out


_TARGET = frozenset({"--target-directory"})
_STDIN_SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh"}
)
_INTERPRETER = re.compile(
    r"(python|pypy|perl|ruby|php|lua|tclsh)[0-9.]*|node|nodejs|deno|bun|luajit|Rscript|julia"
)
# Interpreter options whose value is the program (code or a module), not read from stdin.
_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-r", "-m", "-p", "--eval", "--print", "--command"})


def runs_stdin_code(name: str, args: Sequence[str]) -> bool:
    """Whether a shell or an interpreter runs code it reads from standard input (``echo
    'cat .env' | bash``, ``bash <<< ...``, ``python3 - <<EOF``): code no check here can
    read. A script operand or code option (``bash x.sh``, ``python3 -c ...``) is not."""
    shell = name in _STDIN_SHELLS
    if not shell and not _INTERPRETER.fullmatch(name):
        return False
    for arg in args:
        if arg == "-" or (shell and arg == "-s"):
            return True
        if arg.startswith("-") and not arg.startswith("--") and shell and "c" in arg[1:]:
            return False
        if arg in _CODE_OPTIONS or arg.partition("=")[0] in _CODE_OPTIONS:
            return False
        if not arg.startswith(("-", "+")):
            return False  # a script (its arguments follow)
    return True


def _is_long(flag: str, names: Collection[str]) -> bool:
    """Whether ``flag`` is one of ``names``, or a long option abbreviated as GNU getopt
    and git accept (``grep --rec`` is ``--recursive``): any prefix of one counts, since
    taking an ambiguous prefix for the option only looks at more files."""
    if flag in names:
        return True
    return flag.startswith("--") and len(flag) > 3 and any(n.startswith(flag) for n in names)


def _find_starts(rest: list[_Word]) -> list[str]:
    """The paths find walks: its operands before the expression (``.`` when none)."""
    starts: list[str] = []
    for word in rest:
        text = word.text
        if text in ("-H", "-L", "-P") or text.startswith(("-O", "-D")):
            continue
        if text.startswith(("-", "(", "!")) and not word.quoted:
            break
        starts.append(text)
    return starts or ["."]


def _absolute(word: str) -> bool:
    return word.startswith(("/", "~"))


def from_bases(word: str, bases: list[str]) -> list[str]:
    """``word`` as seen from each directory the line may be in by then."""
    if _absolute(word) or len(bases) == 1:
        return [word]
    return [word if not base else os.path.join(base, word) for base in bases]


def _changed_dir(
    name: str, rest: list[_Word], bases: list[str], lost: bool
) -> tuple[list[str], bool]:
    args = [w for w in rest if not _is_redirect(w)]
    operands = [w for w in args if not w.text.startswith("-") or w.quoted]
    if name == "popd" or any(w.text == "-" for w in args):
        return bases, True  # the directory stack or OLDPWD: only the shell knows
    if not operands:
        return [*bases, "~"], lost  # `cd` alone: HOME
    target = operands[0]
    if target.dynamic_at is not None:
        return bases, True
    new = from_bases(target.text, bases)
    if len(bases) + len(new) > _MAX_BASES:
        return bases, True
    return [*bases, *new], lost


def code_paths(word: str) -> list[str]:
    """The paths spelled inside a word that is code, a URL or an option's value."""
    return [
        piece
        for piece in _PIECES.split(word)
        if ("." in piece or "/" in piece) and piece not in (".", "..", "/")
    ]


def _is_redirect(word: _Word) -> bool:
    return word.text.startswith("\0redir:")


def shell_path(word: str, cwd: str) -> str | None:
    """Where a word of a command line leads, absolute and normalized, with bash's tilde
    expansion: ``~`` is HOME, ``~user`` that user's home, ``~+`` the working directory;
    None when only the running shell knows (``~-`` is OLDPWD, ``~N`` the directory
    stack). ``os.path.expanduser`` leaves ``~+`` as a name, so ``~+/../x`` looked inside."""
    if word.startswith("~"):
        head, sep, rest = word.partition("/")
        if head == "~+":
            word = cwd + sep + rest
        elif head[1:2] in ("-", "+") or head[1:].isdigit():
            return None
        else:
            word = os.path.expanduser(word)
    return os.path.normpath(os.path.join(cwd, word))


def split_simple_commands(command: str) -> list[list[str]] | None:
    """The simple commands of a line as word lists, or None if it cannot be understood."""
    try:
        tokens = _lex(command)
    except _Unsupported:
        return None
    commands, _ = _split(tokens)
    return [[w.text for w in words] for words in commands]


def split_quoted_words(command: str) -> list[list[tuple[str, bool]]] | None:
    """Like ``split_simple_commands``, each word with whether any of it was quoted."""
    try:
        tokens = _lex(command)
    except _Unsupported:
        return None
    commands, _ = _split(tokens)
    return [[(w.text, w.quoted) for w in words] for words in commands]


def _program(words: list[_Word]) -> str:
    for word in words:
        if not _is_assignment(word):
            return word.text
    return ""


def _is_assignment(word: _Word) -> bool:
    name, eq, _ = word.text.partition("=")
    return bool(eq) and not word.quoted and name.isidentifier()


def _is_read_only(words: list[_Word]) -> bool:
    args = [w for w in words if not _is_assignment(w)]
    if len(args) != len(words):
        # `PATH=. ls`, `LD_PRELOAD=x cat`: an assignment can change what runs; and a bare
        # assignment changes the shell. Neither is known to only read.
        return False
    kept: list[_Word] = []
    for word in args:
        if word.text.startswith("\0redir:"):
            target = word.text[len("\0redir:") :]
            if target.startswith("<>") or (
                target not in ("/dev/null", "&1", "&2", "&-") and not target.startswith("<")
            ):
                return False
            continue
        kept.append(word)
    if not kept:
        return False
    texts = [w.text for w in kept]
    dynamic = [i for i, w in enumerate(kept) if w.dynamic_at is not None]
    if not dynamic:
        return is_read_only(texts)
    if dynamic[0] == 0:
        return False  # the program itself is only known when it runs
    if texts[0] in _ANY_ARGUMENTS:
        return is_read_only([w.text if w.dynamic_at is None else "x" for w in kept])
    # Each expanding word: a glob or brace that cannot start an option, and the command
    # read-only with one and with two words in its place.
    ends_options = texts.index("--") if "--" in texts and texts[0] != "find" else len(texts)
    one = list(texts)
    two: list[str] = []
    for i, word in enumerate(kept):
        if word.dynamic_at is None:
            two.append(word.text)
            continue
        prefix = word.text[: word.dynamic_at]
        if word.parameter or (i < ends_options and (not prefix or prefix[0] in "-+")):
            return False
        one[i] = prefix + "a"
        two += [prefix + "a", prefix + "b"]
    return is_read_only(one) and is_read_only(two)


def _split(tokens: list[str | _Word]) -> tuple[list[list[_Word]], list[str]]:
    commands: list[list[_Word]] = []
    separators: list[str] = []
    current: list[_Word] = []
    for token in tokens:
        if isinstance(token, _Word):
            current.append(token)
            continue
        if token not in ("(", ")"):  # a subshell's commands are checked like any other
            separators.append(token)
        if current:
            commands.append(current)
        current = []
    if current:
        commands.append(current)
    # `{` and `}` are reserved words that open and close a group: not commands.
    cleaned = []
    for words in commands:
        words = [w for w in words if w.quoted or w.text not in ("{", "}", "!")]
        if words:
            cleaned.append(words)
    return cleaned, separators


# A line of literal words only (`sleep 0.1`, `git status`, `pytest -q tests/a.py`): no
# quote, escape, expansion, glob, brace, tilde, comment, operator or redirection, and spaces
# and tabs only between words. Such a line is its words split on blanks, which is what the
# character-by-character lexer below makes of it; most Bash calls are such lines, and this
# is on every call's admission path (bench/NOTES.md section 17).
_PLAIN_LINE = re.compile(r"[A-Za-z0-9_\-./=:,+@% \t]*")


def _lex(line: str) -> list[str | _Word]:
    """Words and operators; redirections become ``\\0redir:TARGET`` words."""
    if len(line) > MAX_ANALYZED:
        raise _Unsupported("too long to analyze")
    if _PLAIN_LINE.fullmatch(line) is not None:
        return [_Word(text) for text in line.split()]
    return _lex_chars(line)


def _lex_chars(line: str) -> list[str | _Word]:
    """``_lex`` for any line, one character at a time."""
    tokens: list[str | _Word] = []
    i, n = 0, len(line)
    while i < n:
        ch = line[i]
        if ch in " \t":
            i += 1
            continue
        if ch == "#" and (i == 0 or line[i - 1] in " \t\n;&|()"):
            while i < n and line[i] != "\n":
                i += 1
            continue
        if ch == "\\" and i + 1 < n and line[i + 1] == "\n":
            i += 2
            continue
        op = next((o for o in _OPERATORS if line.startswith(o, i)), None)
        if op is not None:
            tokens.append(op)
            i += len(op)
            continue
        redirect, i2 = _redirection(line, i)
        if redirect is not None:
            tokens.append(_Word("\0redir:" + redirect))
            i = i2
            continue
        word, i = _word(line, i)
        tokens.append(word)
    return tokens


def _redirection(line: str, i: int) -> tuple[str | None, int]:
    j = i
    while j < len(line) and line[j].isdigit():
        j += 1
    for op in ("&>>", "&>", ">>", ">|", ">&", "<>", "<<<", "<<", "<&", ">", "<"):
        if line.startswith(op, j):  # not line[j:]: a copy per word is quadratic in a long line
            break
    else:
        return None, i
    if op == "<<":
        raise _Unsupported("heredoc")
    k = j + len(op)
    while k < len(line) and line[k] in " \t":
        k += 1
    if k >= len(line):
        raise _Unsupported("redirection without a target")
    target, end = _word(line, k)
    if not target.text and not target.quoted:
        raise _Unsupported("process substitution or a missing redirection target")
    if op in (">&", "<&") and (target.text.isdigit() or target.text == "-"):
        return "&" + target.text, end
    if op == "<>":
        return "<>" + target.text, end  # reads and writes (creates it)
    if op == "<<<":
        return "<<<" + target.text, end  # a string, not a file
    if op.startswith("<"):
        return "<" + target.text, end  # reads only
    return target.text, end


def _word(line: str, i: int) -> tuple[_Word, int]:
    out: list[str] = []
    quoted = False
    dynamic_at: int | None = None
    parameter = False
    n = len(line)
    closers = _Closers(line)

    def mark(param: bool) -> None:
        nonlocal dynamic_at, parameter
        if dynamic_at is None:
            dynamic_at = sum(map(len, out))
        parameter = parameter or param

    while i < n:
        ch = line[i]
        if ch in _WORD_END:
            break
        if ch == "\\":
            if line.startswith("\n", i + 1):
                # bash joins the word with the next line (`r\` newline `m` is `rm`); other
                # parsers may not: such a word is not understood.
                raise _Unsupported("line continuation inside a word")
            if i + 1 < n:
                out.append(line[i + 1])
            i += 2
            quoted = True
            continue
        if ch == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise _Unsupported("unbalanced quote")
            out.append(line[i + 1 : end])
            i = end + 1
            quoted = True
            continue
        if ch == '"':
            i += 1
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n:
                    if line[i + 1] == "\n":
                        raise _Unsupported("line continuation inside quotes")
                    out.append(line[i + 1])
                    i += 2
                    continue
                if line[i] == "`" or line.startswith("$(", i):
                    raise _Unsupported("command substitution")
                if line[i] == "$" and i + 1 < n and line[i + 1] in _EXPANSION_START:
                    mark(True)
                out.append(line[i])
                i += 1
            if i >= n:
                raise _Unsupported("unbalanced quote")
            i += 1
            quoted = True
            continue
        if ch == "`" or line.startswith("$(", i):
            raise _Unsupported("command substitution")
        if ch == "$" and i + 1 < n and line[i + 1] in _EXPANSION_START:
            mark(True)  # $X, ${...}, $'...', $"...", $1, $@ ...
        elif dynamic_at is None and (
            ch in "*?" or (ch in "[{" and closers.opens(i, "]" if ch == "[" else "}"))
        ):
            mark(False)
        out.append(ch)
        i += 1
    return _Word("".join(out), quoted, dynamic_at, parameter), i


class _Closers:
    """Whether a ``[`` or ``{`` opens a bracket expression or a brace expansion: its closing
    character follows within the word (``{}`` alone, as find uses it, and a lone ``[`` are
    literal). Erring towards "it expands" only costs parallelism. Searches only move
    forward, so a word of a million ``[`` costs one pass, not a million."""

    __slots__ = ("end", "found", "line")

    def __init__(self, line: str) -> None:
        self.line = line
        self.end = -1  # where the word ends (approximately: quotes are not considered)
        self.found: dict[str, int] = {}  # the next closer seen, or -1 for none before end

    def opens(self, i: int, close: str) -> bool:
        if self.end <= i:
            match = _WORD_END_RE.search(self.line, i + 1)
            self.end = match.start() if match else len(self.line)
            self.found.clear()
        at = self.found.get(close)
        if at is None or (at != -1 and at <= i):
            at = self.line.find(close, i + 1, self.end)
            self.found[close] = at
        return at != -1 and not (close == "}" and at == i + 1)
