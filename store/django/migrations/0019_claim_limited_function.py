"""The limited claim in one statement (issue 31; PostgreSQL only, SQLite claims in its IMMEDIATE transaction).

`flowstore_claim_limited`, which `concurrency_queries.CLAIM_LIMITED_AT_ONCE` calls (store/django/concurrency.py
says how the claim uses it): the advisory locks of the limited workflows, then the candidates and the stamp,
each a statement of its own, so that each snapshot is taken after the locks. A function, not a table: the
slots are still the limited rows under a live lease (`store.concurrency`), so nothing else records a
holder, and a lapsed lease frees its slot as before. In PL/pgSQL because its statements must not share a
snapshot: it takes the transaction's advisory lock per limited workflow (`p_flows`, sorted by the caller, so
two claimers never wait on each other in a cycle; released at the commit), then runs `p_candidates`
(`concurrency_queries.LIMITED_CANDIDATES`), whose snapshot, taken after the locks, sees every earlier
claimer's commit; it takes the candidates in order while each of their groups has room
(`store.concurrency.Room`'s rule: the holders each candidate carries, `flow_held` and `key_held`, plus what
this call took), at most `p_limit`, and returns what `p_stamp` (`concurrency_queries.LIMITED_STAMP`)
answers for them. The two statements come as text from the caller, so that the readiness rule
(`queries.READY_WHERE`) and the columns handed over stay in the product's catalogues, not frozen here.
SECURITY INVOKER (the default): it runs what its caller could run itself.

Frozen as of this migration: the SQL below is a copy, not an import, of what the product ran when 0019 was
written (a migration replays a schema change on databases of any age; see 0018). Change this file never: a
new schema change is a new migration. Only Django is imported (tests/test_layers.py checks every migration).
"""

from typing import Any

from django.db import migrations

# Its body is stored as written (pg_get_functiondef, pg_dump): the whitespace is part of the schema.
CLAIM_FUNCTION = """
    CREATE FUNCTION flowstore_claim_limited(
        p_space integer, p_flows text[], p_candidates text, p_stamp text, p_pair_flows text[],
        p_pair_hashes text[], p_now timestamptz, p_limit integer, p_scan integer, p_executor text,
        p_expiry timestamptz
    ) RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $$
    DECLARE
        flow text;
        r record;
        taken jsonb := '{}';
        chosen text[] := '{}';
        key_group text;
        key_taken integer;
        flow_taken integer;
    BEGIN
        FOREACH flow IN ARRAY p_flows LOOP
            PERFORM pg_advisory_xact_lock(p_space, hashtext(flow));
        END LOOP;
        FOR r IN EXECUTE p_candidates USING p_now, p_flows, p_pair_flows, p_pair_hashes, p_limit * p_scan LOOP
            flow_taken := COALESCE((taken ->> ('w:' || r.flow_id))::integer, 0);
            CONTINUE WHEN r.concurrency_limit > 0 AND r.flow_held + flow_taken >= r.concurrency_limit;
            IF r.concurrency_per_key > 0 AND r.concurrency_key IS NOT NULL THEN
                key_group := 'k:' || length(r.flow_id) || ':' || r.flow_id || r.concurrency_key;
                key_taken := COALESCE((taken ->> key_group)::integer, 0);
                CONTINUE WHEN r.key_held + key_taken >= r.concurrency_per_key;
                taken := taken || jsonb_build_object(key_group, key_taken + 1);
            END IF;
            IF r.concurrency_limit > 0 THEN
                taken := taken || jsonb_build_object('w:' || r.flow_id, flow_taken + 1);
            END IF;
            chosen := chosen || r.id::text;
            EXIT WHEN cardinality(chosen) >= p_limit;
        END LOOP;
        IF cardinality(chosen) > 0 THEN
            RETURN QUERY EXECUTE p_stamp USING chosen, p_executor, p_expiry, p_now;
        END IF;
    END
    $$
    """

DROP_CLAIM_FUNCTION = """
    DROP FUNCTION flowstore_claim_limited(integer, text[], text, text, text[], text[], timestamptz, integer,
        integer, text, timestamptz)
    """


def create(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_FUNCTION)


def drop(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(DROP_CLAIM_FUNCTION)


class Migration(migrations.Migration):
    dependencies = [
        ("flowstore", "0018_event_partitions"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
