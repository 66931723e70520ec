"""The bench's report as it is printed and kept: the verdict rows of `bench.report` as a table, with the
W12 rounds, W7's search arms and the limits measured beside them, and the JSON document written per run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.report import HEADER, W12_PARTIES, Row, failed, num, rows

__all__ = [
    "document",
    "limits_table",
    "main_table",
    "render",
    "rounds_table",
    "search_table",
    "table",
    "write_json",
]


def rounds_table(runs: Mapping[str, Any]) -> str:
    """W12's rounds in the order they ran: a noisy machine shows as rounds of one arm that disagree."""
    f12 = runs.get("W12/flowdeck")
    if not f12 or failed(f12):
        return ""
    header = ["W12 round", "clients", "W1 nodes/s", "commit → client ms p50 / p95 / max", "missed", "drain s"]
    lines = [[*header, "cores: workers / console / clients / database"]]
    for n, found in enumerate(f12["rounds"], 1):
        delivery = found.get("delivery")
        cells = ["", "", ""]
        if delivery:
            ms = delivery["ms"]
            drain = "timed out" if delivery["drain_s"] is None else f"{delivery['drain_s']:.2f}"
            cells = [
                f"{ms['p50']:.0f} / {ms['p95']:.0f} / {num(delivery['max_ms'])}",
                str(delivery["missed"]),
                drain,
            ]
        cores = found.get("cpu_cores", {})  # each party's CPU seconds per second of W1
        used = " / ".join(f"{cores[k]:.2f}" if k in cores else "-" for k in W12_PARTIES)
        lines.append([str(n), str(found["clients"]), num(found["nodes_per_s"]), *cells, used])
    return table(lines)


def table(lines: list[list[str]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    rendered = []
    for n, line in enumerate(lines):
        rendered.append("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)) + " |")
        if n == 0:
            rendered.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(rendered)


def main_table(result_rows: list[Row]) -> str:
    return table([HEADER, *(row.cells() for row in result_rows)])


def search_table(runs: Mapping[str, Any]) -> str:
    f7 = runs.get("W7/flowdeck")
    if not f7 or failed(f7):
        return ""
    lines = [["W7 arm", "p50 ms", "p95 ms", "total", "expected", "exact"]]
    for label, arm in f7["arms"].items():
        lines.append(
            [
                label,
                f"{arm['ms']['p50']:.1f}",
                f"{arm['ms']['p95']:.1f}",
                num(arm["total"]),
                num(arm["expected"]),
                "yes" if arm["exact"] else "NO",
            ]
        )
    return table(lines)


def limits_table(limits: Mapping[str, Any]) -> str:
    """pgbench and the psycopg loop in commits/s; L3 in nodes/s, with its CPU per node (its own process's,
    and the database server's)."""
    lines = [["limit", "clients", "per second", "CPU per node, µs (database)"]]
    for name, limit in limits.items():
        rate = failed(limit) or num(limit.get("per_second"))
        unit = "nodes" if name == "L3" else "commits"
        cpu = ""
        if not failed(limit) and limit.get("cpu_us_per_node") is not None:
            cpu = f"{num(limit['cpu_us_per_node'])} ({num(limit.get('database_cpu_us_per_node'))})"
        lines.append([name, str(limit.get("clients", "")), rate if failed(limit) else f"{rate} {unit}", cpu])
    return table(lines)


def document(meta: Mapping[str, Any], limits: Mapping[str, Any], runs: Mapping[str, Any]) -> dict[str, Any]:
    result_rows = rows(runs, limits)
    return {
        "meta": dict(meta),
        "limits": dict(limits),
        "runs": dict(runs),
        "rows": [asdict(row) for row in result_rows],
        "targets": {f"{row.workload}: {row.measure}": row.holds for row in result_rows if row.target},
    }


def render(doc: Mapping[str, Any]) -> str:
    result_rows = [Row(**row) for row in doc["rows"]]
    parts = [main_table(result_rows), "", limits_table(doc["limits"])]
    for extra in (search_table(doc["runs"]), rounds_table(doc["runs"])):
        if extra:
            parts += ["", extra]
    return "\n".join(parts)


def write_json(doc: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(doc, indent=2, default=str, allow_nan=True) + "\n")
