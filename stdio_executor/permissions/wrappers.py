"""What else a simple command runs: wrappers, and code handed to an interpreter.

Owns: the option syntax of programs that run another command (``nice``, ``timeout``,
``flock``, ``sudo``, ``xargs``, ``strace`` ...: which options take a value, how many
operands come before the command, which options carry shell code, which mean "no command"),
and the places where a command hands code to an interpreter (``sh -c``, a shell reading
stdin, ``eval``, ``trap``, ``alias``, ``source`` of dynamic text, ``awk`` programs that call
``system``, ``sed``'s ``e``, ``python -c`` and friends, ``find -exec``, ``git -c``/aliases,
``git rebase --exec`` ...).
Must not: match rules (``rules`` does) or parse shell text (it returns the code strings; the
caller parses them with ``shell.parse``).

Everything here serves deny and ask rules, which must hold for every command that *might*
be the denied one. So the answer errs towards "unknown": a wrapper called with an option
this table does not know, a code string that is not a literal, or an interpreter program
that is not shell code are all reported as UNKNOWN, and the caller treats that as a
command that could be anything.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Sequence

import msgspec

from .shell import Word

__all__ = [
    "UNKNOWN",
    "WRAPPER_NAMES",
    "Runs",
    "handled",
    "program_files",
    "program_name",
    "runs",
]


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
# What a command runs besides itself: an argv it executes, a shell code string, or UNKNOWN.
Runs = list[Word] | str | _Unknown


def program_name(word: Word) -> str | None:
    if word.text is None or word.expands:
        return None
    return os.path.basename(word.text) or None


class _Wrapper(msgspec.Struct, frozen=True):
    short: str = ""  # flags without a value
    short_arg: str = ""  # flags with a value (attached or the next word)
    long: frozenset[str] = frozenset()
    long_arg: frozenset[str] = frozenset()  # `--x=V` or `--x V`
    any_long: bool = False  # every `--x` / `--x=V` is one word (firejail, valgrind)
    numeric: bool = False  # `nice -5`
    skip: int = 0  # operands before the command (timeout's duration, taskset's mask)
    skip_numeric: bool = False  # the skipped operand is optional and numeric (chrt)
    code: frozenset[str] = frozenset()  # options whose value is shell code (`-c`)
    no_command: frozenset[str] = frozenset()  # options after which it runs no command
    joins: bool = False  # the command words are joined and run by `sh -c` (watch)
    joins_with: frozenset[str] = frozenset()  # options that make it join (sudo -s)
    stdin_if_empty: bool = False  # with no command it runs a shell on its stdin
    appends: bool = False  # words are appended at run time (xargs)
    default: tuple[str, ...] = ()  # the command when none is given (xargs: echo)
    assignments: bool = False  # NAME=value words before the command (env)


def _w(
    short: str = "",
    short_arg: str = "",
    long: str = "",
    long_arg: str = "",
    **kw: object,
) -> _Wrapper:
    def names(text: str) -> frozenset[str]:
        return frozenset("--" + n for n in text.split())

    for key in ("code", "no_command", "joins_with"):
        if key in kw:
            kw[key] = frozenset(str(kw[key]).split())
    return _Wrapper(short, short_arg, names(long), names(long_arg), **kw)  # type: ignore[arg-type]


_WRAPPERS: dict[str, _Wrapper] = {
    "nice": _w("", "n", "", "adjustment", numeric=True),
    "ionice": _w("t", "cnpPu", "ignore", "class classdata pid pgid uid", no_command="-p -P -u"),
    "taskset": _w("acfp", "", "all-tasks cpu-list", skip=1, no_command="-p --pid"),
    "chrt": _w(
        "abdefimoprRv",
        "TPD",
        "all-tasks batch deadline fifo idle other rr reset-on-fork verbose max",
        "sched-runtime sched-period sched-deadline",
        skip=1,
        skip_numeric=True,
        no_command="-p --pid -m --max",
    ),
    "flock": _w(
        "sxeunoF",
        "wEc",
        "shared exclusive unlock nonblock nb close no-fork verbose",
        "timeout wait conflict-exit-code command",
        skip=1,
        code="-c --command",
    ),
    "setsid": _w("cfw", "", "ctty fork wait"),
    "script": _w(
        "aefqkr",
        "cEIOBTmot",
        "append return flush force quiet log-in log-out log-io log-timing echo "
        "logging-format output-limit command timing",
        "",
        code="-c --command",
        stdin_if_empty=True,
        skip=1,
        skip_numeric=False,
    ),
    "watch": _w(
        "bcdegtwxrpC",
        "nq",
        "beep color no-color differences errexit chgexit exec no-title no-wrap precise no-rerun",
        "interval equexit",
        joins=True,
    ),
    "timeout": _w("v", "sk", "preserve-status foreground verbose", "signal kill-after", skip=1),
    "nohup": _w(),
    "stdbuf": _w("", "ioe", "", "input output error"),
    "env": _w(
        "iv0",
        "uCS",
        "ignore-environment null debug list-signal-handling",
        "unset chdir split-string default-signal ignore-signal block-signal",
        code="-S --split-string",
        assignments=True,
    ),
    "sudo": _w(
        "AbBEHiKkNnPSsVv",
        "CDghpRrtTUu",
        "askpass background bell preserve-env set-home login remove-timestamp "
        "reset-timestamp non-interactive preserve-groups stdin shell validate no-update",
        "close-from chdir group host prompt chroot role type command-timeout other-user user",
        joins_with="-s -i --shell --login",
        no_command="-e --edit -l --list -v --validate -k -K -V --version -h --help",
    ),
    "doas": _w("nsL", "uC", joins_with="-s", stdin_if_empty=False),
    "time": _w("pvqa", "of", "portability verbose quiet append", "output format"),
    "command": _w("p", "", no_command="-v -V"),
    "builtin": _w(),
    "exec": _w("cl", "a"),
    "nocache": _w(),
    "eatmydata": _w(),
    "chronic": _w("ev"),
    "ifne": _w("n"),
    "catchsegv": _w(),
    "unbuffer": _w("p"),
    "fakeroot": _w("u", "lsi", "unknown-is-real", "lib faked"),
    "torsocks": _w("diq", "uapP", "", "user pass address port"),
    "proxychains": _w("q", "f"),
    "proxychains4": _w("q", "f"),
    "trickle": _w("sv", "dutlwn"),
    "xvfb-run": _w(
        "a",
        "nseEfpw",
        "auto-servernum",
        "server-num server-args error-file auth-file xauth-protocol wait",
    ),
    "dbus-run-session": _w(any_long=True),
    "firejail": _w(any_long=True),
    "valgrind": _w("qv", any_long=True),
    "systemd-run": _w(
        "tPGqrSd",
        "upEMH",
        "pty pipe collect quiet remain-after-exit user system scope wait no-block "
        "send-sighup same-dir no-ask-password shell",
        "unit property setenv machine host description slice uid gid nice "
        "working-directory on-active on-boot on-startup on-unit-active on-unit-inactive "
        "on-calendar on-timezone-change on-clock-change timer-property path-property "
        "socket-property service-type expand-environment json",
        stdin_if_empty=True,
    ),
    "strace": _w(
        "fFiqrtTvxyckwzZdDhVn",
        "eoOpPsSuEabIXU",
        "",
        "",
        any_long=True,
        no_command="-p --attach",
    ),
    "ltrace": _w("bcCfhiLrStTV", "aAeFlnopsuwxDw", any_long=True, no_command="-p"),
    "nsenter": _w("muinpUCTaFZrw", "tSG", any_long=True, stdin_if_empty=True),
    "unshare": _w("muinpUCTfr", "", any_long=True, stdin_if_empty=True),
    "chroot": _w("", "", "skip-chdir", "userspec groups", skip=1, stdin_if_empty=True),
    "runuser": _w(
        "lmpfP",
        "ugsw",
        "login preserve-environment pty",
        "user group shell whitelist-environment session-command",
        code="-c --command",
    ),
    "su": _w(
        "lmpfP",
        "gGsw",
        "login preserve-environment pty",
        "group supp-group shell whitelist-environment session-command",
        code="-c --command",
        skip=1,
        stdin_if_empty=True,
    ),
    "sg": _w("", "", code="-c", skip=1, joins=True),
    "prlimit": _w("", "p", any_long=True, no_command="-p --pid"),
    "numactl": _w("aHls", "CmNpPiub", any_long=True, no_command="-H --hardware -s --show"),
    "setpriv": _w("d", "", any_long=True),
    "setarch": _w("vRFLXBIST3", "", any_long=True, skip=1),
    "linux32": _w("vRFLXBIST3", "", any_long=True),
    "linux64": _w("vRFLXBIST3", "", any_long=True),
    "cgexec": _w("", "g", "sticky"),
    "faketime": _w("m", "f", skip=1),
    "lckdo": _w("qW", "w", skip=1),
    "envdir": _w(skip=1),
    "setuidgid": _w(skip=1),
    "envuidgid": _w(skip=1),
    "softlimit": _w("", "mdsloapfcrt"),
    "chpst": _w("v0P", "uUbe/nlLmdofpcr"),
    "pkexec": _w("", "", "disable-internal-agent keep-cwd", "user"),
    "xargs": _w(
        "0oprtx",
        "adEILnPs",
        "null interactive no-run-if-empty verbose exit open-tty show-limits",
        "arg-file delimiter eof replace max-lines max-args max-procs max-chars process-slot-var",
        appends=True,
        default=("echo",),
    ),
    "parallel": _w(
        "0gkqruvXm",
        "jnNaIPSdC",
        "null group keep-order quote ungroup verbose will-cite bar progress eta dry-run "
        "tag line-buffer halt-on-error no-notice keep-order",
        "jobs max-args arg-file max-procs colsep delimiter halt joblog results tagstring "
        "timeout retries",
        joins=True,
        stdin_if_empty=True,
    ),
    "sem": _w("", "j", "fg bg", "jobs id", joins=True),
    "entr": _w("acdnprzs", "", joins_with="-s"),
    "ts": _w("nfgEB", "LNDw"),
    "tsp": _w("nfgEB", "LNDw"),
    "busybox": _w(),
    "toybox": _w(),
    "coproc": _w(),
    "caffeinate": _w("dimsu", "tw"),
    "daemonize": _w("aclv", "eEopuU"),
    "dotenv": _w("", "f", any_long=True),
}
# The forms in which these read a value: `-n5` or `-n 5`.
# Programs whose commands come from stdin or a file, never from their arguments; the value
# is the set of argument lists that only list or remove jobs.
# Programs that run a command given in their operands (`env cat .env`, `timeout 5 cat .env`).
WRAPPER_NAMES = frozenset(_WRAPPERS)
_SCHEDULERS: dict[str, frozenset[str]] = {
    "at": frozenset({"-l", "-d", "-r", "-V"}),
    "batch": frozenset({"-V"}),
    "crontab": frozenset({"-l", "-r", "-i", "-u"}),
}
# File names that mean "standard input" to a program reading its code from a file.
_STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})
_SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh"}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _values(words: Sequence[Word]) -> list[str | None]:
    return [None if w.expands else w.text for w in words]


def _wrapped(name: str, spec: _Wrapper, words: Sequence[Word]) -> list[Runs] | None:
    """What ``name ARGS`` runs, per its option syntax; None if it runs no command."""
    rest = list(words)
    joins = spec.joins
    found: list[Runs] = []
    while rest:
        word = rest[0]
        text = None if word.expands else word.text
        if text is None:
            return [UNKNOWN]  # an option or the program, known only when it runs
        if text == "--":
            rest = rest[1:]
            break
        if spec.assignments and _ASSIGNMENT.match(text):
            rest = rest[1:]
            continue
        if not text.startswith("-") or text == "-":
            break
        if name == "su" and text in ("-", "-l"):
            rest = rest[1:]
            continue
        rest = rest[1:]
        option, eq, attached = text.partition("=")
        if text.startswith("--"):
            if option in spec.no_command:
                return None
            if option in spec.joins_with:
                joins = True
                continue
            takes = option in spec.long_arg or option in spec.code
            if option in spec.long or (spec.any_long and not takes):
                continue
            if not takes:
                return [UNKNOWN]
            if not eq:
                if not rest:
                    return [UNKNOWN]
                value_word, rest = rest[0], rest[1:]
                attached = "" if value_word.expands else (value_word.text or "")
                if value_word.text is None or value_word.expands:
                    if option in spec.code:
                        found.append(UNKNOWN)
                    continue
            if option in spec.code:
                found.append(attached)
            continue
        if spec.numeric and text[1:].lstrip("-").isdigit():
            continue
        j = 1
        while j < len(text):
            flag = "-" + text[j]
            if flag in spec.no_command:
                return None
            if flag in spec.joins_with:
                joins = True
            if text[j] in spec.short:
                j += 1
                continue
            if text[j] in spec.short_arg or flag in spec.code:
                value = text[j + 1 :]
                if not value:
                    if not rest:
                        return [UNKNOWN]
                    value_word, rest = rest[0], rest[1:]
                    if value_word.text is None or value_word.expands:
                        if flag in spec.code:
                            found.append(UNKNOWN)
                        break
                    value = value_word.text
                if flag in spec.code:
                    found.append(value)
                break
            return [UNKNOWN]  # an option this table does not know: cannot tell what runs
    skip = spec.skip
    while skip and rest:
        first = rest[0]
        if spec.skip_numeric and not (first.text or "").isdigit():
            break
        if first.text is None:
            return [*found, UNKNOWN]
        rest = rest[1:]
        skip -= 1
    if found and not rest:
        return found
    if not rest:
        if spec.default:
            return [*found, [Word(w, w) for w in spec.default]]
        return [*found, UNKNOWN] if spec.stdin_if_empty else (found or None)
    if spec.appends:
        rest = [*rest, Word("$APPENDED", None)]  # xargs adds words when it runs
    if name == "parallel":
        rest = _until_separator(rest)
        if not rest:
            # `parallel ::: 'rm x'`: with no command, each argument is a command line.
            return [*found, UNKNOWN]
    if joins:
        values = _values(rest)
        if any(v is None for v in values):
            return [*found, UNKNOWN]
        return [*found, " ".join(v for v in values if v is not None)]
    return [*found, rest]


def _until_separator(words: list[Word]) -> list[Word]:
    for i, word in enumerate(words):
        if word.text in (":::", "::::", ":::+", "::::+"):
            return words[:i]
    return words


# ------------------------------------------------------------------ interpreters

# Programs that run code given as an argument (`-e CODE`, `-c CODE`) in a language that is
# not shell: the code may start any program, and no parser here reads it.
_CODE_OPTIONS: dict[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "python2": frozenset({"-c"}),
    "python3": frozenset({"-c"}),
    "pypy": frozenset({"-c"}),
    "pypy3": frozenset({"-c"}),
    "perl": frozenset({"-e", "-E"}),
    "ruby": frozenset({"-e"}),
    "node": frozenset({"-e", "--eval", "-p", "--print"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "php": frozenset({"-r", "-B", "-R", "-E", "-F"}),
    "lua": frozenset({"-e"}),
    "luajit": frozenset({"-e"}),
    "Rscript": frozenset({"-e"}),
    "R": frozenset({"-e"}),
    "julia": frozenset({"-e", "-E", "--eval", "--print"}),
    "osascript": frozenset({"-e"}),
    "tclsh": frozenset(),
    "expect": frozenset({"-c"}),
    "pwsh": frozenset({"-c", "-Command", "-command", "-EncodedCommand"}),
    "powershell": frozenset({"-c", "-Command", "-command", "-EncodedCommand"}),
    "gdb": frozenset({"-ex", "-eval-command", "--eval-command", "-x", "-batch"}),
    "vim": frozenset({"-c", "+", "--cmd", "-S"}),
    "vi": frozenset({"-c", "+", "--cmd", "-S"}),
    "nvim": frozenset({"-c", "+", "--cmd", "-S", "-l"}),
    "ex": frozenset({"-c", "+", "--cmd", "-S"}),
    "emacs": frozenset({"--eval", "-l", "--load", "-f", "--funcall", "--batch"}),
    "jshell": frozenset(),
    "irb": frozenset(),
    "ghci": frozenset({"-e"}),
    "scala": frozenset({"-e"}),
    "groovy": frozenset({"-e"}),
    "sqlite3": frozenset({"-cmd"}),
    "make": frozenset({"--eval", "-E"}),
}
# Interpreters that read code from stdin when given no program: `curl x | python`.
_STDIN_INTERPRETERS = frozenset(
    {
        "python",
        "python2",
        "python3",
        "pypy",
        "pypy3",
        "perl",
        "ruby",
        "node",
        "nodejs",
        "php",
        "lua",
        "tclsh",
        "expect",
        "R",
        "irb",
        "jshell",
        "ed",
        "ex",
        "bc",
    }
)
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
# awk can start a program only through these (system(), pipes to and from commands,
# and gawk's extension loading).
_AWK_RUNS = re.compile(r"system|\||@load|extension")
_SED_EXEC = re.compile(
    r"(^|[;\n{}]|[0-9$/,!]\s*)\s*e(\s|;|$|})|s(.).*\3.*\3[a-zA-Z0-9]*e",
    re.DOTALL,
)
_GIT_CODE_OPTIONS = frozenset(
    {
        "--exec",
        "-x",
        "--extcmd",
        "--upload-pack",
        "--receive-pack",
        "-u",
        "--tool",
        "--sendmail-cmd",
        "--smtp-server",
        "--to-cmd",
        "--cc-cmd",
        "--header-cmd",
        "--open-files-in-pager",
        "-O",
    }
)
# Git's own commands: any other `git NAME` is an alias (which may be `!shell code`) or a
# `git-NAME` program found on PATH.
_GIT_COMMANDS = frozenset(
    [
        "add",
        "am",
        "annotate",
        "apply",
        "archive",
        "bisect",
        "blame",
        "branch",
        "bugreport",
        "bundle",
        "cat-file",
        "check-attr",
        "check-ignore",
        "check-mailmap",
        "check-ref-format",
        "checkout",
        "checkout-index",
        "cherry",
        "cherry-pick",
        "citool",
        "clean",
        "clone",
        "column",
        "commit",
        "commit-graph",
        "commit-tree",
        "config",
        "count-objects",
        "credential",
        "describe",
        "diagnose",
        "diff",
        "diff-files",
        "diff-index",
        "diff-tree",
        "difftool",
        "fast-export",
        "fast-import",
        "fetch",
        "fetch-pack",
        "filter-branch",
        "fmt-merge-msg",
        "for-each-ref",
        "for-each-repo",
        "format-patch",
        "fsck",
        "gc",
        "get-tar-commit-id",
        "grep",
        "gui",
        "hash-object",
        "help",
        "hook",
        "http-backend",
        "index-pack",
        "init",
        "instaweb",
        "interpret-trailers",
        "log",
        "ls-files",
        "ls-remote",
        "ls-tree",
        "mailinfo",
        "mailsplit",
        "maintenance",
        "merge",
        "merge-base",
        "merge-file",
        "merge-index",
        "merge-one-file",
        "merge-tree",
        "mergetool",
        "mktag",
        "mktree",
        "multi-pack-index",
        "mv",
        "name-rev",
        "notes",
        "pack-objects",
        "pack-redundant",
        "pack-refs",
        "patch-id",
        "prune",
        "prune-packed",
        "pull",
        "push",
        "range-diff",
        "read-tree",
        "rebase",
        "reflog",
        "remote",
        "repack",
        "replace",
        "request-pull",
        "rerere",
        "reset",
        "restore",
        "rev-list",
        "rev-parse",
        "revert",
        "rm",
        "send-email",
        "send-pack",
        "shortlog",
        "show",
        "show-branch",
        "show-index",
        "show-ref",
        "sparse-checkout",
        "stage",
        "stash",
        "status",
        "stripspace",
        "submodule",
        "switch",
        "symbolic-ref",
        "tag",
        "unpack-file",
        "unpack-objects",
        "update-index",
        "update-ref",
        "update-server-info",
        "var",
        "verify-commit",
        "verify-pack",
        "verify-tag",
        "version",
        "whatchanged",
        "worktree",
        "write-tree",
    ]
)
_DYNAMIC_SOURCES = re.compile(r"^/dev/(stdin|fd/\d+)$|^/proc/[^/]+/fd/")


def runs(words: Sequence[Word]) -> list[Runs]:
    """What a simple command runs besides being itself: argvs it executes (a wrapper's
    command), shell code strings (``bash -c``, ``eval``), and UNKNOWN for code no parser
    here reads (``python -c``, a shell reading stdin, a dynamic ``source``)."""
    if not words:
        return []
    name = program_name(words[0])
    if name is None:
        return []
    args = list(words[1:])
    spec = _WRAPPERS.get(name)
    if spec is not None:
        if name in ("busybox", "toybox") and args:
            return [args]
        return _wrapped(name, spec, args) or []
    if name in _SCHEDULERS:
        # Their words are a time (`at now + 1 min`) or options; the commands they will run
        # come from stdin or a file, which no parser here reads.
        values = _values(args)
        listing = values and all(v in _SCHEDULERS[name] for v in values)
        return [] if listing else [UNKNOWN]
    if name == "direnv":
        # `direnv exec DIR COMMAND...` runs COMMAND; its other subcommands run nothing.
        values = _values(args)
        if values[:1] == ["exec"]:
            return [args[2:]] if len(args) > 2 and values[1] is not None else [UNKNOWN]
        return [] if values[:1] != [None] else [UNKNOWN]
    if name in _SHELLS:
        return _shell(args)
    values = _values(args)
    if name == "eval":
        if any(v is None for v in values):
            return [UNKNOWN]
        return [" ".join(v for v in values if v is not None)]
    if name == "trap":
        return _trap(values)
    if name == "alias":
        return [v.partition("=")[2] if v is not None else UNKNOWN for v in values if v != "-p"]
    if name in ("source", "."):
        if not values or values[0] is None or _DYNAMIC_SOURCES.match(values[0]):
            return [UNKNOWN]
        return []
    if name == "find":
        return list(_find_exec(args))
    if name == "man":
        # `man -P CMD` / `--pager=CMD` / `-H` (a browser) name a program; otherwise man
        # shows pages with its own pager.
        runs_one = any(v is None or v.startswith(("-P", "--pager", "-H", "--html")) for v in values)
        return [UNKNOWN] if runs_one else []
    if name in _AWKS:
        return _awk(values)
    if name in ("sed", "gsed"):
        return _sed(values)
    if name == "git":
        return _git(values)
    if name in _CODE_OPTIONS:
        return _interpreter(name, values)
    if name in _STDIN_INTERPRETERS and not any(v and not v.startswith("-") for v in values):
        return [UNKNOWN]
    return []


def _shell(args: Sequence[Word]) -> list[Runs]:
    values = _values(args)
    skip = False
    for i, text in enumerate(values):
        if text is None:
            return [UNKNOWN]
        if skip:
            skip = False
            continue
        if text in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            skip = True
            continue
        if text == "-":
            return [UNKNOWN]  # `bash -`: commands from stdin
        if text == "--":
            return [UNKNOWN] if i + 1 == len(values) else []
        if text.startswith("--"):
            continue
        if text in _STDIN_PATHS:
            return [UNKNOWN]  # `bash /dev/stdin <<< CODE`: commands from stdin
        if not text.startswith(("-", "+")):
            return []  # `bash script.sh`: a script file, like any other program
        if "c" in text[1:]:
            code = values[i + 1] if i + 1 < len(values) else None
            return [code] if code is not None else [UNKNOWN]
        if "s" in text[1:]:
            return [UNKNOWN]  # commands from stdin
    return [UNKNOWN]  # no -c and no script: the shell reads its commands from stdin


def _trap(values: list[str | None]) -> list[Runs]:
    if not values or values[0] in ("-l", "-p"):
        return []
    start = 1 if values[0] == "--" else 0
    if start >= len(values):
        return []
    code = values[start]
    if code is None:
        return [UNKNOWN]
    if start + 1 == len(values) and code.isdigit():
        return []  # `trap 2`: resets a signal
    return [code] if code not in ("", "-") else []


def _find_exec(args: Sequence[Word]) -> Iterator[Runs]:
    for i, word in enumerate(args):
        if word.text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args)
            )
            command = list(args[i + 1 : end])
            if not command or command[0].text is None or "{}" in command[0].text:
                yield UNKNOWN  # the program is a found file's name
            else:
                yield command


def _awk(values: list[str | None]) -> list[Runs]:
    program: str | None = None
    i = 0
    while i < len(values):
        v = values[i]
        if v is None:
            return [UNKNOWN]
        if v in ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"):
            return [UNKNOWN]  # the program is in a file
        if v in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if v.startswith("-") and v != "-":
            if v.startswith(("-f", "-E", "-l", "-i")):
                return [UNKNOWN]
            i += 1
            continue
        program = v
        break
    if program is None:
        return []
    return [UNKNOWN] if _AWK_RUNS.search(program) else []


def _sed(values: list[str | None]) -> list[Runs]:
    scripts: list[str] = []
    i = 0
    given = False
    while i < len(values):
        v = values[i]
        if v is None:
            return [UNKNOWN]
        if v in ("-e", "--expression"):
            if i + 1 >= len(values) or values[i + 1] is None:
                return [UNKNOWN]
            scripts.append(values[i + 1] or "")
            given = True
            i += 2
            continue
        if v.startswith("--expression="):
            scripts.append(v.partition("=")[2])
            given = True
        elif v in ("-f", "--file") or v.startswith(("--file=", "-f")):
            return [UNKNOWN]
        elif not v.startswith("-") and not given:
            scripts.append(v)
            given = True
        i += 1
    return [UNKNOWN] if any(_SED_EXEC.search(s) for s in scripts) else []


def _git(values: list[str | None]) -> list[Runs]:
    i = 0
    while i < len(values):
        v = values[i]
        if v is None:
            return [UNKNOWN]
        if v in ("-c", "--config-env", "--exec-path") or v.startswith(
            ("-c", "--config-env", "--exec-path=")
        ):
            return [UNKNOWN]  # a setting may be an alias, a pager, a hook path, an editor
        if v in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix"):
            i += 2
            continue
        if v.startswith("-"):
            i += 1
            continue
        break
    if i >= len(values):
        return []
    sub = values[i]
    rest = values[i + 1 :]
    if sub not in _GIT_COMMANDS:
        return [UNKNOWN]  # an alias (`!rm -rf x`) or a git-NAME program
    found: list[Runs] = []
    if i > 0:
        # `git -C . push`, `git --git-dir=.git push`, `git -P push` are `git push` to a
        # rule: the command without git's own options is what the rules see as well.
        words = [Word(v if v is not None else "$X", v) for v in rest]
        found.append([Word("git", "git"), Word(sub, sub), *words])
    if any(v is None for v in rest):
        return found
    texts = [v for v in rest if v is not None]
    for j, text in enumerate(texts):
        option, eq, value = text.partition("=")
        if option in _GIT_CODE_OPTIONS or (option.startswith("--") and option.endswith("-cmd")):
            if eq:
                found.append(value)
            elif j + 1 < len(texts):
                found.append(texts[j + 1])
            else:
                found.append(UNKNOWN)
    if sub == "bisect" and texts[:1] == ["run"]:
        found.append([Word(t, t) for t in texts[1:]] if len(texts) > 1 else UNKNOWN)
    if sub == "submodule" and "foreach" in texts:
        k = texts.index("foreach")
        tail = [t for t in texts[k + 1 :] if t not in ("--recursive", "--quiet", "-q")]
        found.append(" ".join(tail) if tail else UNKNOWN)
    if sub in ("filter-branch", "mergetool", "difftool", "config"):
        found.append(UNKNOWN)  # filters, tools and settings hold commands
    return found


def _interpreter(name: str, values: list[str | None]) -> list[Runs]:
    options = _CODE_OPTIONS[name]
    if name == "make" and _makefile_from_stdin(values):
        return [UNKNOWN]
    for i, v in enumerate(values):
        if v is None or v in _STDIN_PATHS:
            return [UNKNOWN]
        if name == "gdb" and v == "--args":
            # `gdb --args PROGRAM ARGS...` starts PROGRAM: a wrapper, looked through.
            program = values[i + 1 :]
            if not program or any(w is None for w in program):
                return [UNKNOWN]
            return [" ".join(shlex.quote(w) for w in program if w is not None)]
        option = v.partition("=")[0]
        if option in options or (v.startswith("+") and "+" in options):
            return [UNKNOWN]
        python = name.startswith(("python", "pypy"))
        if python and v.startswith("-") and not v.startswith("--") and "c" in v[1:]:
            return [UNKNOWN]  # `python -Ic CODE`
        if not v.startswith("-"):
            return []  # a script file
    return [UNKNOWN] if name in _STDIN_INTERPRETERS or not options else []


def _makefile_from_stdin(values: list[str | None]) -> bool:
    """`make -f -`, `-f-`, `--file=-`, `--makefile /dev/stdin`: the recipes come from stdin."""
    for i, v in enumerate(values):
        if v is None:
            continue
        if v in ("-f", "--file", "--makefile"):
            following = values[i + 1] if i + 1 < len(values) else None
            if following is None or following in _STDIN_PATHS:
                return True
        else:
            option, _, value = v.partition("=")
            bundled = v.startswith("-f") and not v.startswith("--") and v[2:] in _STDIN_PATHS
            if bundled or (option in ("--file", "--makefile") and value in _STDIN_PATHS):
                return True
    return False


_HANDLED = frozenset(
    {*_WRAPPERS, *_SHELLS, *_AWKS, *_CODE_OPTIONS, *_STDIN_INTERPRETERS}
    | {"eval", "trap", "alias", "source", ".", "find", "sed", "gsed", "git", "man", "direnv"}
    | set(_SCHEDULERS)
)


def handled(name: str) -> bool:
    """Whether ``runs`` knows this program's syntax (so what it runs is fully reported)."""
    return name in _HANDLED


def program_files(words: Sequence[Word], depth: int = 0) -> list[str]:
    """The files a simple command runs as a program: its own path (``./s.sh``), the script
    a shell runs or sources (``bash s.sh``, ``. ./s.sh``), every operand of an interpreter
    (``python3 s.py``: one of them is its program), and those of the commands it wraps
    (``env bash s.sh``). Only paths known before the line runs."""
    if not words or depth > 8:
        return []
    first = words[0].text
    name = program_name(words[0])
    if first is None or name is None:
        return []
    found = [first] if "/" in first else []
    values = _values(words[1:])
    if name in _SHELLS:
        for text in values:
            if text is None or text == "--":
                break
            if not text.startswith(("-", "+")):
                found.append(text)
                break
            if "c" in text[1:] or "s" in text[1:]:
                break
    elif name in (".", "source"):
        found += [v for v in values[:1] if v is not None]
    elif name in _STDIN_INTERPRETERS:
        found += [v for v in values if v is not None and not v.startswith("-")]
    for item in runs(words):
        if isinstance(item, list):
            found += program_files(item, depth + 1)
    return found
