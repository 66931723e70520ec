"""Summarise py-spy's collapsed stacks: `python -m bench.profile_summary PATH [PATH…] [--top N]`.

Prints where the samples went: the share of samples whose stack passes through each function (inclusive,
project code and the libraries it calls), the leaf functions (self time), and the split between the event
loop thread and the store's database threads.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.+?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def frames(stack: str) -> list[str]:
    out = []
    for raw in stack.split(";"):
        match = FRAME.match(raw.strip())
        if match:
            out.append(f"{match['func']} ({match['file']})")
        else:
            out.append(raw.strip())
    return out


def summarise(paths: list[Path], top: int) -> str:
    inclusive: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    total = 0
    for path in paths:
        for line in path.read_text().splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            total += count
            chain = frames(stack)
            for name in set(chain):
                inclusive[name] += count
            leaf[chain[-1]] += count
            if any("run_forever" in f for f in chain):
                threads["event loop thread"] += count
            elif any("store/django/store.py" in f for f in chain):
                threads["store threads (a statement or transaction in flight)"] += count
            elif chain[-1].startswith("_worker "):
                threads["pool threads between tasks (queue wait / GIL)"] += count
            elif any("wakeups.py" in f for f in chain):
                threads["LISTEN/NOTIFY listener thread"] += count
            else:
                threads["other threads"] += count
    if not total:
        return "no samples"

    def block(title: str, counter: Counter[str], n: int) -> list[str]:
        lines = [title]
        for name, count in counter.most_common(n):
            lines.append(f"  {count / total * 100:5.1f}%  {name}")
        return lines

    out = [f"{total} samples"]
    out += block("by thread:", threads, 5)
    out += block("inclusive (stack passes through):", inclusive, top)
    out += block("self (leaf frame):", leaf, top)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.profile_summary")
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    print(summarise(args.paths, args.top))


if __name__ == "__main__":
    main()
