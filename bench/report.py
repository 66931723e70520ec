"""The bench's verdict: one row per workload (Flowdeck, DBOS, their ratio, the target and whether it holds);
`bench.tables` prints them as a table and writes them as JSON beside the raw measurements."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Issue 16's targets.
W1_TIMES_DBOS = 20
W2_OF_DBOS = 0.2
CPU_US_PER_NODE = 150
W4_OF_LOOP = 100  # %
W1_OF_L3 = 60  # %

WORKLOADS = tuple(f"W{n}" for n in (*range(1, 13), *range(14, 20)))  # W13: a command of its own


@dataclass(frozen=True)
class Row:
    workload: str
    measure: str
    flowdeck: str
    dbos: str = "n/a"
    ratio: str = ""
    target: str = ""
    holds: bool | None = None  # None: no target, or not measured

    def cells(self) -> list[str]:
        verdict = {True: "yes", False: "NO", None: "-" if not self.target else "?"}[self.holds]
        return [self.workload, self.measure, self.flowdeck, self.dbos, self.ratio, self.target, verdict]


HEADER = ["W", "measure", "Flowdeck", "DBOS", "ratio", "target", "holds"]


def num(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:,.{digits}f}"


def failed(run: Mapping[str, Any] | None) -> str | None:
    if run is None:
        return "not run"
    if "error" in run:
        return "error: " + str(run["error"]).splitlines()[-1][:80]
    return None


def get(runs: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    return runs.get(key)


def _rate_row(workload: str, measure: str, f: Any, d: Any, target_ratio: float | None) -> Row:
    problem = failed(f) or failed(d)
    fv = num(f["nodes_per_s"]) if not failed(f) else failed(f) or ""
    dv = num(d["nodes_per_s"]) if not failed(d) else failed(d) or ""
    if problem:
        return Row(workload, measure, fv, dv, "", f"≥ {target_ratio:g}× DBOS" if target_ratio else "", None)
    ratio = f["nodes_per_s"] / d["nodes_per_s"]
    target = f"≥ {target_ratio:g}× DBOS" if target_ratio else ""
    return Row(
        workload, measure, fv, dv, f"{ratio:.2f}×", target, ratio >= target_ratio if target_ratio else None
    )


def _latency_row(workload: str, measure: str, f: Any, d: Any, max_ratio: float | None) -> Row:
    def show(run: Any) -> str:
        return failed(run) or f"{run['ms']['p50']:.1f} / {run['ms']['p95']:.1f}"

    target = f"≤ {max_ratio:g} of DBOS (p50 and p95)" if max_ratio else ""
    if failed(f) or failed(d):
        return Row(workload, measure, show(f), show(d), "", target, None)
    r50 = f["ms"]["p50"] / d["ms"]["p50"]
    r95 = f["ms"]["p95"] / d["ms"]["p95"]
    holds = (r50 <= max_ratio and r95 <= max_ratio) if max_ratio else None
    return Row(workload, measure, show(f), show(d), f"{r50:.2f} / {r95:.2f}", target, holds)


def _queued_row(workload: str, measure: str, f: Any, d: Any) -> Row:
    """W2's second figure, with no target: Flowdeck's plain (queued) start beside DBOS's one W2 figure."""
    if failed(f) or "ms_queued" not in f:  # a failed run, or results from before W2 measured it
        return _latency_row(workload, measure, f if failed(f) else {"error": "not measured"}, d, None)
    return _latency_row(workload, measure, {**f, "ms": f["ms_queued"]}, d, None)


def rows(runs: Mapping[str, Any], limits: Mapping[str, Any]) -> list[Row]:
    f1, d1 = get(runs, "W1/flowdeck/1p"), get(runs, "W1/dbos/1p")
    f2w, d2w = get(runs, "W2/flowdeck"), get(runs, "W2/dbos")
    return [
        *_w1_rows(runs),
        _latency_row("W2", "run here: ms per execution p50 / p95", f2w, d2w, W2_OF_DBOS),
        _queued_row("W2", "queued (informational): ms per execution p50 / p95", f2w, d2w),
        _w3_row(f1, d1),
        _w4_row(f1, d1, limits),
        _l3_row(f1, limits),
        _w5_row(get(runs, "W5/flowdeck"), get(runs, "W5/dbos")),
        _w6_row(get(runs, "W6/flowdeck")),
        _w7_row(get(runs, "W7/flowdeck")),
        *_w8_rows(runs),
        _w9_row(get(runs, "W9/flowdeck")),
        _w10_row(get(runs, "W10/flowdeck")),
        *_w11_rows(get(runs, "W11/flowdeck")),
        *_w12_rows(get(runs, "W12/flowdeck")),
        *_w15_rows(get(runs, "W15/flowdeck")),
        _w14_row(get(runs, "W14/flowdeck")),
        _w16_row(get(runs, "W16/flowdeck")),
        _w17_row(get(runs, "W17/flowdeck")),
        _w18_row(get(runs, "W18/flowdeck")),
        *_w19_rows(get(runs, "W19/flowdeck")),
    ]


def _w1_rows(runs: Mapping[str, Any]) -> list[Row]:
    out = []
    d1, d2 = get(runs, "W1/dbos/1p"), get(runs, "W1/dbos/2p")
    for run, procs in ((get(runs, "W1/flowdeck/1p"), 1), (get(runs, "W1/flowdeck/2p"), 2)):
        workers = run.get("workers", "?") if run else "?"
        shape = f"{run.get('executions', '?')}×{run.get('steps', '?')}" if run else ""
        label = f"{shape} nodes/s, {workers} workers in {procs} process{'es' if procs > 1 else ''}"
        out.append(_rate_row("W1", label, run, d1 if procs == 1 else d2, W1_TIMES_DBOS))
    out.append(_cpu_row(get(runs, "W1/flowdeck/1p"), d1))
    return out


def _cpu_row(f1: Any, d1: Any) -> Row:
    """W1's CPU per node: the worker processes' user + system seconds over the nodes recorded, and the
    database server's beside it (both on this machine's cores)."""

    def show(run: Any) -> str:
        if failed(run) or run.get("cpu_us_per_node") is None:
            return failed(run) or "not measured"
        return f"{num(run['cpu_us_per_node'])} (database {num(run.get('database_cpu_us_per_node'))})"

    measure = "W1 CPU per node, µs: worker processes (database server)"
    target = f"≤ {CPU_US_PER_NODE} µs"
    if show(f1) == "not measured" or failed(f1):
        return Row("W1", measure, show(f1), show(d1), "", target, None)
    ratio = ""
    if not failed(d1) and d1.get("cpu_us_per_node"):
        ratio = f"{f1['cpu_us_per_node'] / d1['cpu_us_per_node']:.2f}×"
    return Row("W1", measure, show(f1), show(d1), ratio, target, f1["cpu_us_per_node"] <= CPU_US_PER_NODE)


def _w3_row(f1: Any, d1: Any) -> Row:
    """Commits per node recorded, from W1's single-process run."""
    if failed(f1):
        return Row("W3", "commits per node (W1)", failed(f1) or "", target="≤ 1.05")
    per_node = f1.get("commits_per_node")
    dbos = "n/a"
    if d1 and not failed(d1) and d1.get("commits_per_node") is not None:
        dbos = num(d1["commits_per_node"], 2)
    return Row(
        "W3",
        "commits per node (W1, starts excluded; with starts)",
        f"{num(per_node, 2)}; {num(f1.get('commits_per_node_with_starts'), 2)}",
        dbos,
        "",
        "≤ 1.05",
        None if per_node is None else per_node <= 1.05,
    )


def _w4_row(f1: Any, d1: Any, limits: Mapping[str, Any]) -> Row:
    """W1's nodes/s against the database's own limits at the same client count."""
    pgb, loop = limits.get("pgbench"), limits.get("psycopg_loop")
    if failed(f1) or failed(pgb) or failed(loop):
        return Row("W4", "W1 ÷ pgbench; ÷ psycopg loop", failed(f1) or failed(pgb) or failed(loop) or "")
    assert pgb is not None
    assert loop is not None
    of_pgbench = f1["nodes_per_s"] / pgb["per_second"] * 100
    of_loop = f1["nodes_per_s"] / loop["per_second"] * 100
    dbos = "n/a"
    if d1 and not failed(d1):
        rate = d1["nodes_per_s"]
        dbos = f"{rate / pgb['per_second'] * 100:.1f} %; {rate / loop['per_second'] * 100:.1f} %"
    return Row(
        "W4",
        f"W1 ÷ pgbench ({num(pgb['per_second'])}/s); ÷ psycopg loop ({num(loop['per_second'])}/s)",
        f"{of_pgbench:.1f} %; {of_loop:.1f} %",
        dbos,
        "",
        f"≥ {W4_OF_LOOP} % of psycopg loop",
        of_loop >= W4_OF_LOOP,
    )


def _l3_row(f1: Any, limits: Mapping[str, Any]) -> Row:
    """W1 against L3: the same statements for the same executions, sent by a bare loop with no engine."""
    l3 = limits.get("L3")
    measure = "W1 ÷ L3 (the engine's statements, no engine)"
    target = f"≥ {W1_OF_L3} % of L3"
    if failed(f1) or failed(l3):
        return Row("W4", measure, failed(f1) or failed(l3) or "", target=target)
    assert l3 is not None
    of_l3 = f1["nodes_per_s"] / l3["per_second"] * 100
    return Row(
        "W4",
        f"W1 ÷ L3 ({num(l3['per_second'])} nodes/s)",
        f"{of_l3:.1f} %",
        "n/a",
        "",
        target,
        of_l3 >= W1_OF_L3,
    )


def _w5_row(f5: Any, d5: Any) -> Row:
    w5 = _latency_row("W5", "signal → next node started, ms p50 / p95", f5, d5, None)
    p50 = None if failed(f5) else f5["ms"]["p50"]
    return Row(
        w5.workload,
        w5.measure,
        w5.flowdeck,
        w5.dbos,
        w5.ratio,
        "p50 ≤ 10 ms",
        None if p50 is None else p50 <= 10,
    )


def _w6_row(f6: Any) -> Row:
    if failed(f6):
        return Row("W6", "SIGKILL with 50 claims → all resumed, s", failed(f6) or "", target="≤ lease + 1 s")
    limit = f6["lease"] + 1
    return Row(
        "W6",
        f"SIGKILL with {f6['claims']} claims (lease {f6['lease']:g} s) → all resumed, s",
        f"{f6['seconds']:.2f}",
        "n/a",
        "",
        f"≤ {limit:g} s",
        f6["seconds"] <= limit,
    )


def _w7_row(f7: Any) -> Row:
    target = "p95 ≤ 100 ms, exact totals"
    if failed(f7):
        return Row("W7", "search, limit 25: worst arm p95 ms", failed(f7) or "", target=target)
    return Row(
        "W7",
        f"search {num(f7['rows'])} rows, limit 25: worst arm p95 ms; totals exact",
        f"{f7['worst_p95_ms']:.1f}; {'all exact' if f7['all_exact'] else 'NOT exact'}",
        "n/a",
        "",
        target,
        f7["worst_p95_ms"] <= 100 and f7["all_exact"],
    )


def _w8_rows(runs: Mapping[str, Any]) -> list[Row]:
    f8 = get(runs, "W8/w1/flowdeck")
    shape = f"{f8.get('executions', '?')}×{f8.get('steps', '?')} " if f8 else ""
    f8w, d8w = get(runs, "W8/w2/flowdeck"), get(runs, "W8/w2/dbos")
    return [
        _rate_row("W8", f"SQLite: W1 {shape}nodes/s, 1 process", f8, get(runs, "W8/w1/dbos"), None),
        _latency_row("W8", "SQLite: W2 run here ms p50 / p95", f8w, d8w, None),
        _queued_row("W8", "SQLite: W2 queued (informational) ms p50 / p95", f8w, d8w),
    ]


def _w9_row(f9: Any) -> Row:
    if failed(f9):
        return Row("W9", "RSS with sleepers parked", failed(f9) or "", target="growth ≤ 20 MB")
    return Row(
        "W9",
        f"worker RSS, {num(f9['sleepers'])} sleepers: before → after (growth) MB",
        f"{f9['rss_before_mb']:.1f} → {f9['rss_after_mb']:.1f} ({f9['rss_growth_mb']:+.1f})",
        "n/a",
        "",
        "growth ≤ 20 MB",
        f9["rss_growth_mb"] <= 20,
    )


def _w10_row(f10: Any) -> Row:
    target = "p95 ≤ 250 ms"
    if failed(f10):
        return Row("W10", "node committed → DOM shows it, ms p50 / p95", failed(f10) or "", target=target)
    return Row(
        "W10",
        f"node committed → DOM shows it ({f10['updates']} updates, {f10['gap_s']:g} s apart), ms p50 / p95",
        f"{f10['ms']['p50']:.1f} / {f10['ms']['p95']:.1f}",
        "n/a",
        "",
        target,
        f10["ms"]["p95"] <= 250,
    )


# W11's pages (bench.console_load.PAGES) and each one's p95 target, ms
W11_PAGES = {"list": 150, "list failed, orders": 150, "overview": 300, "execution": 150}


def _w11_rows(f11: Any) -> list[Row]:
    """One row per page: its server time p50 / p95 against its target."""
    if failed(f11):
        return [Row("W11", "console server time, ms p50 / p95", failed(f11) or "", target="see W11 pages")]
    out = []
    for label, default_target in W11_PAGES.items():
        page = f11["pages"].get(label)
        if page is None:
            out.append(Row("W11", f"{label}: not measured", "n/a"))
            continue
        target = page.get("target_ms", default_target)
        out.append(
            Row(
                "W11",
                f"{label} at {num(f11['rows'])} rows: server ms p50 / p95 ({page['ms']['n']} requests)",
                f"{page['ms']['p50']:.1f} / {page['ms']['p95']:.1f}",
                "n/a",
                "",
                f"p95 ≤ {target} ms",
                page["ms"]["p95"] <= target,
            )
        )
    return out


W12_P95_MS = 250  # commit → client, every client's every event
W12_MIN_RATIO = 0.9  # W1's nodes/s with the clients attached ÷ without
W12_PARTIES = ("workers", "web", "clients", "database")  # the rounds table's `cores`, in its order


def _w12_rows(f12: Any) -> list[Row]:
    """The clients' delivery (latency, and that none missed an event) and W1's throughput with them."""
    latency_target = f"p95 ≤ {W12_P95_MS} ms, none missed"
    ratio_target = f"with ≥ {W12_MIN_RATIO:g}× without"
    if failed(f12):
        problem = failed(f12) or ""
        return [
            Row("W12", "ws clients on the list during W1: commit → client", problem, target=latency_target),
            Row("W12", "W1 nodes/s without → with the clients", problem, target=ratio_target),
        ]
    shape = f"{f12['executions']}×{f12['steps']}"
    pairs = len(f12["rounds"]) // 2
    ms, received = f12["ms"], f12["committed"] * f12["clients"] - f12["missed"]
    delivery = (
        f"{ms['p50']:.0f} / {ms['p95']:.0f} (max {num(f12['max_ms'])}); "
        f"{num(received)} of {num(f12['committed'] * f12['clients'])} heard"
    )
    return [
        Row(
            "W12",
            f"{f12['clients']} ws clients on the list during W1 {shape}: commit → client ms p50 / p95"
            " (max); events heard",
            delivery,
            "n/a",
            "",
            latency_target,
            ms["p95"] <= W12_P95_MS and f12["all_received"],
        ),
        Row(
            "W12",
            f"W1 {shape} nodes/s, {f12['workers']} workers in 1 process: without → with"
            f" {f12['clients']} clients ({pairs} rounds each, alternated)",
            f"{num(f12['nodes_per_s_without'])} → {num(f12['nodes_per_s_with'])}",
            "n/a",
            f"{f12['ratio']:.2f}×",
            ratio_target,
            f12["ratio"] >= W12_MIN_RATIO,
        ),
    ]


W15_TOLERANCE = 0.05  # issue 31: the observed rate within 5 % of the configured one


def _w15_rows(f15: Any) -> list[Row]:
    """The rate observed against the configured one, and what the waiting executions cost in CPU."""
    measure = "rate limit shared by worker processes: calls/s observed (asked)"
    target = f"within {W15_TOLERANCE:.0%} of the limit"
    problem = failed(f15)
    if problem or f15 is None:
        return [Row("W15", measure, problem or "not run", "n/a", "", target, None)]
    shape = f"{f15['rate']}/s over {f15['processes']} processes, {f15['executions']:,} executions"
    return [
        Row(
            "W15",
            f"{shape}: calls/s observed (asked)",
            f"{f15['observed_per_s']:.1f} ({f15['asked_per_s']:.1f})",
            "n/a",
            f"{f15['ratio']:.3f}",
            target,
            abs(f15["ratio"] - 1) <= W15_TOLERANCE,
        ),
        Row(
            "W15",
            "W15 CPU: worker ms per execution; share of a core",
            f"{f15['cpu_ms_per_execution']:.2f}; {f15['cpu_share_of_a_core']:.2f}",
        ),
    ]


def _w16_row(f16: Any) -> Row:
    """Schedule ticks decided per second by schedulers racing over schedules all due at once (issue 31, 6):
    the target is exactness, one execution and one tick record per schedule, none twice."""
    target = "one execution per tick, 0 duplicates"
    if failed(f16):
        return Row("W16", "schedule ticks/s, all due at once", failed(f16) or "", target=target)
    return Row(
        "W16",
        f"schedule ticks/s: {f16['schedules']:,} schedules due at once, {f16['tickers']} schedulers racing"
        f" ({f16['executions']:,} executions, {f16['duplicates']} duplicates)",
        num(f16["ticks_per_second"]),
        "n/a",
        "",
        target,
        bool(f16["exact"]) and f16["duplicates"] == 0,
    )


W17_MIN_RATIO = 3.0  # issue 30: tasks/s through Flowdeck's backend ÷ django-tasks-db's


def _w17_row(f17: Any) -> Row:
    """Tasks/s through the `django.tasks` backends; the peer (the DBOS column) is django-tasks-db."""
    measure = "django.tasks tasks/s (peer: django-tasks-db + db_worker)"
    target = f"≥ {W17_MIN_RATIO:g}× django-tasks-db"
    problem = failed(f17)
    if problem or f17 is None:
        return Row("W17", measure, problem or "", "", "", target, None)
    flowdeck, peer = f17["flowdeck"], f17["db"]
    return Row(
        "W17",
        f"{measure}, {flowdeck['tasks']:,} tasks on {flowdeck['procs']} worker processes",
        num(flowdeck["tasks_per_s"]),
        num(peer["tasks_per_s"]),
        f"{f17['ratio']:.2f}×",
        target,
        f17["ratio"] >= W17_MIN_RATIO,
    )


W18_MIN_RATIO = 0.9  # W1's nodes/s with tracing on (SDK, batch processor, in-memory exporter) ÷ off


def _w18_row(f18: Any) -> Row:
    """W1 with OpenTelemetry tracing on against off (issue 30, 3(b)): the mean ratio and its pairs' spread."""
    target = f"on ≥ {W18_MIN_RATIO:g}× off"
    if failed(f18):
        return Row("W18", "W1 nodes/s, tracing off → on", failed(f18) or "", target=target)
    shape, pairs = f"{f18['executions']}×{f18['steps']}", len(f18["rounds"]) // 2
    return Row(
        "W18",
        f"W1 {shape} nodes/s, {f18['workers']} workers in 1 process: tracing off → on ({pairs} pairs,"
        f" alternated; pairs {f18['pair_ratio_min']:.2f}–{f18['pair_ratio_max']:.2f}×)",
        f"{num(f18['nodes_per_s_off'])} → {num(f18['nodes_per_s_on'])}",
        "n/a",
        f"{f18['ratio']:.2f}×",
        target,
        f18["ratio"] >= W18_MIN_RATIO,
    )


W14_MIN_RATIO = 0.8  # W1's nodes/s at one running per key (1,000 keys) ÷ unlimited, in the same run


def _w14_row(f14: Any) -> Row:
    """One running per key against unlimited W1 (issue 31, 6): the ratio, and the most of one key running
    at once as the history shows it (must be 1)."""
    target = f"≥ {W14_MIN_RATIO:g}× unlimited, 1 per key"
    if failed(f14):
        return Row("W14", "W1 nodes/s, unlimited → 1 running per key", failed(f14) or "", target=target)
    most = f14["most_running_per_key"]
    return Row(
        "W14",
        f"{f14['executions']}×{f14['steps']} over {f14['keys']} keys, {f14['workers']} workers: unlimited →"
        f" 1 running per key (most of a key at once: {most})",
        f"{num(f14['nodes_per_s_unlimited'])} → {num(f14['nodes_per_s_limited'])}",
        "n/a",
        f"{f14['ratio']:.2f}×",
        target,
        f14["ratio"] >= W14_MIN_RATIO and most == 1,
    )


W19_MIN_RATIO = 0.9  # W1's nodes/s through PgBouncer ÷ straight to PostgreSQL
# W19's pooled arms (bench/pooled_w1.py): what goes through the transaction pool, and what keeps a session
W19_ARMS = {
    "pooled": "every connection in transaction mode but LISTEN (no prepared statements)",
    "session_writes": "transaction mode but LISTEN and the 2 group-commit writers (session mode, prepared)",
    "direct_writes": "transaction mode but LISTEN and the 2 writers, which go straight to PostgreSQL",
}


def _w19_rows(f19: Any) -> list[Row]:
    """W1 through PgBouncer against W1 direct (issue 32, point 1), one row per pooled arm: the mean ratio
    and its turns' spread."""
    target = f"pooled ≥ {W19_MIN_RATIO:g}× direct"
    if failed(f19):
        return [Row("W19", "W1 nodes/s, direct → via PgBouncer", failed(f19) or "", target=target)]
    shape, turns = f"{f19['executions']}×{f19['steps']}", len(f19["rounds"]) // (len(W19_ARMS) + 1)
    rows = []
    for arm, what in W19_ARMS.items():
        low, high = f19[f"turn_ratio_min_{arm}"], f19[f"turn_ratio_max_{arm}"]
        rows.append(
            Row(
                "W19",
                f"W1 {shape} nodes/s, {f19['workers']} workers in 1 process: direct → via PgBouncer, {what}"
                f" ({turns} turns, alternated; turns {low:.2f}–{high:.2f}×)",
                f"{num(f19['nodes_per_s_direct'])} → {num(f19[f'nodes_per_s_{arm}'])}",
                "n/a",
                f"{f19[f'ratio_{arm}']:.2f}×",
                target,
                f19[f"ratio_{arm}"] >= W19_MIN_RATIO,
            )
        )
    return rows
