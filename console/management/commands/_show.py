"""`flowdeck show EID` as text: the execution's fields, its stop in two lines (the traceback behind
`--traceback`), its nodes with the branch that tells same-named ones apart, its values and its history.

Not a command (Django skips modules whose name starts with an underscore).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from flowdeck.console import limits, states, waits
from flowdeck.console.management.commands import _output
from flowdeck.console.management.commands._output import table
from flowdeck.engine import errors
from flowdeck.engine.engine import ExecutionDetail
from flowdeck.store import concurrency, spi

__all__ = ["status_lines", "text"]


def text(
    detail: ExecutionDetail,
    values: Mapping[str, Any],
    events: Sequence[Any],
    served: frozenset[str],
    branches: Mapping[str, str],
    traced: bool,
    queued: concurrency.Queued | None = None,
) -> str:
    s = detail.state
    lines = [
        f"execution  {s.execution_id}",
        f"workflow   {s.flow_id}@{s.hash}",
        f"status     {states.standing_of(s, served).line}",
        f"created    {s.created:%Y-%m-%d %H:%M:%S}   updated {s.updated:%Y-%m-%d %H:%M:%S}",
    ]
    if s.priority:
        lines.append(f"priority   {s.priority} (higher claimed first)")
    if s.concurrency is not None:
        lines.append(f"limits     {limits.limits_text(s.concurrency)}")
    if queued is not None:
        lines.append(f"queued     {limits.queue_line(queued)}")
    if s.executor:
        lines.append(f"claimed by {s.executor} until {s.claim_expiry:%H:%M:%S}")
    if s.cancel_requested and not s.status.terminal:  # an ended execution has no cancel pending
        lines.append(f"cancel requested: {s.cancel_reason or '(no reason)'}")
    lines += status_lines(s.status, traced)
    if s.waits:
        lines.append(f"waiting on {waits.line(s)}")
    if detail.inputs:
        lines.append(
            "inputs     "
            + ", ".join(f"{i.name}:{i.tag}{'' if i.delivered else ' (awaited)'}" for i in detail.inputs)
        )
    if detail.progress is None:
        lines.append("(this version of the workflow is not served here: the execution is parked)")
    blocks = ["\n".join(map(_output.escape, lines))]
    if isinstance(s.status, spi.Stopped) and s.status.detail and traced:  # as Python printed it
        blocks.append("\n".join(map(_output.escape, s.status.detail.rstrip("\n").split("\n"))))
    if detail.progress is not None:
        blocks.append(
            table(
                ("node", "branch", "type", "status", "detail"),
                [
                    (n.name, branches.get(n.place, ""), n.node_type, str(n.status), n.detail)
                    for n in detail.progress.nodes
                ],
            )
        )
    if values:
        rows = [(k, _output.short(json.dumps(v, default=str))) for k, v in values.items()]
        blocks.append(table(("value", "recorded"), rows))
    if events:
        rows = [(e.seq, f"{e.timestamp:%H:%M:%S}", e.kind.value, _output.short(e.detail)) for e in events]
        blocks.append(table(("seq", "time", "event", "detail"), rows))
    # each field stays on its line whatever its value holds; a table's cells are escaped already
    return "\n\n".join(blocks)


def status_lines(status: spi.Status, traced: bool) -> list[str]:
    """How an execution ended or stopped (a stop with its code's advice, and where its traceback is)."""
    match status:
        case spi.Failed(error, kind):
            return [f"failed     {kind or 'error'}: {error}"]
        case spi.Cancelled(reason):
            return [f"cancelled  {reason or '(no reason)'}"]
        case spi.Stopped(code, node, reason, answered=True):
            return [
                f"stopped    {code} at {node or '(flow)'}: {reason}",
                f"           answered, awaiting resume: `flowdeck resume EID --go` goes on past {node}",
            ]
        case spi.Stopped(code, node, reason, detail):
            advice = errors.STOP_CODES.get(code, "")
            more = " (its traceback: --traceback)" if detail and not traced else ""
            return [f"stopped    {code} at {node or '(flow)'}: {reason}{more}", f"           {advice}"]
    return []
