"""`manage.py flowdeck …`: every verb once on a demo-seeded SQLite database, and each verb's error path.

The world is `manage.py demo --no-serve` on a temporary file: executions completed, waiting for approval,
sleeping, failed, stopped (F0001), cancelled and parked under the previous version of `fulfilment`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from flowdeck.console import cli
from tests.acceptance.support import (
    PYTHON,
    ROOT,
    Result,
    environment,
    manage,
    manage_many,
    ok,
    refused,
    sqlite_url,
)

pytestmark = pytest.mark.slow

DEFAULTS = {"card": "visa", "country": "NL"}  # what the Order type fills in
ORDER = {"id": "o-cli", "customer": "ada", "items": [{"sku": "widget", "qty": 2, "price": 400}]}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("cli") / "cli.sqlite3"
    url = sqlite_url(path)
    seeded = ok(manage(url, "demo", "--no-serve", "--database", str(path)))
    assert "demo-stopped            stopped:F0001" in seeded.stdout, seeded.explain()
    assert "demo-parked             parked (previous version)" in seeded.stdout, seeded.explain()
    return url


def flow(db: str, *args: str) -> str:
    return ok(manage(db, "flowdeck", *args)).stdout


def test_ls_lists_filters_and_pages(db: str) -> None:
    table = flow(db, "ls")
    assert table.splitlines()[0].split() == ["EXECUTION", "WORKFLOW", "STATUS", "UPDATED", "WAITING", "ON"]
    for eid in ("demo-completed", "demo-stopped", "demo-cancelled", "demo-parked", "demo-sleeping"):
        assert eid in table
    stopped = json.loads(flow(db, "ls", "--status", "stopped", "--json"))
    assert [(i["execution_id"], i["status"]["code"], i["status"]["node"]) for i in stopped["items"]] == [
        ("demo-stopped", "F0001", "ship")
    ]
    assert stopped["total"] == 1
    failed = json.loads(flow(db, "ls", "--workflow", "fulfilment", "--status", "failed", "--json"))
    assert sorted((i["execution_id"], i["status"]["kind"]) for i in failed["items"]) == [
        ("demo-declined", "CardDeclined"),
        ("demo-refunded", "ShipmentRefused"),
    ]
    page = json.loads(flow(db, "ls", "--limit", "2", "--json"))
    assert (len(page["items"]), page["total"] >= 8) == (2, True)


def test_ls_searches_by_a_recorded_value(db: str) -> None:
    grace = json.loads(flow(db, "ls", "--where", "field:order.customer=grace", "--json"))
    assert ([i["execution_id"] for i in grace["items"]], grace["total"]) == (["demo-awaiting-approval"], 1)
    o1001 = json.loads(flow(db, "ls", "--where", "field:order.id=o-1001", "--json"))
    assert sorted(i["execution_id"] for i in o1001["items"]) == ["demo-completed", "demo-sleeping"]
    both = ["--where", "field:order.id=o-1001", "--workflow", "fulfilment", "--status", "completed"]
    assert [i["execution_id"] for i in json.loads(flow(db, "ls", *both, "--json"))["items"]] == [
        "demo-completed"
    ]
    narrowed = ["--where", "field:order.customer=ada", "--where", "field:order.id=o-1003"]
    assert [i["execution_id"] for i in json.loads(flow(db, "ls", *narrowed, "--json"))["items"]] == [
        "demo-declined"
    ]
    table = flow(db, "ls", "--where", "field:order.customer=nobody")
    assert table.splitlines()[-1] == "0 of 0"


def test_show_explains_a_stopped_execution(db: str) -> None:
    text = flow(db, "show", "demo-stopped")
    assert "status     stopped:F0001" in text
    assert "stopped    F0001 at ship: KeyError: 'Atlantis'" in text
    assert "Fix the code, deploy it" in text  # the stop code's advice
    detail = json.loads(flow(db, "show", "demo-completed", "--json"))
    assert detail["status"] == {"type": "completed"}
    assert detail["values"]["total"] == 1450
    assert [i["name"] for i in detail["inputs"]] == ["order", "approval"]
    assert "Completed" in [e["kind"] for e in detail["history"]]


def test_show_puts_a_stop_in_two_lines_and_its_traceback_behind_a_flag(db: str) -> None:
    blocks = flow(db, "show", "demo-stopped").split("\n\n")
    head = blocks[0].splitlines()
    stop = head.index("stopped    F0001 at ship: KeyError: 'Atlantis' (its traceback: --traceback)")
    assert head[stop + 1].lstrip().startswith("A mistake in the program")  # the code's advice, then no more
    assert "Traceback" not in "\n".join(blocks)
    assert blocks[1].split()[:5] == ["NODE", "BRANCH", "TYPE", "STATUS", "DETAIL"]  # straight after
    for asked in (["show", "demo-stopped", "--traceback"], ["-v", "2", "show", "demo-stopped"]):
        traced = flow(db, *asked).split("\n\n")
        assert "stopped    F0001 at ship: KeyError: 'Atlantis'" in traced[0].splitlines()
        traceback = traced[1].splitlines()  # the second block, between the status and the node table
        assert traceback[0] == "Traceback (most recent call last):"
        assert traceback[-1] == "KeyError: 'Atlantis'"
        assert any('examples/fulfilment/services.py", line' in line for line in traceback)
        assert traced[2].split()[:5] == ["NODE", "BRANCH", "TYPE", "STATUS", "DETAIL"]


def test_show_tells_same_named_nodes_apart_by_their_branch(db: str) -> None:
    rows = flow(db, "show", "demo-stopped").split("\n\n")[1].splitlines()
    width = rows[0].index("TYPE")
    branch = {
        r[: rows[0].index("BRANCH")].strip() + " @ " + r[rows[0].index("BRANCH") : width].strip()
        for r in rows[1:]
    }
    assert {b for b in branch if b.startswith("decision")} == {
        "decision @ race 1 branch 1",
        "decision @ race 1 branch 2 › race 2 branch 1",
        "decision @ race 1 branch 2 › race 2 branch 2",
    }
    assert "grace @ race 1 branch 2 › race 2 branch 2" in branch
    assert "ship @ " in branch  # the main line has no branch
    nodes = json.loads(flow(db, "show", "demo-stopped", "--json"))["nodes"]
    decisions = [(n["branch"], n["place"]) for n in nodes if n["name"] == "decision"]
    assert [b for b, _ in decisions] == [
        "race 1 branch 1",
        "race 1 branch 2 › race 2 branch 1",
        "race 1 branch 2 › race 2 branch 2",
    ]
    assert len({p for _, p in decisions}) == 3  # each its own drawn node


def test_start_signal_and_cancel(db: str) -> None:
    eid = flow(db, "start", "fulfilment", "--id", "cli-start", "--input", "order=" + json.dumps(ORDER))
    assert eid.strip() == "cli-start"
    shown = json.loads(flow(db, "show", "cli-start", "--json"))
    assert (shown["workflow_id"], shown["values"]["order"]) == ("fulfilment", ORDER | DEFAULTS)

    delivered = json.loads(
        flow(db, "signal", "demo-awaiting-approval", "approval", '{"approved": true, "by": "ops"}', "--json")
    )
    assert delivered == {"execution_id": "demo-awaiting-approval", "input": "approval", "delivered": True}

    assert json.loads(flow(db, "cancel", "cli-start", "changed my mind", "--json")) == {
        "execution_id": "cli-start",
        "outcome": "accepted",
    }
    again = flow(db, "cancel", "cli-start")
    assert "already requested" in again


def test_cancel_all(db: str) -> None:
    answer = json.loads(flow(db, "cancel-all", "follow_up", "--reason", "season over", "--json"))
    assert answer == {"workflow_id": "follow_up", "accepted": 1}
    shown = json.loads(flow(db, "show", "demo-sleeping", "--json"))
    assert (shown["cancel_requested"], shown["cancel_reason"]) == (True, "season over")


def test_parked_then_resume(db: str) -> None:
    parked = json.loads(flow(db, "parked", "fulfilment", "--json"))
    assert [i["execution_id"] for i in parked["items"]] == ["demo-parked"]
    dry = json.loads(flow(db, "resume", "demo-parked", "--json"))
    assert dry == {
        "kept": ["order"],
        "next_node": "total",
        "conflicts": [],
        "execution_id": "demo-parked",
        "resumed": False,
        "warning": "",  # a parked execution resumes on another version: nothing says it stops again
    }
    assert json.loads(flow(db, "parked", "fulfilment", "--json"))["total"] == 1  # a dry run changes nothing
    assert "resumed demo-parked" in flow(db, "resume", "demo-parked", "--go")
    assert json.loads(flow(db, "parked", "fulfilment", "--json"))["total"] == 0


def test_answer_then_end_a_stopped_execution(db: str) -> None:
    refused_text = refused(manage(db, "flowdeck", "answer", "demo-stopped", "total", "PostNL"))
    assert refused_text.stderr.startswith("CommandError: the value for total: not JSON")  # an int takes JSON
    answered = flow(db, "answer", "demo-stopped", "ship", "PostNL, by hand")  # a text node: as typed
    assert "recorded ship for demo-stopped" in answered
    values = json.loads(flow(db, "show", "demo-stopped", "--json"))["values"]
    assert values["ship"] == "PostNL, by hand"
    assert "ended demo-stopped" in flow(db, "end", "demo-stopped", "shipped by hand")
    status = json.loads(flow(db, "show", "demo-stopped", "--json"))["status"]
    assert status == {"type": "failed", "error": "shipped by hand", "kind": "Ended"}


def test_diagram(db: str) -> None:
    mermaid = flow(db, "diagram", "fulfilment")
    assert mermaid.lstrip().startswith(("flowchart", "graph"))
    assert "reservations" in mermaid
    dot = flow(db, "diagram", "fulfilment", "--format", "dot")
    assert dot.startswith("digraph")
    painted = flow(db, "diagram", "--execution", "demo-completed", "--format", "json")
    assert json.loads(painted)


def test_token_create(db: str) -> None:
    made = json.loads(flow(db, "token", "create", "admin", "--name", "ci", "--json"))
    assert (made["user"], made["name"], made["token"].startswith("fd_")) == ("admin", "ci", True)
    assert made["expires"] is None


def tokens_of(db: str) -> list[dict[str, object]]:
    return [
        {k: row[k] for k in ("user", "name", "state")}
        for row in json.loads(flow(db, "token", "list", "--user", "admin", "--json"))["items"]
    ]


def test_token_list_expiry_and_revoke(db: str) -> None:
    made = json.loads(flow(db, "token", "create", "admin", "--name", "nightly", "--expires", "2w", "--json"))
    lasting = json.loads(flow(db, "token", "create", "admin", "--name", "nightly", "--json"))
    dated = json.loads(
        flow(db, "token", "create", "admin", "--name", "dated", "--expires", "2999-01-31", "--json")
    )
    assert dated["expires"] == "2999-01-31T00:00:00+00:00"  # a date is its midnight, in TIME_ZONE (UTC)
    listed = {
        (r["name"], r["expires"] is None) for r in json.loads(flow(db, "token", "list", "--json"))["items"]
    }
    assert {("nightly", False), ("nightly", True), ("dated", False)} <= listed
    table = flow(db, "token", "list")
    for secret in (made["token"], lasting["token"], dated["token"]):
        assert secret not in table
    assert "2999-01-31 00:00" in table

    refused(manage(db, "flowdeck", "token", "revoke", "nightly"), "2 unrevoked tokens are named 'nightly'")
    ids = [
        r["id"] for r in json.loads(flow(db, "token", "list", "--json"))["items"] if r["name"] == "nightly"
    ]
    first = json.loads(flow(db, "token", "revoke", str(ids[0]), "--json"))
    assert (first["id"], first["state"], first["already_revoked"]) == (ids[0], "revoked", False)
    second = flow(db, "token", "revoke", "nightly", "--user", "admin")  # the one left unrevoked
    assert second.startswith(f"revoked: token {ids[1]} (nightly, of admin)")
    states = [
        r["state"] for r in json.loads(flow(db, "token", "list", "--json"))["items"] if r["name"] == "nightly"
    ]
    assert states == ["revoked", "revoked"]


def test_refused_token_verbs_record_nothing(db: str) -> None:
    before = tokens_of(db)
    calls = [
        ["create", "admin", "--expires", "soon"],
        ["create", "admin", "--expires", "2001-01-01"],
        ["create", "admin", "--name", "bad\x1bname"],
        ["revoke", "no-such-token"],
    ]
    for result in manage_many(db, [["flowdeck", "token", *args] for args in calls]):
        refused(result)
    assert tokens_of(db) == before


def test_every_verb_refuses_bad_input_with_exit_code_2(db: str) -> None:
    cases = [
        (["ls", "--status", "bogus"], "unknown status filter 'bogus'"),
        (["ls", "--workflow", "nope"], "workflow 'nope' is not registered"),
        (["ls", "--where", "field:order.customer"], "has no '=<value>' after its path"),
        (["ls", "--where", "order.customer=ada"], "is not a field term"),
        (
            ["ls", "--workflow", "fulfilment", "--where", "field:order.custmer=ada"],
            "records no path order.custmer (nearest: order.customer",
        ),
        (["show", "nope"], "no execution 'nope'"),
        (["start", "nope"], "workflow 'nope' is not registered"),
        (["start", "fulfilment", "--input", "order={bad"], "input 'order' is not valid JSON"),
        (["start", "fulfilment", "--input", 'order={"id": 1}'], "is not a valid Order"),
        (["start", "fulfilment", "--input", "order"], "--input takes NAME=JSON"),
        (["signal", "demo-awaiting-approval", "nope", "1"], "input 'nope' is not declared"),
        (["signal", "demo-completed", "approval", "{}"], "has already ended"),
        (["cancel", "nope"], "no execution 'nope'"),
        (["cancel", "demo-completed"], "has already ended"),
        (["cancel-all", "nope"], "workflow 'nope' is not registered"),
        (["resume", "nope"], "no execution 'nope'"),
        (["answer", "demo-awaiting-approval", "nope", "1"], "the flow has no node 'nope'"),
        (["answer", "demo-completed", "ship", '"x"'], "demo-completed"),
        (["end", "demo-completed"], "has already ended"),
        (["diagram", "fulfilment", "--format", "nope"], "unknown diagram format 'nope'"),
        (["diagram", "nope"], "workflow 'nope' is not registered"),
        (["parked", "nope"], "workflow 'nope' is not registered"),
        (["token", "create", "nobody"], "no user 'nobody'"),
        (["token", "create", "admin", "--expires", "soon"], "--expires 'soon' is neither a duration"),
        (["token", "create", "admin", "--expires", "2001-01-01"], "--expires '2001-01-01' is already past"),
        (["token", "create", "admin", "--expires", "0d"], "--expires '0d' is no time at all"),
        (["token", "create", "admin", "--expires", "999999w"], "past the calendar's end"),
        (["token", "create", "admin", "--name", "7"], "--name '7' is only digits"),
        (["token", "create", "admin", "--name", "\x07"], "holds a control character"),
        (["token", "create", "admin", "--name", " "], "--name must not be blank"),
        (["token", "list", "--user", "nobody"], "no user 'nobody'"),
        (["token", "revoke", "nope"], "no unrevoked token has the id or name 'nope'"),
        (["token", "revoke", "1", "--user", "nobody"], "no user 'nobody'"),
    ]
    results = manage_many(db, [["flowdeck", *args] for args, _ in cases])
    for (_, fragment), result in zip(cases, results, strict=True):
        refused(result, fragment)


def test_flowdeck_script_runs_the_verbs_at_the_top(db: str) -> None:
    import subprocess

    done = subprocess.run(
        [PYTHON, "-m", "flowdeck.console.cli", "ls", "--status", "cancelled", "--json"],
        cwd=Path(ROOT),
        env=environment(db),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [i["execution_id"] for i in json.loads(done.stdout)["items"]] == ["demo-cancelled"]


# ------------------------------------------------------------------------------- issue 11: output


def one_line(result: Result) -> str:
    """Refused as bad input with exactly one line on stderr; answers that line."""
    refused(result)
    line, newline, rest = result.stderr.partition("\n")
    assert (newline, rest) == ("\n", ""), result.explain()
    return line


def test_bad_values_print_one_line_per_error(db: str) -> None:
    bad_order = {"id": "o-bad", "customer": "ada", "items": [{"sku": "w", "qty": "many", "price": 1}, {}]}
    ok(
        manage(
            db,
            "flowdeck",
            "start",
            "fulfilment",
            "--id",
            "cli-values",
            "--input",
            "order=" + json.dumps(ORDER),
        )
    )
    start, signal, answer = manage_many(
        db,
        [
            ["flowdeck", "start", "fulfilment", "--input", "order=" + json.dumps(bad_order)],
            ["flowdeck", "signal", "cli-values", "approval", '{"approved": 3, "by": ["ops"]}'],
            ["flowdeck", "answer", "demo-completed", "ship", '{"carrier": 1}'],
        ],
    )
    assert refused(start).stderr.splitlines() == [
        "CommandError: value for 'order' is not a valid Order:",
        "  order.items.0.qty: Input should be a valid integer, unable to parse string as an integer",
        "  order.items.1.sku: Field required",
        "  order.items.1.qty: Field required",
        "  order.items.1.price: Field required",
    ]
    assert refused(signal).stderr.splitlines() == [
        "CommandError: value for 'approval' is not a valid Approval:",
        "  approval.approved: Input should be a valid boolean, unable to interpret input",
        "  approval.by: Input should be a valid string",
    ]
    assert refused(answer).stderr.splitlines() == [
        "CommandError: value for 'ship' is not a valid str:",
        "  ship: Input should be a valid string",
    ]
    assert json.loads(flow(db, "ls", "--prefix", "o-bad", "--json"))["total"] == 0


def test_start_refuses_an_id_breaking_the_id_rule_before_reading_inputs(db: str) -> None:
    before = json.loads(flow(db, "ls", "--json"))["total"]
    cases = {
        "a/b": "invalid execution id 'a/b': must not contain '/' (at position 1)",
        "..": "invalid execution id '..': must not be '.' or '..'",
        "": "invalid execution id '': must not be empty",
        "x\x1b[2Jy": "invalid execution id 'x\\x1b[2Jy': must not contain the control character U+001B "
        "(at position 1)",
        "z" * 201: f"invalid execution id '{'z' * 60}…': must be at most 200 characters (got 201)",
    }
    # the inputs are malformed too: the id is what this door checks first, and nothing is written
    results = manage_many(
        db, [["flowdeck", "start", "fulfilment", "--id", eid, "--input", "order={bad"] for eid in cases]
    )
    for message, result in zip(cases.values(), results, strict=True):
        assert one_line(result) == f"CommandError: {message}"
    assert json.loads(flow(db, "ls", "--json"))["total"] == before


HOSTILE = "r\x1b[31mred\x07\rcr\x7f\x9b\u2028\nnext"
ESCAPED = "r\\x1b[31mred\\x07\\rcr\\x7f\\x9b\\u2028\\nnext"
LEGACY_ID = "legacy\x1b[2J\nrow"  # written before the id rule existed: it must still print safely
# a terminal control character anywhere in what a command printed (newlines are the output's own)
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")

WRITE_LEGACY_ROW = f"""
import asyncio
from flowdeck.console import runtime
from flowdeck.store import spi
from datetime import datetime, timezone
async def write():
    created = spi.Event(spi.EventKind.CREATED, "fulfilment", {LEGACY_ID!r}, datetime.now(timezone.utc), {{}})
    await runtime.store().create_execution_if_absent(
        {LEGACY_ID!r}, "fulfilment", "0ld", spi.Running(), created
    )
asyncio.run(write())
"""


def test_terminal_control_characters_are_printed_escaped(db: str) -> None:
    order = "order=" + json.dumps(ORDER)
    for started in manage_many(
        db,
        [
            ["flowdeck", "start", "fulfilment", "--id", eid, "--input", order]
            for eid in ("cli-hostile", "cli-end")
        ],
    ):
        ok(started)
    ok(manage(db, "flowdeck", "cancel", "cli-hostile", HOSTILE))
    ok(manage(db, "shell", "-c", WRITE_LEGACY_ROW))
    calls = [
        ["flowdeck", "show", "cli-hostile"],
        ["flowdeck", "show", "cli-hostile", "--json"],
        ["flowdeck", "ls", "--prefix", "legacy"],
        ["flowdeck", "ls", "--prefix", "legacy", "--json"],
        ["flowdeck", "show", LEGACY_ID],
        ["flowdeck", "end", "cli-end", HOSTILE],
        ["flowdeck", "signal", "cli-hostile", "na\x1b]0;pwned\x07me", "1"],
    ]
    results = manage_many(db, calls)
    for result in results:
        assert not RAW_CONTROL.search(result.stdout + result.stderr), result.explain()
    show, show_json, ls, ls_json, legacy, end, signal = results
    assert f"cancel requested: {ESCAPED}" in ok(show).stdout.splitlines()
    assert json.loads(ok(show_json).stdout)["cancel_reason"] == HOSTILE  # JSON escapes, and keeps the value
    # its version ("0ld") is one no process serves: parked, not running
    assert ok(ls).stdout.splitlines()[1].split()[:3] == ["legacy\\x1b[2J\\nrow", "fulfilment", "parked"]
    assert [i["execution_id"] for i in json.loads(ok(ls_json).stdout)["items"]] == [LEGACY_ID]
    assert "execution  legacy\\x1b[2J\\nrow" in ok(legacy).stdout.splitlines()
    assert ok(end).stdout == f"ended cli-end (failed: {ESCAPED}); no undos ran\n"
    assert one_line(signal).startswith("CommandError: input 'na\\x1b]0;pwned\\x07me' is not declared")


def test_a_database_never_migrated_is_refused_in_one_line_for_every_verb(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    url = sqlite_url(path)
    message = (
        f"CommandError: the database {path} is not migrated ({{}} migration(s) to apply): "
        "run `python manage.py migrate` (or `flowdeck migrate`) first"
    )
    calls = [
        ["ls"],
        ["show", "x"],
        ["start", "fulfilment", "--id", "x"],
        ["signal", "x", "approval", "{}"],
        ["cancel", "x"],
        ["cancel-all", "fulfilment"],
        ["resume", "x"],
        ["answer", "x", "ship", '"y"'],
        ["end", "x"],
        ["diagram", "fulfilment"],
        ["parked", "fulfilment"],
        ["purge", "--older-than", "30d"],
        ["activity"],
        ["schedule", "ls"],
        ["rate-limits"],
        ["limits"],
        ["token", "create", "admin"],
    ]
    assert set(cli.FLOW_VERBS) == {args[0] for args in calls}
    lines = [one_line(result) for result in manage_many(url, [["flowdeck", *args] for args in calls])]
    count = re.search(r"\((\d+) migration", lines[0])
    assert count is not None, lines[0]
    assert int(count[1]) > 0
    assert lines == [message.format(count[1])] * len(calls)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []  # nothing was written


def test_arguments_that_are_not_utf8_are_refused_in_one_line(db: str) -> None:
    # bytes that are not UTF-8 reach Python as lone surrogates; no database can store them
    ok(
        manage(
            db, "flowdeck", "start", "fulfilment", "--id", "cli-utf8", "--input", "order=" + json.dumps(ORDER)
        )
    )
    cancel, start = manage_many(
        db,
        [
            ["flowdeck", "cancel", "cli-utf8", "why\udc9b"],
            ["flowdeck", "start", "fulfilment", "--input", 'order={"id": "\udcff"}'],
        ],
    )
    assert one_line(cancel) == "CommandError: reason is not UTF-8 text: 'why\\udc9b'"
    assert one_line(start) == "CommandError: input is not UTF-8 text: '" + 'order={"id": "\\udcff"}' + "'"
    shown = json.loads(flow(db, "show", "cli-utf8", "--json"))
    assert (shown["cancel_requested"], shown["cancel_reason"]) == (False, "")
