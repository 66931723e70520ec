"""`DATABASE_URL` as libpq writes it, several hosts included: `postgresql://user@h1:5432,h2:5433/db?
target_session_attrs=read-write` names a primary and its standby, and each connect picks the one that
accepts writes (docs/failover.md). dj-database-url reads one host only (it refuses the comma), so the hosts
are taken out before it parses and given back as Django's HOST and PORT, comma-separated, which Django hands
to psycopg as they are.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import dj_database_url

__all__ = ["parse"]


def parse(url: str, **options: object) -> dict[str, object]:
    """dj-database-url's settings for `url`; a multi-host PostgreSQL URL's hosts and ports joined by commas
    (a host without a port: PostgreSQL's 5432, as libpq reads it)."""
    parts = urlsplit(url)
    if "," not in parts.netloc or not parts.scheme.startswith("postgres"):
        return dict(dj_database_url.parse(url, **options))  # type: ignore[arg-type]
    user, _, hosts = parts.netloc.rpartition("@")
    pairs = [host.rpartition(":") if ":" in host else (host, "", "") for host in hosts.split(",")]
    named = [port for _, _, port in pairs if port]
    if any(not host for host, _, _ in pairs) or not all(port.isdigit() for port in named):
        raise ValueError(f"DATABASE_URL: cannot read the hosts {hosts!r} (write host:port,host:port)")
    single = urlunsplit(parts._replace(netloc=f"{user}@{pairs[0][0]}" if user else pairs[0][0]))
    config = dict(dj_database_url.parse(single, **options))  # type: ignore[arg-type]
    config["HOST"] = ",".join(host for host, _, _ in pairs)
    config["PORT"] = ",".join(port or "5432" for _, _, port in pairs)
    return config
