"""Read-only means command + subcommand + flags from an allowlist (issue 11, class 1).

Table-driven spellings of every way a "read-only" command can write or run something
(output files through bundles and abbreviations, programs named by options, history-
destroying subcommands, system state, caches), the everyday commands that must stay
read-only, and a generated corpus: flags drawn from outside a command's allowlist are never
read-only, flags drawn from inside it are.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stdio_executor.permissions.bash_syntax import analyze
from stdio_executor.permissions.readonly import TABLES, Options, is_read_only


@pytest.mark.parametrize(
    "command",
    [
        # output files: plain, bundled, abbreviated, attached
        "sort -o out in",
        "sort -ro out in",
        "sort -rno out in",
        "sort -routfile in",
        "sort --output=out in",
        "sort --output out in",
        "sort --out=out in",
        "sort --outp out in",
        "sort -u -k2 -o x y",
        "tree -o listing.txt",
        "tree -ao x",
        "git diff --output=patch.txt",
        "git diff --outp=patch.txt",
        "git log -p --output x",
        "git show --output=/tmp/x HEAD",
        "uniq a b",
        "uniq -c a b",
        # programs named by options
        "sort --compress-program=sh in",
        "sort --compress-prog sh in",
        "sort --compress=./evil in",
        "rg --pre ./evil pattern",
        "rg --pre=sh x",
        "rg --pr=sh x",
        "rg --hostname-bin=./evil x",
        "rg -z x",
        "rg --search-zip x",
        "git grep -O foo",
        "git grep --open-files-in-pager=vim foo",
        "git grep -iO foo",
        "git diff --ext-diff",
        "git log -p --ext-diff",
        "git diff --textconv",
        "git cat-file --textconv HEAD:x",
        "git cat-file --filters HEAD:x",
        "diff -l a b",
        "diff --paginate a b",
        # find actions
        "find . -delete",
        "find . -name x -delete",
        "find . -exec rm {} +",
        "find . -execdir sh -c x ;",
        "find . -ok rm {} ;",
        "find . -okdir rm {} ;",
        "find . -fprint out",
        "find . -fprint0 out",
        "find . -fprintf out %p",
        "find . -fls out",
        "find . -newer x -fls out",
        "find . -D exec",
        # history and repository state
        "git reflog expire --expire=now --all",
        "git reflog delete HEAD@{1}",
        "git branch -D main",
        "git branch -d x",
        "git branch newbranch",
        "git branch -m a b",
        "git branch --delete x",
        "git branch -f main HEAD~3",
        "git tag v1",
        "git tag -d v1",
        "git stash",
        "git stash drop",
        "git stash clear",
        "git stash pop",
        "git remote add x y",
        "git remote remove origin",
        "git push",
        "git commit -m x",
        "git gc --prune=now",
        "git -c core.pager=sh log",
        "git -C /tmp/repo status",
        "git --git-dir=/tmp/x status",
        "git --work-tree=/ status",
        "git --exec-path=/tmp log",
        "git --config-env=core.pager=X log",
        "git --paginate log",
        "git log --no-walk --exec=x",
        "git frobnicate",
        "git",
        # system state, caches
        "date -s 2020-01-01",
        "date --set=now",
        "date --se now",
        "date -us now",
        "date 0101120025",
        "file -C -m magic",
        "file --compile -m magic",
        # unknown flags of everyday commands
        "ls --frobnicate",
        "ls -la --al",
        "cat --show",
        "head --lin 5",
        "grep --colo foo",
        "wc --l",
        "printf -v PATH /tmp/evil",
        "pwd extra",
        "uname -a extra",
        "sleep --help-me",
        "tail --foll x",
        "stat --form %s x",
        "sort -T /tmp/dir x",
        "sort --temporary-directory=/tmp x",
        # not listed at all
        "less README",
        "more README",
        "man ls",
        "hostname evil",
        "xargs ls",
        "env ls",
        "awk '{print}' x",
        "sed -n p x",
        "python -c 'print(1)'",
        "python3 -m py_compile x.py",
        "busybox ls",
        # lexing: a line continuation inside a word
        "l\\\ns",
        'echo "a\\\nb"',
    ],
)
def test_not_read_only(command: str) -> None:
    assert not analyze(command).read_only, command


@pytest.mark.parametrize(
    "command",
    [
        "ls",
        "ls -la",
        "ls -lah --color=auto src",
        "ls -1 --group-directories-first",
        "ls -I '*.pyc' -w 80",
        "cat README.md",
        "cat -n a b",
        "echo hello world",
        "echo -n --help",
        "printf '%s\\n' a b",
        "pwd",
        "pwd -P",
        "date",
        "date +%s",
        "date -u +%Y-%m-%dT%H",
        "date -d yesterday +%F",
        "date --iso-8601=seconds",
        "date -Iseconds",
        "grep -rn foo src",
        "grep -rniE 'a|b' --include='*.py' .",
        "grep -A3 -B 2 foo x",
        "grep -e -x -- file",
        "grep -c foo x",
        "rg -n foo",
        "rg -tpy -g '!*.lock' foo",
        "rg --hidden --no-ignore foo .",
        "sort x",
        "sort -rn -k2,2 -t, x",
        "sort -u --key=1 --field-separator=: x",
        "sort -k 3 x",
        "uniq -c x",
        "wc -l x",
        "head -n 20 x",
        "head -5 x",
        "tail -n +3 x",
        "tail -f log",
        "find . -name '*.py'",
        "find . -type f -name '*.md' -print",
        "find src -maxdepth 2 -type d ! -name '.*'",
        "find . \\( -name a -o -name b \\) -print0",
        "find -L . -newermt 2024-01-01 -printf '%p\\n'",
        "find . -path ./node_modules -prune -o -type f -print",
        "git status",
        "git status -sb",
        "git status --porcelain=v1 -uno",
        "git log",
        "git log --oneline -5",
        "git log -n 3 --stat --format='%h %s' main..HEAD -- src",
        "git log -p -1",
        "git log --graph --decorate --all",
        "git --no-pager log -3",
        "git diff",
        "git diff --cached --stat",
        "git diff HEAD~1 -- src/x.py",
        "git diff --no-ext-diff --name-only",
        "git show HEAD",
        "git show --stat HEAD~2",
        "git branch",
        "git branch -a",
        "git branch -vv",
        "git branch --list 'feat*'",
        "git branch --show-current",
        "git tag",
        "git tag -l 'v1*'",
        "git rev-parse --show-toplevel",
        "git rev-parse --abbrev-ref HEAD",
        "git ls-files -m",
        "git blame -L 1,10 x",
        "git describe --tags --always",
        "git grep -n foo",
        "git stash list",
        "git reflog",
        "git reflog show -5",
        "git remote -v",
        "git cat-file -p HEAD",
        "diff -u a b",
        "cut -d: -f1 x",
        "tr a-z A-Z",
        "stat -c %s x",
        "du -sh .",
        "df -h",
        "jq -r .name x.json",
        "tree -L 2 -a",
        "which python",
        "uname -a",
        "id -u",
        "whoami",
        "true",
        "test -f x",
        "[ -d x ]",
        "sleep 1",
        "seq 1 10",
        "seq -5 5",
        "sha256sum x",
        "file x",
        "basename /a/b .c",
        "realpath x",
        "nproc",
        "ls \\\n -la",
    ],
)
def test_read_only(command: str) -> None:
    assert analyze(command).read_only, command


# --------------------------------------------------------------------- generated corpus

_ALL_SHORT = string.ascii_letters + string.digits


def _outside_short(spec: Options) -> list[str]:
    return [c for c in _ALL_SHORT if c not in spec.short + spec.short_arg and not c.isdigit()]


_LONG_WORDS = [
    "output",
    "out",
    "pre",
    "compress-program",
    "exec",
    "delete",
    "set",
    "write",
    "pager",
    "editor",
    "ext-diff",
    "textconv",
    "config",
    "frobnicate",
    "in-place",
    "to-command",
]


@st.composite
def _outside(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A command from the tables, common allowed flags, and one flag outside its allowlist
    (a short flag alone or inside a bundle, a long option, or an abbreviation)."""
    name = draw(st.sampled_from(sorted(TABLES)))
    spec = TABLES[name]
    args = draw(st.lists(_inside_flag(spec), max_size=3))
    kind = draw(st.sampled_from(["short", "bundle", "long", "abbrev"]))
    if kind in ("short", "bundle"):
        letters = _outside_short(spec)
        bad = draw(st.sampled_from(letters))
        before = draw(st.text(alphabet=spec.short, max_size=2)) if kind == "bundle" else ""
        flag = "-" + before + bad
    elif kind == "long":
        word = draw(st.sampled_from(_LONG_WORDS))
        flag = "--" + word
        if flag in spec.long | spec.long_arg | spec.long_optional:
            flag = "--x-" + word
        flag += draw(st.sampled_from(["", "=x"]))
    else:
        full = sorted(spec.long | spec.long_arg | spec.long_optional)
        target = draw(st.sampled_from(full))
        cut = draw(st.integers(min_value=3, max_value=max(3, len(target) - 1)))
        flag = target[:cut]
        if flag in full:
            flag = target + "x"
    position = draw(st.integers(min_value=0, max_value=len(args)))
    args.insert(position, flag)
    return name, args


def _inside_flag(spec: Options) -> st.SearchStrategy[str]:
    choices: list[st.SearchStrategy[str]] = []
    if spec.short:
        choices.append(st.text(alphabet=spec.short, min_size=1, max_size=3).map(lambda s: "-" + s))
    if spec.long:
        choices.append(st.sampled_from(sorted(spec.long)))
    if spec.long_optional:
        choices.append(st.sampled_from(sorted(spec.long_optional)))
    if spec.long_arg:
        choices.append(st.sampled_from(sorted(spec.long_arg)).map(lambda s: s + "=1"))
    if spec.short_arg:
        choices.append(st.sampled_from(spec.short_arg).map(lambda c: f"-{c}1"))
    return st.one_of(choices) if choices else st.just("--")


@settings(max_examples=400, deadline=None)
@given(_outside())
def test_a_flag_outside_the_allowlist_is_never_read_only(case: tuple[str, list[str]]) -> None:
    name, args = case
    assert not is_read_only([name, *args]), [name, *args]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(sorted(n for n in TABLES if TABLES[n].operands is None)).flatmap(
        lambda name: st.tuples(st.just(name), st.lists(_inside_flag(TABLES[name]), max_size=4))
    )
)
def test_flags_inside_the_allowlist_are_read_only(case: tuple[str, list[str]]) -> None:
    name, args = case
    assert is_read_only([name, *args, "file"]), [name, *args]
