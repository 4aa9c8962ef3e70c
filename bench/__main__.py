"""Benchmarks: ``python -m bench [--quick] [--write-readme] [--only NAMES]``.

Every figure is a median of repeated runs next to a floor measured in the same run, because
absolute numbers on a shared 2-core machine drift by up to ~1.8x within an hour while
same-run ratios hold within ~10%. Prints a Markdown table; ``--write-readme`` also puts it
in README.md between the bench markers. What each row means: bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

from . import measures
from .harness import ROOT, Row, use_compiled_copy

SECTIONS = (
    "startup",
    "first-call",
    "throughput",
    "latency",
    "parallel",
    "streaming",
    "scale",
    "peers",
    "sandbox",
)
_START, _END = "<!-- bench:start -->", "<!-- bench:end -->"


def run(quick: bool, only: set[str]) -> list[Row]:
    repeat = 3 if quick else 5
    sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    peer_n = 1_000 if quick else 10_000
    rows: list[Row] = []
    with (
        tempfile.TemporaryDirectory(prefix="stdio-executor-bench-") as ws,
        tempfile.TemporaryDirectory(prefix="stdio-executor-pkg-") as pkg,
    ):
        use_compiled_copy(pkg)
        measures.make_workspace(ws)
        if "startup" in only:
            rows += measures.startup(ws, 6 if quick else 10)
        if "first-call" in only:
            rows += measures.first_call(ws, repeat)
        if "throughput" in only:
            read_input: dict[str, object] = {"file_path": os.path.join(ws, measures.SMALL_FILE)}
            rows += measures.throughput(
                ws, "Read", read_input, "Read calls of a 1 KiB file", sizes, 3
            )
            measures.settle_tree(ws)
            glob_input: dict[str, object] = {
                "pattern": "**/*.txt",
                "path": os.path.join(ws, measures.TREE),
            }
            rows += measures.throughput(
                ws, "Glob", glob_input, "Glob calls in a 10-file tree", sizes, 3
            )
        if "latency" in only:
            rows += measures.latency(ws, 300 if quick else 1_000)
        if "parallel" in only:
            rows += measures.parallel(ws, [1, 10, 50], repeat)
            rows += measures.bash_cpu(ws, 100 if quick else 300, repeat)
        if "streaming" in only:
            rows += measures.streaming(ws, 200_000_000 if quick else 1_000_000_000, 3)
        if "scale" in only:
            rows += measures.scale(ws, 10_000, 2 if quick else 3)
        if "peers" in only:
            rows += measures.peers(ws, peer_n, 3)
        if "sandbox" in only:
            rows += measures.sandbox(ws, 100 if quick else 300, repeat)
    return rows


def render(rows: list[Row], quick: bool, seconds: float) -> str:
    mark = {True: "met", False: "**missed**", None: ""}
    lines = [
        "| measurement | measured | same-run floor | ratio | target | |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.name} | {r.measured} | {r.floor} | {r.ratio} | {r.target} | {mark[r.ok]} |"
        for r in rows
    ]
    cpu = _cpu_model()
    machine = (
        f"{platform.system()} {platform.machine()}, {cpu}{os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    mode = "`python -m bench --quick`" if quick else "`python -m bench`"
    lines += [
        "",
        f"_{mode} on {machine}; {time.strftime('%Y-%m-%d')}, {seconds:.0f} s. The daemon ran "
        "from a copy of the package with compiled bytecode (compileall), as a wheel install "
        "has it._",
    ]
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() + ", "
    except OSError:
        pass
    return ""


def write_readme(table: str) -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    if _START not in text or _END not in text:
        raise SystemExit(f"README.md has no {_START} ... {_END} markers")
    head, _, rest = text.partition(_START)
    _, _, tail = rest.partition(_END)
    readme.write_text(f"{head}{_START}\n{table}\n{_END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repeats (< 1 minute)"
    )
    parser.add_argument(
        "--write-readme", action="store_true", help="put the table in README.md too"
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        metavar="NAMES",
        help=f"comma-separated sections to run (default: all): {', '.join(SECTIONS)}",
    )
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    rows = run(args.quick, only)
    table = render(rows, args.quick, time.perf_counter() - started)
    print(table)
    if args.write_readme:
        write_readme(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
