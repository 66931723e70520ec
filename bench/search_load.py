"""W7: a store holding `rows` executions in a realistic mix; `list_executions` per filter arm, limit 25.

The rows go straight into the store's tables with one `INSERT … SELECT generate_series` per table
(PostgreSQL), in its own database. Every row's shape follows from its number `i` alone: its bucket
`(i * 7919) % 100` picks the status (and the wait row), and `i // 100` picks the secondary traits (cancel
requested, an unserved hash), so Python can count each arm's exact total without asking the store, and the
bench checks the store's `total` against it.

The mix: 60 % completed, 10 % failed (three kinds), 5 % cancelled, 2 % compensating, 2 % stopped (two
codes), 21 % running, of which 10 points sleep, 8 wait for an input (two names) and 3 wait for nothing;
a tenth of the unended rows have a cancel request; a twentieth of all rows sit on a version no engine serves.
Every row holds an `order` input (`{"customer": "c<i % 5000>", "total": <i % 997>, "items": [{"sku":
"s<i % 1009>"}]}`) and a `charge` step output, which the `field:` arms search (issue 14: exact values at a
JSON path, from the GIN index; issue 29: text ignoring case, by prefix and by part, from the trigram index,
and numbers by range). A failure's error and a stop's reason carry `r<i % 997>`, which the `text:` arms
search (the trigram index on messages).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from bench import flowdeck_env, pg, stats

FLOWS = ("orders", "payments", "shipping")
SERVED_HASH = "h1"


def bucket(i: int) -> int:
    return (i * 7919) % 100


def traits(i: int) -> dict[str, Any]:
    """What row `i` is, in the words of the filter arms (the reference the store's totals are checked by)."""
    b = bucket(i)
    if b < 60:
        kind = "completed"
    elif b < 70:
        kind = "failed"
    elif b < 75:
        kind = "cancelled"
    elif b < 77:
        kind = "compensating"
    elif b < 79:
        kind = "stopped"
    else:
        kind = "running"
    terminal = kind in ("completed", "failed", "cancelled")
    return {
        "flow": FLOWS[i % 3],
        "kind": kind,
        "failure_kind": "PaymentDeclined" if 60 <= b < 64 else "OutOfStock" if 64 <= b < 68 else None,
        "stop_code": "F0001" if b == 77 else "F0003" if b == 78 else None,
        "sleeping": 79 <= b < 89,
        "waiting": "approval" if 89 <= b < 93 else "payment" if 93 <= b < 97 else None,
        "cancelling": not terminal and (i // 100) % 10 == 0,
        "orphaned": not terminal and (i // 100) % 20 == 1,
        "id": f"ex{i:08d}",
        "customer": f"c{i % 5000}",
        "total": i % 997,
        "sku": f"s{i % 1009}",
        "message": (
            f"bench failure r{i % 997}"
            if kind == "failed"
            else f"bench stop r{i % 997}"
            if kind == "stopped"
            else None
        ),
    }


_ROWS = """
    from (
        select i, (i::bigint * 7919) %% 100 as b,
               %(base)s::timestamptz + make_interval(secs => i) as ts
        from generate_series(1, %(rows)s) as i
    ) s
"""

LOAD_EXECUTIONS = f"""
insert into flowstore_execution (
    id, flow_id, hash, status, status_kind, failure_kind, stop_code, cancel_requested, cancel_reason,
    executor, claim_expiry, claim_token, last_seq, serial, created, updated
)
select
    'ex' || lpad(i::text, 8, '0'),
    (array['orders', 'payments', 'shipping'])[1 + i %% 3],
    case when (i / 100) %% 20 = 1 then 'h0' else 'h1' end,
    case
        when b < 60 then '{{"type": "completed"}}'
        when b < 70 then json_build_object(
            'type', 'failed', 'error', 'bench failure r' || (i %% 997),
            'kind', case when b < 64 then 'PaymentDeclined' when b < 68 then 'OutOfStock' end)::text
        when b < 75 then '{{"type": "cancelled", "reason": "bench"}}'
        when b < 77 then
            '{{"type": "compensating", "cause": {{"type": "failure", "error": "bench", "kind": null}}}}'
        when b < 79 then json_build_object(
            'type', 'stopped', 'code', case when b = 77 then 'F0001' else 'F0003' end, 'node', 's1',
            'reason', 'bench stop r' || (i %% 997), 'detail', '', 'cause', null)::text
        else '{{"type": "running"}}'
    end,
    case
        when b < 60 then 'completed' when b < 70 then 'failed' when b < 75 then 'cancelled'
        when b < 77 then 'compensating' when b < 79 then 'stopped' else 'running'
    end,
    case when b between 60 and 63 then 'PaymentDeclined' when b between 64 and 67 then 'OutOfStock' end,
    case when b = 77 then 'F0001' when b = 78 then 'F0003' end,
    b >= 75 and (i / 100) %% 10 = 0,
    case when b >= 75 and (i / 100) %% 10 = 0 then 'bench' else '' end,
    null, null, null, 0, i, ts, ts
{_ROWS}
"""

LOAD_WAITS = f"""
insert into flowstore_wait (execution_id, path, kind, at, field_name)
select
    'ex' || lpad(i::text, 8, '0'),
    case when b < 89 then 'nap' when b < 93 then 'approval' else 'payment' end,
    case when b < 89 then 'at' else 'on_field' end,
    case when b < 89 then timestamptz '2030-01-01 00:00:00+00' end,
    case when b < 89 then null when b < 93 then 'approval' else 'payment' end
{_ROWS}
where b between 79 and 96
"""


LOAD_FIELDS = f"""
insert into flowstore_field (execution_id, name, value, tag)
select 'ex' || lpad(i::text, 8, '0'), f.name, f.value, f.tag
{_ROWS}
cross join lateral (values
    ('order', json_build_object('customer', 'c' || i %% 5000, 'total', i %% 997,
        'items', json_build_array(json_build_object('sku', 's' || i %% 1009, 'qty', 1)))::text, 'Order'),
    ('charge', json_build_object('id', 'ch' || i, 'amount', i %% 997)::text, 'Charge')
) as f(name, value, tag)
"""


# Row i was created (and last updated) `i` seconds after the base.
W7_BASE = "2026-01-01 00:00:00+00"


def load(rows: int, database: str = pg.SEARCH_DB, base: str = W7_BASE) -> float:
    """The mix into `database` (migrated, empty). W11 passes a base `rows` seconds ago, so the newest rows
    fall in the overview's hour and day as a busy engine's would."""
    began = time.perf_counter()
    params = {"rows": rows, "base": base}
    with pg.connect(database) as conn:
        conn.execute(LOAD_EXECUTIONS, params)
        conn.execute(LOAD_WAITS, params)
        conn.execute(LOAD_FIELDS, params)
        for table in ("flowstore_execution", "flowstore_wait", "flowstore_field"):
            conn.execute(f"vacuum analyze {table}")
    return time.perf_counter() - began


FIELD_ARMS: dict[str, tuple[str, ...]] = {
    "field:order.customer=c42": ("field:order.customer=c42",),
    "field:order.total=7": ("field:order.total=7",),
    "field:order.items.0.sku=s13": ("field:order.items.0.sku=s13",),
    "field:charge.id=ch77": ("field:charge.id=ch77",),
    "field customer + total": ("field:order.customer=c42", "field:order.total=42"),
    "field:order.customer=C42 (any case)": ("field:order.customer=C42",),
    "field:order.customer^=c424": ("field:order.customer^=c424",),
    "field:order.customer~=424": ("field:order.customer~=424",),
    "field:order.total>=990": ("field:order.total>=990",),
    "field:order.total>=990 + <992": ("field:order.total>=990", "field:order.total<992"),
    'text:"failure r42"': ('text:"failure r42"',),
    'text:"stop r42"': ('text:"stop r42"',),
}


def arms() -> list[tuple[str, str | None, Any, str | None, tuple[Any, ...]]]:
    """(label, flow_id, filter, id_prefix, field terms) for every filter arm, plus no filter, a flow, an
    id prefix, and the `field:` terms alone and with a filter."""
    from flowdeck.store.field_terms import parse_field_term
    from flowdeck.store.spi import ExecutionFilter as F

    plain = [
        ("all", None, None, None),
        ("running", None, F.Running(), None),
        ("completed", None, F.Completed(), None),
        ("cancelled", None, F.Cancelled(), None),
        ("compensating", None, F.Compensating(), None),
        ("failed", None, F.Failed(), None),
        ("failed:PaymentDeclined", None, F.Failed("PaymentDeclined"), None),
        ("sleeping", None, F.Sleeping(), None),
        ("waiting", None, F.WaitingForInput(), None),
        ("waiting:approval", None, F.WaitingForInput("approval"), None),
        ("cancelling", None, F.Cancelling(), None),
        ("orphaned", None, F.Orphaned(frozenset({SERVED_HASH})), None),
        ("stopped", None, F.Stopped(), None),
        ("stopped:F0003", None, F.Stopped("F0003"), None),
        ("flow=orders running", "orders", F.Running(), None),
        ("id prefix ex0000", None, None, "ex0000"),
    ]
    fields = [
        (label, None, None, None, tuple(parse_field_term(t) for t in terms))
        for label, terms in FIELD_ARMS.items()
    ]
    # a total is spread over every status (a customer is not: i % 5000 fixes the bucket)
    total = (parse_field_term("field:order.total=7"),)
    return [
        *((label, flow, filt, prefix, ()) for label, flow, filt, prefix in plain),
        *fields,
        ("field:order.total=7 running", None, F.Running(), None, total),
    ]


def expected_totals(rows: int) -> Counter[str]:
    """Each arm's exact total, counted in Python from the rows' recipe."""
    totals: Counter[str] = Counter()
    for i in range(1, rows + 1):
        t = traits(i)
        kind = t["kind"]
        totals["all"] += 1
        totals[kind] += 1
        if kind == "failed" and t["failure_kind"] == "PaymentDeclined":
            totals["failed:PaymentDeclined"] += 1
        if t["sleeping"]:
            totals["sleeping"] += 1
        if t["waiting"]:
            totals["waiting"] += 1
            if t["waiting"] == "approval":
                totals["waiting:approval"] += 1
        if t["cancelling"]:
            totals["cancelling"] += 1
        if t["orphaned"]:
            totals["orphaned"] += 1
        if t["stop_code"] == "F0003":
            totals["stopped:F0003"] += 1
        if t["flow"] == "orders" and kind == "running":
            totals["flow=orders running"] += 1
        if t["id"].startswith("ex0000"):
            totals["id prefix ex0000"] += 1
        totals.update(_field_arms_of(i, t))
    return totals


def _field_arms_of(i: int, t: dict[str, Any]) -> list[str]:
    """The `field:` arms row `i` matches."""
    c42 = t["customer"] == "c42"
    matched = {
        "field:order.customer=c42": c42,
        "field:order.total=7": t["total"] == 7,
        "field:order.items.0.sku=s13": t["sku"] == "s13",
        "field:charge.id=ch77": i == 77,
        "field customer + total": c42 and t["total"] == 42,
        "field:order.total=7 running": t["total"] == 7 and t["kind"] == "running",
        "field:order.customer=C42 (any case)": c42,
        "field:order.customer^=c424": t["customer"].startswith("c424"),
        "field:order.customer~=424": "424" in t["customer"],
        "field:order.total>=990": t["total"] >= 990,
        "field:order.total>=990 + <992": 990 <= t["total"] < 992,
        'text:"failure r42"': "failure r42" in (t["message"] or ""),
        'text:"stop r42"': "stop r42" in (t["message"] or ""),
    }
    return [label for label, hit in matched.items() if hit]


def run(rows: int, reps: int) -> dict[str, Any]:
    flowdeck_env.fresh_database("postgres", pg.SEARCH_DB)
    load_seconds = load(rows)
    truth = expected_totals(rows)

    async def measure() -> dict[str, Any]:
        store = flowdeck_env.make_store()
        found: dict[str, Any] = {}
        for label, flow_id, filt, prefix, fields in arms():
            await store.list_executions(flow_id, filt, 25, 0, prefix, fields)  # warm the plan and the cache
            samples = []
            for _ in range(reps):
                began = time.perf_counter()
                page = await store.list_executions(flow_id, filt, 25, 0, prefix, fields)
                samples.append((time.perf_counter() - began) * 1000)
            found[label] = {
                "ms": stats.p50_p95(samples),
                "total": page.total,
                "expected": truth[label],
                "exact": page.total == truth[label],
                "items": len(page.items),
            }
        return found

    per_arm = asyncio.run(measure())
    worst = max(arm["ms"]["p95"] for arm in per_arm.values())
    return {
        "system": "flowdeck",
        "backend": "postgres",
        "rows": rows,
        "reps": reps,
        "load_seconds": load_seconds,
        "arms": per_arm,
        "worst_p95_ms": worst,
        "all_exact": all(arm["exact"] for arm in per_arm.values()),
    }
