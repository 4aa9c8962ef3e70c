"""Which simple commands only read: an allowlist of command + subcommand + flags.

Owns: for every command that may run without asking (and in parallel with its siblings),
the exact options it may carry: short flags with and without an argument, long options
with and without one, and what its operands may be. A command is read-only only when
*every* word is understood: an unknown flag, a bundle of short flags holding one
(``-ro FILE``), a long option that is not spelled out in full, or a subcommand that is not
listed makes it not read-only.
Must not: lex command lines (``bash_syntax`` hands in the words after quote removal) or
know about permission rules.

Why an allowlist of flags and not of command names: "read-only" programs have options that
write files (``sort -o``, ``tree -o``, ``git diff --output``), run other programs
(``sort --compress-program``, ``rg --pre``, ``git grep -O``), change the system (``date -s``)
or write caches (``file -C``). Listing what is safe is finite; listing what is not never is.

GNU long options: getopt accepts any unambiguous prefix (``sort --out=x`` is
``--output=x``). Rather than knowing every command's complete option set to tell which
prefixes are harmless, an abbreviated long option is never read-only: spell it out.

What flags cannot promise: git reads its repository's config, and that config names
programs (``core.fsmonitor`` under ``git status``, ``diff.external`` under ``git diff``). A
directory holding ``HEAD``, ``config``, ``objects/`` and ``refs/`` is a bare repository git
discovers on its own, and such files are ordinary files a cloned repository or an accepted
edit can create. So a read-only command also runs with ``harden_git``'s environment: no
bare repository found by discovery, no fsmonitor, no pager, no hooks, no transport (lazy
fetch), no index writes.
What it cannot turn off (``diff.external``, textconv drivers, clean filters, ``gpg.program``)
is asked about instead while the workspace is untrusted (``repo_config``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import msgspec

__all__ = ["READERS", "harden_git", "is_read_only", "read_only_programs"]

# Command-scope git config (it outranks every config file) for commands that run unasked.
_GIT_HARDENING = (
    ("safe.bareRepository", "explicit"),
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    # A repository's hooks (.git/hooks, or a core.hooksPath it sets): `git status` writes
    # the index, and writing it runs post-index-change.
    ("core.hooksPath", "/dev/null"),
)


# The child's git reads it; the daemon is not configured by it (so not in --help).
_COUNT = "GIT_CONFIG_COUNT"


def harden_git(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` plus command-scope git config that keeps a read-only git from running a
    program its repository's config names; keeps any ``GIT_CONFIG_COUNT`` pairs given."""
    env = dict(base)
    try:
        count = int(env.get(_COUNT, "0"))
    except ValueError:
        count = 0
    for key, value in _GIT_HARDENING:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env[_COUNT] = str(count)
    env["GIT_ALLOW_PROTOCOL"] = "none"  # no lazy fetch of a promisor remote
    # No opportunistic index refresh: a read-only command does not write .git/index, and
    # two of them running in parallel do not race for index.lock.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    return env


class Options(msgspec.Struct, frozen=True):
    """The options a command may carry while it only reads."""

    short: str = ""  # short flags without an argument
    short_arg: str = ""  # short flags that take one (rest of the bundle, or the next word)
    long: frozenset[str] = frozenset()  # `--name`
    long_arg: frozenset[str] = frozenset()  # `--name=V` or `--name V`
    long_optional: frozenset[str] = frozenset()  # `--name` or `--name=V`
    numeric: bool = False  # `-5` (head, tail, git log)
    # What the operands (non-option words) may be; None: anything.
    operands: Callable[[list[str]], bool] | None = None
    # Options are only read before the first operand (echo-like, printf, find).
    posix: bool = False
    # Subcommands: the first operand picks another table.
    subcommands: dict[str, Options] = msgspec.field(default_factory=dict)


def _opts(
    short: str = "",
    short_arg: str = "",
    long: str = "",
    *,
    numeric: bool = False,
    operands: Callable[[list[str]], bool] | None = None,
    posix: bool = False,
) -> Options:
    """``long`` is space-separated: ``name`` takes no argument, ``name=`` requires one,
    ``name[=]`` may have one attached."""
    plain: set[str] = set()
    required: set[str] = set()
    optional: set[str] = set()
    for item in long.split():
        if item.endswith("[=]"):
            optional.add("--" + item[:-3])
        elif item.endswith("="):
            required.add("--" + item[:-1])
        else:
            plain.add("--" + item)
    return Options(
        short,
        short_arg,
        frozenset(plain),
        frozenset(required),
        frozenset(optional),
        numeric,
        operands,
        posix,
    )


def _at_most(n: int) -> Callable[[list[str]], bool]:
    return lambda operands: len(operands) <= n


def _none(operands: list[str]) -> bool:
    return not operands


_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def parse_options(spec: Options, args: Sequence[str]) -> list[str] | None:
    """The operands, if every option in ``args`` is allowed; None otherwise."""
    operands: list[str] = []
    i = 0
    n = len(args)
    while i < n:
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if arg == "-" or not arg.startswith("-"):
            operands.append(arg)
            if spec.posix:
                operands.extend(args[i:])
                break
            continue
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            if name in spec.long and not eq:
                continue
            if name in spec.long_optional:
                continue
            if name in spec.long_arg:
                if not eq:
                    if i >= n:
                        return None
                    i += 1
                continue
            return None  # unknown, or an abbreviation (see the module docstring)
        if spec.numeric and _NUMBER.fullmatch(arg):
            continue
        # A bundle of short flags: `-la`, `-n5`, `-rk2`.
        j = 1
        while j < len(arg):
            flag = arg[j]
            if flag in spec.short:
                j += 1
                continue
            if flag in spec.short_arg:
                if j + 1 == len(arg):  # the argument is the next word
                    if i >= n:
                        return None
                    i += 1
                break  # the rest of the bundle is the argument
            return None
    return operands


def _check(spec: Options, args: Sequence[str]) -> bool:
    if spec.subcommands:
        return _subcommand(spec, args)
    operands = parse_options(spec, args)
    if operands is None:
        return False
    return spec.operands is None or spec.operands(operands)


def _subcommand(spec: Options, args: Sequence[str]) -> bool:
    # Options before the subcommand belong to the command itself.
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return False
        i += 1
    if parse_options(Options(spec.short, spec.short_arg, spec.long), args[:i]) != []:
        return False
    if i == len(args):
        return spec.operands is not None and spec.operands([])
    sub = spec.subcommands.get(args[i])
    return sub is not None and _check(sub, args[i + 1 :])


# ----------------------------------------------------------------------------- tables


_LS = _opts(
    "aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1",
    "IwT",
    "all almost-all author escape block-size= ignore-backups color[=] directory dired classify "
    "file-type format= full-time group-directories-first no-group human-readable si "
    "dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink[=] "
    "indicator-style= inode ignore= kibibytes dereference numeric-uid-gid literal "
    "hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size "
    "sort= time= time-style= tabsize= width= context zero help version",
)
_CAT = _opts(
    "AbeEnstTuv",
    "",
    "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting "
    "help version",
)
_HEAD = _opts(
    "qvz",
    "nc",
    "bytes= lines= quiet silent verbose zero-terminated help version",
    numeric=True,
)
_TAIL = _opts(
    "fFqvz",
    "ncs",
    "bytes= follow[=] lines= pid= quiet silent retry sleep-interval= verbose zero-terminated "
    "max-unchanged-stats= help version",
    numeric=True,
)
_WC = _opts(
    "cmlLw",
    "",
    "bytes chars lines max-line-length words files0-from= total= help version",
)
_SORT = _opts(
    "bdfgiMhnRrVcCmsuz",
    "kSt",  # not -T (a temporary directory to write into), not -o
    "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort "
    "ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort "
    "random-source= reverse sort= version-sort check[=] merge key= field-separator= "
    "buffer-size= stable unique zero-terminated debug files0-from= parallel= help version",
)
_UNIQ = _opts(
    "cdDiuz",
    "fsw",
    "count repeated all-repeated[=] skip-fields= ignore-case skip-chars= unique group[=] "
    "zero-terminated check-chars= help version",
    numeric=True,
    operands=_at_most(1),  # `uniq in out` writes `out`
)
_CUT = _opts(
    "nsz",
    "bcdf",
    "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= "
    "zero-terminated help version",
)
_TR = _opts("cCdst", "", "complement delete squeeze-repeats truncate-set1 help version")
_GREP = _opts(
    "EFGPiyvwxcLloqsbHhnTZzUaIrRV",
    "efmABCdD",
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case "
    "no-ignore-case word-regexp line-regexp null-data no-messages invert-match version help "
    "max-count= byte-offset line-number no-line-number line-buffered with-filename "
    "no-filename label= only-matching quiet silent binary-files= text directories= "
    "devices= recursive dereference-recursive include= exclude= exclude-from= "
    "exclude-dir= files-without-match files-with-matches count initial-tab null "
    "before-context= after-context= context= group-separator= no-group-separator "
    "color[=] colour[=] binary",
    numeric=True,
)
# ripgrep: --pre and --hostname-bin name programs to run; -z/--search-zip runs
# decompressors found on PATH; --no-config stays allowed, --config-path? not an rg option.
_RG = _opts(
    "abcFHhiIlLnNopPqsSuUvVwx0.",
    "ABCefgjmMEtTrd",
    "after-context= before-context= context= binary block-buffered byte-offset case-sensitive "
    "color= colors= column context-separator= count count-matches crlf debug dfa-size-limit= "
    "encoding= engine= field-context-separator= field-match-separator= file= files "
    "files-with-matches files-without-match fixed-strings follow glob= glob-case-insensitive "
    "heading no-heading help hidden iglob= ignore-case ignore-file= ignore-file-case-insensitive "
    "include-zero invert-match json line-buffered line-number no-line-number line-regexp "
    "max-columns= max-columns-preview max-count= max-depth= max-filesize= mmap multiline "
    "multiline-dotall no-config no-ignore no-ignore-dot no-ignore-exclude no-ignore-files "
    "no-ignore-global no-ignore-messages no-ignore-parent no-ignore-vcs no-messages no-mmap "
    "no-unicode null null-data one-file-system only-matching passthru path-separator= pcre2 "
    "pretty quiet regex-size-limit= regexp= replace= search-zip-no smart-case sort= sortr= stats "
    "text threads= trim type= type-add= type-clear= type-list type-not= unrestricted "
    "vimgrep with-filename no-filename word-regexp version no-require-git no-hidden "
    "no-follow no-binary no-pcre2 no-text no-column no-byte-offset no-crlf no-heading "
    "no-invert-match no-multiline no-multiline-dotall no-pretty no-search-zip "
    "no-sort-files no-trim no-unrestricted max-depth= maxdepth= generate= hyperlink-format=",
)
_FIND_PRED_NOARG = frozenset(
    [
        "-print",
        "-print0",
        "-ls",
        "-prune",
        "-quit",
        "-true",
        "-false",
        "-empty",
        "-readable",
        "-writable",
        "-executable",
        "-nouser",
        "-nogroup",
        "-depth",
        "-mount",
        "-xdev",
        "-noleaf",
        "-follow",
        "-daystart",
        "-not",
        "-a",
        "-and",
        "-o",
        "-or",
        "!",
        "(",
        ")",
        ",",
        "-ignore_readdir_race",
        "-noignore_readdir_race",
        "-d",
    ]
)
_FIND_PRED_ARG = frozenset(
    [
        "-name",
        "-iname",
        "-path",
        "-ipath",
        "-wholename",
        "-iwholename",
        "-regex",
        "-iregex",
        "-type",
        "-xtype",
        "-size",
        "-mtime",
        "-mmin",
        "-atime",
        "-amin",
        "-ctime",
        "-cmin",
        "-newer",
        "-anewer",
        "-cnewer",
        "-perm",
        "-user",
        "-group",
        "-uid",
        "-gid",
        "-links",
        "-inum",
        "-samefile",
        "-maxdepth",
        "-mindepth",
        "-printf",
        "-regextype",
        "-lname",
        "-ilname",
        "-used",
        "-fstype",
        "-context",
    ]
)
_FIND_NEWER = re.compile(r"-newer[amcBt][amcBt]")


def _find(args: Sequence[str]) -> bool:
    """``find``: leading -H/-L/-P/-D/-O, paths, then an expression of listed tests and
    actions (none that run a program, delete, or write a file)."""
    i = 0
    while (i < len(args) and args[i] in ("-H", "-L", "-P")) or (
        i < len(args) and args[i].startswith("-O") and args[i][2:].isdigit()
    ):
        i += 1
    while i < len(args) and not args[i].startswith(("-", "(", "!", ")", ",")):
        i += 1  # start points
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in _FIND_PRED_NOARG:
            continue
        if arg in _FIND_PRED_ARG or _FIND_NEWER.fullmatch(arg):
            if i >= len(args):
                return False
            i += 1
            continue
        return False
    return True


def _date_operands(operands: list[str]) -> bool:
    # `date MMDDhhmm` sets the clock; only `+FORMAT` is a read.
    return all(o.startswith("+") for o in operands)


_DATE = _opts(
    "uR",
    "dfr",
    "date= file= reference= utc universal rfc-email rfc-2822 iso-8601[=] rfc-3339= debug "
    "resolution help version",
    operands=_date_operands,
)


def _date(args: Sequence[str]) -> bool:
    cleaned = [a for a in args if not re.fullmatch(r"-I(date|hours|minutes|seconds|ns)?", a)]
    return _check(_DATE, cleaned)


_PWD = _opts("LP", "", "help version", operands=_none)
_DURATION = re.compile(r"(\d+(\.\d*)?|\.\d+)[smhd]?|inf|infinity")
_SLEEP = Options(operands=lambda operands: all(_DURATION.fullmatch(o) for o in operands))
_NL = _opts(
    "p",
    "bdfhilnsvw",
    "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= "
    "join-blank-lines= number-format= no-renumber number-separator= starting-line-number= "
    "number-width= help version",
)
_OD = _opts(
    "bcdfilosvx",
    "AjNSt",
    "address-radix= endian= skip-bytes= read-bytes= format= output-duplicates strings[=] "
    "traditional width[=] help version",
)
_HEXDUMP = _opts("bcCdovxX", "efnsL", "help version")
# `file -C` compiles a magic file (writes magic.mgc): not listed.
_FILE = _opts(
    "bcdEhiIklLNprsSvz0",
    "efFmP",
    "brief checking-printout exclude= exclude-quiet= files-from= separator= mime mime-type "
    "mime-encoding keep-going list dereference no-dereference no-pad print0 preserve-date "
    "raw special-files no-sandbox uncompress uncompress-noreport extension apple magic-file= "
    "parameter= help version",
)
_STAT = _opts(
    "LfTt",
    "c",
    "dereference file-system format= printf= terse cached= help version",
)
_DU = _opts(
    "0abcDhHklLmPsSxg",
    "BdtX",
    "null all apparent-size block-size= bytes total dereference-args max-depth= "
    "human-readable inodes dereference count-links no-dereference separate-dirs si summarize "
    "threshold= time[=] time-style= exclude-from= exclude= one-file-system files0-from= "
    "help version",
)
_DF = _opts(
    "ahHiklPTv",
    "Btx",
    "all block-size= human-readable si inodes local no-sync sync output[=] portability "
    "print-type total type= exclude-type= help version",
)
_BASENAME = _opts("az", "s", "multiple suffix= zero help version")
_DIRNAME = _opts("z", "", "zero help version")
_REALPATH = _opts(
    "eLmPqsz",
    "",
    "canonicalize-existing canonicalize-missing logical physical quiet relative-to= "
    "relative-base= strip no-symlinks zero help version",
)
_READLINK = _opts(
    "femnqsvz",
    "",
    "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose "
    "zero help version",
)
_WHICH = _opts("as", "", "all help version")
_ID = _opts("agGnruzZ", "", "context group groups name real user zero help version")
_UNAME = _opts(
    "asnrvmpio",
    "",
    "all kernel-name nodename kernel-release kernel-version machine processor "
    "hardware-platform operating-system help version",
    operands=_none,
)
_DIFF = _opts(
    "qsciueEbwBZTtNarpPdy",
    "CUIxXSDFW",
    "brief report-identical-files context[=] unified[=] normal side-by-side width= "
    "left-column suppress-common-lines expand-tabs initial-tab tabsize= suppress-blank-empty "
    "label= show-c-function show-function-line= ignore-case ignore-file-name-case "
    "no-ignore-file-name-case ignore-tab-expansion ignore-trailing-space ignore-space-change "
    "ignore-all-space ignore-blank-lines ignore-matching-lines= text strip-trailing-cr "
    "minimal speed-large-files horizon-lines= new-file unidirectional-new-file recursive "
    "no-dereference exclude= exclude-from= starting-file= from-file= to-file= color[=] "
    "palette= line-format= old-line-format= new-line-format= unchanged-line-format= "
    "old-group-format= new-group-format= changed-group-format= unchanged-group-format= "
    "ifdef= help version",
    numeric=True,
)
_CMP = _opts("blsz", "in", "print-bytes ignore-initial= verbose bytes= quiet silent help version")
_SEQ = _opts("w", "fs", "format= separator= equal-width help version", numeric=True)
_SUM = _opts(
    "bctwz",
    "",
    "binary check tag text ignore-missing quiet status strict warn zero help version",
)
_CKSUM = _opts(
    "lrz",
    "a",
    "algorithm= base64 check debug length= raw tag untagged zero help version",
)
_PRINTENV = _opts("0", "", "null help version")
# tree -o FILE writes its listing into FILE: not listed.
_TREE = _opts(
    "aldfxpsughDFqNQrtvcUCnAS",
    "LPIH",
    "noreport charset= filelimit= timefmt= prune du si dirsfirst filesfirst gitignore "
    "matchdirs metafirst info fromfile ignore-case sort= inodes device help version",
)
_COLUMN = _opts(
    "tJxned",
    "csoNRHWEOTiprlS",
    "table table-columns= table-order= table-name= table-right= table-truncate= "
    "table-noextreme= table-wrap= table-hide= json separator= output-separator= "
    "fillrows columns= keep-empty-lines tree= tree-id= tree-parent= use-spaces= help version",
)
# jq programs cannot run commands or write files; they can read files named with
# --rawfile/--slurpfile/-f, which a Read of those files would too.
_JQ = _opts(
    "ncrjaSCMseh0",
    "fL",
    "null-input compact-output raw-output raw-output0 join-output ascii-output sort-keys "
    "color-output monochrome-output tab indent= unbuffered stream stream-errors seq slurp "
    "raw-input from-file= arg= argjson= slurpfile= rawfile= args jsonargs exit-status "
    "help version build-configuration",
)
_FOLD = _opts("bs", "w", "bytes spaces width= help version", numeric=True)
_REV = _opts("0", "", "zero help version")
_TAC = _opts("br", "s", "before regex separator= help version")
_STRINGS = _opts(
    "adfwo",
    "nte",
    "all data print-file-name bytes= radix= encoding= include-all-whitespace "
    "output-separator= unicode= help version",
    numeric=True,
)
_NUMFMT = _opts(
    "dz",
    "",
    "debug delimiter= field= format= from= from-unit= grouping header[=] invalid= padding= "
    "round= suffix= to= to-unit= zero-terminated help version",
)
_LOCALE = _opts("acmkv", "", "all-locales charmaps category-name keyword-name verbose help version")
_NPROC = _opts("", "", "all ignore= help version", operands=_none)
_GROUPS = Options(operands=lambda operands: True)


def _printf(args: Sequence[str]) -> bool:
    # `printf -v NAME` assigns a shell variable (which a later command may use as its PATH).
    return not args or args[0] == "--" or not args[0].startswith("-")


def _echo(args: Sequence[str]) -> bool:
    return True  # echo prints every word, options included; nothing it takes runs or writes


def _test(args: Sequence[str]) -> bool:
    return True  # test/[ only look at files and strings


def _type(args: Sequence[str]) -> bool:
    return all(a in ("-a", "-f", "-t", "-p", "-P", "--") or not a.startswith("-") for a in args)


# ------------------------------------------------------------------------------- git

_LOG_FLAGS = (
    "oneline graph decorate[=] no-decorate decorate-refs= decorate-refs-exclude= source all "
    "branches[=] tags[=] remotes[=] stat[=] shortstat numstat name-only name-status "
    "patch no-patch raw summary dirstat[=] patch-with-stat patch-with-raw compact-summary "
    "max-count= skip= since= until= after= before= author= committer= grep= all-match "
    "invert-grep regexp-ignore-case basic-regexp extended-regexp fixed-strings perl-regexp "
    "format= pretty[=] abbrev-commit no-abbrev-commit abbrev[=] no-abbrev merges no-merges "
    "min-parents= max-parents= first-parent reverse follow date= relative-date left-right "
    "cherry-pick cherry-mark cherry topo-order date-order author-date-order no-walk[=] "
    "boundary full-history simplify-by-decoration simplify-merges ancestry-path[=] "
    "dense sparse show-pulls parents children walk-reflogs merge encoding= notes[=] "
    "no-notes show-signature show-notes[=] color[=] no-color full-diff log-size "
    "mailmap no-mailmap use-mailmap expand-tabs[=] no-expand-tabs clear-decorations "
    "in-commit-order reflog not count exclude= exclude-hidden= glob= bisect since-as-filter= "
    "unified= word-diff[=] word-diff-regex= color-words[=] color-moved[=] no-color-moved "
    "minimal patience histogram diff-algorithm= anchored= diff-filter= find-renames[=] "
    "find-copies[=] find-copies-harder no-renames rename-empty no-rename-empty "
    "irreversible-delete ignore-space-at-eol ignore-space-change ignore-all-space "
    "ignore-blank-lines ignore-cr-at-eol ignore-matching-lines= ignore-submodules[=] "
    "function-context full-index binary src-prefix= dst-prefix= no-prefix default-prefix "
    "line-prefix= relative[=] no-relative text exit-code quiet check ws-error-highlight= "
    "no-ext-diff no-textconv submodule[=] inter-hunk-context= output-indicator-new= "
    "output-indicator-old= output-indicator-context= remerge-diff diff-merges= "
    "combined-all-paths dd cc show-linear-break[=] break-rewrites[=] pickaxe-all "
    "pickaxe-regex stat-width= stat-name-width= stat-graph-width= stat-count= z "
    "name-only abbrev-commit indent-heuristic no-indent-heuristic skip-to= rotate-to= "
    "no-standalone standalone ita-invisible-in-index ita-visible-in-index "
    "follow-renames line-porcelain"
)
_LOG = _opts("puRawbzmcrtqsiEFPMCBDW", "nSGOUlL", _LOG_FLAGS, numeric=True)
_DIFF_GIT = _opts(
    "puRawbzmcrtqsiEFPMCBDW",
    "SGOUl",
    _LOG_FLAGS + " cached staged no-index merge-base",
    numeric=True,
)
_STATUS = _opts(
    "sbvz",
    "",
    "short branch show-stash porcelain[=] long verbose untracked-files[=] ignored[=] "
    "ignore-submodules[=] column[=] no-column ahead-behind no-ahead-behind renames "
    "no-renames find-renames[=] null no-optional-locks",
)


def _git_status(args: Sequence[str]) -> bool:
    # `-u` takes an optional attached mode: -uno, -uall, -unormal.
    cleaned = [a for a in args if not re.fullmatch(r"-u(no|normal|all)?", a)]
    return _check(_STATUS, cleaned)


def _listing_only(spec: Options, list_flags: frozenset[str]) -> Callable[[Sequence[str]], bool]:
    """``git branch``/``git tag``: operands are patterns only with --list (else they
    create, rename or delete)."""

    def check(args: Sequence[str]) -> bool:
        operands = parse_options(spec, args)
        if operands is None:
            return False
        return not operands or any(a in list_flags for a in args)

    return check


_BRANCH = _opts(
    "arvl",
    "",
    "all remotes verbose list show-current contains[=] no-contains[=] merged[=] no-merged[=] "
    "sort= format= points-at= color[=] no-color column[=] no-column ignore-case "
    "abbrev= no-abbrev omit-empty",
)
_TAG = _opts(
    "l",
    "n",
    "list contains= no-contains= merged[=] no-merged[=] sort= format= points-at= "
    "color[=] column[=] no-column ignore-case omit-empty",
)
_GIT_GREP = _opts(
    "aiIvwxEGFPhHnclLozqWp",
    "efABCm",
    "cached untracked no-index no-exclude-standard exclude-standard recurse-submodules "
    "text ignore-case word-regexp invert-match full-name extended-regexp "
    "basic-regexp fixed-strings perl-regexp line-number column files-with-matches "
    "name-only files-without-match null only-matching count color[=] no-color break "
    "heading show-function function-context after-context= before-context= context= "
    "threads= and or not all-match quiet max-depth= max-count= no-textconv",
    numeric=True,
)
_BLAME = _opts(
    "bcflnpstweMC",
    "LS",
    "root show-stats score-debug show-name show-number show-email porcelain "
    "line-porcelain incremental encoding= contents= date= since= ignore-rev= "
    "ignore-revs-file= color-lines color-by-age minimal progress no-progress abbrev= "
    "first-parent reverse= no-textconv",
)
_LS_FILES = _opts(
    "cdmoiskuztvfx",
    "xX",
    "cached deleted modified others ignored stage killed directory no-empty-directory "
    "unmerged resolve-undo exclude= exclude-from= exclude-per-directory= exclude-standard "
    "error-unmatch with-tree= full-name recurse-submodules abbrev[=] debug eol "
    "deduplicate sparse format= zero",
)
_LS_TREE = _opts(
    "rdtlz",
    "",
    "long name-only name-status object-only full-name full-tree abbrev[=] format=",
)
_REV_PARSE = _opts(
    "q",
    "",
    "verify quiet short[=] abbrev-ref[=] symbolic symbolic-full-name all branches[=] tags[=] "
    "remotes[=] glob= exclude= disambiguate= show-toplevel show-prefix show-cdup git-dir "
    "absolute-git-dir git-common-dir is-inside-git-dir is-inside-work-tree "
    "is-bare-repository is-shallow-repository resolve-git-dir= git-path= "
    "show-superproject-working-tree show-object-format[=] show-ref-format local-env-vars "
    "since= until= after= before= default= prefix= revs-only no-revs flags no-flags "
    "sq sq-quote not",
)
_SHOW_REF = _opts(
    "dsq",
    "",
    "heads tags branches head dereference hash[=] verify abbrev[=] quiet exists "
    "exclude-existing[=]",
)
_DESCRIBE = _opts(
    "",
    "",
    "all tags contains abbrev= long always dirty[=] broken match= exclude= first-parent "
    "exact-match candidates= debug",
)
_SHORTLOG = _opts(
    "nsec",
    "w",
    _LOG_FLAGS + " numbered summary email committer group= format=",
    numeric=True,
)
# cat-file --textconv / --filters run the repository's configured drivers: not listed.
_CAT_FILE = _opts(
    "tspe",
    "",
    "batch[=] batch-check[=] batch-command[=] batch-all-objects buffer unordered "
    "follow-symlinks allow-unknown-type use-mailmap no-use-mailmap mailmap no-mailmap "
    "Z path=",
)
_REFLOG_SHOW = _LOG
_STASH = Options(
    subcommands={"list": _LOG, "show": _DIFF_GIT},
)
_REMOTE = _opts("v", "", "verbose", operands=_none)
_GIT_GLOBAL = _opts(
    "P",
    "",
    "no-pager no-optional-locks literal-pathspecs glob-pathspecs noglob-pathspecs "
    "icase-pathspecs no-replace-objects no-lazy-fetch no-advice",
)


def _git(args: Sequence[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 1
    # -C, -c, --git-dir, --work-tree, --exec-path, --config-env and the rest are not listed:
    # another repository's config (hooks, fsmonitor, pagers) would run.
    if parse_options(_GIT_GLOBAL, args[:i]) != [] or i == len(args):
        return False
    sub, rest = args[i], args[i + 1 :]
    check = _GIT.get(sub)
    return check is not None and check(rest)


def _reflog(args: Sequence[str]) -> bool:
    # `git reflog expire/delete/drop` destroy history: only `git reflog [show] ...`.
    if args and args[0] == "show":
        args = args[1:]
    operands = parse_options(_LOG, args)
    return operands is not None and not any(
        o in ("expire", "delete", "drop", "write") for o in operands
    )


def _checker(spec: Options) -> Callable[[Sequence[str]], bool]:
    return lambda args: _check(spec, args)


_GIT: dict[str, Callable[[Sequence[str]], bool]] = {
    "status": _git_status,
    "log": _checker(_LOG),
    "show": _checker(_DIFF_GIT),
    "diff": _checker(_DIFF_GIT),
    "whatchanged": _checker(_LOG),
    "branch": _listing_only(_BRANCH, frozenset({"-l", "--list"})),
    "tag": _listing_only(_TAG, frozenset({"-l", "--list"})),
    "rev-parse": _checker(_REV_PARSE),
    "ls-files": _checker(_LS_FILES),
    "ls-tree": _checker(_LS_TREE),
    "blame": _checker(_BLAME),
    "describe": _checker(_DESCRIBE),
    "shortlog": _checker(_SHORTLOG),
    "cat-file": _checker(_CAT_FILE),
    "grep": _checker(_GIT_GREP),
    "show-ref": _checker(_SHOW_REF),
    "reflog": _reflog,
    "stash": lambda args: bool(args) and _check(_STASH, args),
    "remote": _checker(_REMOTE),
}


# ----------------------------------------------------------------------------- lookup

_COMMANDS: dict[str, Callable[[Sequence[str]], bool]] = {
    "ls": _checker(_LS),
    "cat": _checker(_CAT),
    "echo": _echo,
    "printf": _printf,
    "date": _date,
    "sleep": _checker(_SLEEP),
    "pwd": _checker(_PWD),
    "grep": _checker(_GREP),
    "egrep": _checker(_GREP),
    "fgrep": _checker(_GREP),
    "rg": _checker(_RG),
    "head": _checker(_HEAD),
    "tail": _checker(_TAIL),
    "wc": _checker(_WC),
    "sort": _checker(_SORT),
    "cut": _checker(_CUT),
    "tr": _checker(_TR),
    "nl": _checker(_NL),
    "od": _checker(_OD),
    "hexdump": _checker(_HEXDUMP),
    "file": _checker(_FILE),
    "stat": _checker(_STAT),
    "du": _checker(_DU),
    "df": _checker(_DF),
    "basename": _checker(_BASENAME),
    "dirname": _checker(_DIRNAME),
    "realpath": _checker(_REALPATH),
    "readlink": _checker(_READLINK),
    "which": _checker(_WHICH),
    "whoami": _checker(_opts("", "", "help version", operands=_none)),
    "id": _checker(_ID),
    "uname": _checker(_UNAME),
    "true": _test,
    "false": _test,
    "test": _test,
    "[": _test,
    "diff": _checker(_DIFF),
    "cmp": _checker(_CMP),
    "seq": _checker(_SEQ),
    "md5sum": _checker(_SUM),
    "sha1sum": _checker(_SUM),
    "sha224sum": _checker(_SUM),
    "sha256sum": _checker(_SUM),
    "sha384sum": _checker(_SUM),
    "sha512sum": _checker(_SUM),
    "b2sum": _checker(_SUM),
    "cksum": _checker(_CKSUM),
    "printenv": _checker(_PRINTENV),
    "tree": _checker(_TREE),
    "column": _checker(_COLUMN),
    "jq": _checker(_JQ),
    "fold": _checker(_FOLD),
    "rev": _checker(_REV),
    "tac": _checker(_TAC),
    "strings": _checker(_STRINGS),
    "uniq": _checker(_UNIQ),
    "expr": _test,
    "numfmt": _checker(_NUMFMT),
    "locale": _checker(_LOCALE),
    "nproc": _checker(_NPROC),
    "arch": _checker(_opts("", "", "help version", operands=_none)),
    "groups": _checker(_GROUPS),
    "type": _type,
    "find": _find,
    "git": _git,
}


def read_only_programs() -> frozenset[str]:
    """Every command name that can be read-only with some arguments."""
    return frozenset(_COMMANDS)


def is_read_only(argv: Sequence[str]) -> bool:
    """Whether this one simple command (its words after quote removal, no assignments, no
    redirections) only reads."""
    if not argv:
        return False
    check = _COMMANDS.get(argv[0])
    return check is not None and check(argv[1:])


# Programs that show, copy or move away the contents of the files their operands name,
# and interpreters and shells that read a file they are given (`sh .env`, `source .env`,
# `perl -pe1 .env`; `sh -c` and `eval` code is looked into): Read deny rules are checked
# against their operands (a wrapper's too: `env cat .env`).
# Not the ones that list names or metadata only (ls, find, stat, du, tree, test):
# `ls secrets/` and `find . -name .env` still run. git counts only in its read-only
# commands (`git diff .env`, `git show HEAD:.env` ...): `git rm --cached .env` runs.
READERS = frozenset(
    {
        ".",
        "awk",
        "base64",
        "bash",
        "bzcat",
        "bzip2",
        "cat",
        "cmp",
        "column",
        "cp",
        "cut",
        "dash",
        "dd",
        "diff",
        "egrep",
        "eval",
        "fgrep",
        "file",
        "fold",
        "gawk",
        "git",
        "grep",
        "gzip",
        "head",
        "hexdump",
        "join",
        "ksh",
        "lua",
        "jq",
        "less",
        "mawk",
        "more",
        "mv",
        "nl",
        "node",
        "od",
        "paste",
        "perl",
        "php",
        "python",
        "python3",
        "rev",
        "rg",
        "ruby",
        "rsync",
        "scp",
        "sed",
        "sh",
        "source",
        "sort",
        "strings",
        "tac",
        "tail",
        "tar",
        "uniq",
        "wc",
        "xxd",
        "xz",
        "xzcat",
        "zcat",
        "zip",
        "zless",
        "zsh",
    }
)


# The tables, for tests: each command's Options when it has a single one.
TABLES: dict[str, Options] = {
    "ls": _LS,
    "cat": _CAT,
    "head": _HEAD,
    "tail": _TAIL,
    "wc": _WC,
    "sort": _SORT,
    "cut": _CUT,
    "tr": _TR,
    "grep": _GREP,
    "rg": _RG,
    "diff": _DIFF,
    "stat": _STAT,
    "du": _DU,
    "file": _FILE,
    "tree": _TREE,
    "jq": _JQ,
    "uniq": _UNIQ,
}
