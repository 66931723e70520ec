"""`DATABASE_URL` with several hosts, as libpq writes it (a primary and its standby, docs/failover.md)."""

from __future__ import annotations

import pytest

from flowdeck.console import database_url


def test_a_multi_host_url_becomes_comma_separated_hosts_and_ports() -> None:
    url = "postgresql://flowdeck:secret@db1:5432,db2:5433/flowdeck?target_session_attrs=read-write"
    config = database_url.parse(url, conn_max_age=0)
    assert (config["HOST"], config["PORT"]) == ("db1,db2", "5432,5433")
    assert (config["USER"], config["PASSWORD"], config["NAME"]) == ("flowdeck", "secret", "flowdeck")
    assert config["OPTIONS"] == {"target_session_attrs": "read-write"}
    assert config["ENGINE"] == "django.db.backends.postgresql"


def test_a_host_without_a_port_gets_postgresqls_default() -> None:
    config = database_url.parse("postgres://u@db1,db2:6000/app")
    assert (config["HOST"], config["PORT"]) == ("db1,db2", "5432,6000")


def test_a_single_host_url_reads_as_before() -> None:
    config = database_url.parse("postgresql://u@db1:5433/app", conn_max_age=0)
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db1", 5433, "app")


@pytest.mark.parametrize("url", ["postgresql://u@db1:5432,:5433/app", "postgresql://u@db1:x,db2:5433/app"])
def test_hosts_that_cannot_be_read_are_refused_by_name(url: str) -> None:
    with pytest.raises(ValueError, match="cannot read the hosts"):
        database_url.parse(url)
