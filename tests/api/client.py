"""A small HTTP client for the live API tests (the standard library's, so nothing stands between the
test and the wire)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ApiClient", "Live", "Response"]

_UNSET = object()


@dataclass(frozen=True)
class Live:
    base: str
    credentials: dict[str, str]
    server_log: Path
    workers_log: Path
    run: Callable[..., str]  # runs `python ARGS` beside the server (same database); answers its stdout
    database: str  # the server's PostgreSQL database (the test process never opens it; it may refuse it)


@dataclass(frozen=True)
class Response:
    status: int
    text: str
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def body(self) -> Any:
        return json.loads(self.text)


class ApiClient:
    """Calls `/api/v1/...` as one caller: a bearer token, a session cookie (with its CSRF pair), or nobody."""

    def __init__(self, base: str, *, token: str | None = None, session: str | None = None, csrf: bool = True):
        self.base = base
        self.token = token
        self.session = session
        self.csrf = csrf

    def request(
        self, method: str, path: str, body: Any = _UNSET, *, raw: bytes | None = None, query: str = ""
    ) -> Response:
        url = f"{self.base}/api/v1{path}" + (f"?{query}" if query else "")
        headers = {"Accept": "application/json"}
        data = raw
        if body is not _UNSET:
            data = json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if self.session:
            secret = "a" * 32  # Django accepts an unmasked secret in the header equal to the cookie's
            cookies = [f"sessionid={self.session}"]
            if self.csrf:
                cookies.append(f"csrftoken={secret}")
                headers["X-CSRFToken"] = secret
                headers["Referer"] = self.base + "/"
            headers["Cookie"] = "; ".join(cookies)
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return Response(reply.status, reply.read().decode(), dict(reply.headers))
        except urllib.error.HTTPError as error:
            with error:  # an unclosed error keeps its socket: a ResourceWarning in some later test
                return Response(error.code, error.read().decode(), dict(error.headers))

    def get(self, path: str, *, query: str = "") -> Response:
        return self.request("GET", path, query=query)

    def post(self, path: str, body: Any = _UNSET, *, raw: bytes | None = None) -> Response:
        return self.request("POST", path, body, raw=raw)

    def until_status(self, execution_id: str, wanted: str, timeout: float = 30.0) -> dict[str, Any]:
        """Poll the execution until its status starts with `wanted` (the workers run in another process,
        on real time: this waits for them, never for a flow's own time)."""
        deadline = time.monotonic() + timeout
        seen: Any = None
        while time.monotonic() < deadline:
            reply = self.get(f"/executions/{execution_id}")
            seen = reply.body
            if reply.status == 200 and seen["status"].startswith(wanted):
                return seen
            time.sleep(0.05)
        raise AssertionError(f"execution {execution_id} never reached {wanted!r}; last seen: {seen}")

    def until_waiting(self, execution_id: str, input_name: str, timeout: float = 30.0) -> dict[str, Any]:
        """Poll until the execution waits for `input_name`."""
        deadline = time.monotonic() + timeout
        seen: Any = None
        while time.monotonic() < deadline:
            seen = self.get(f"/executions/{execution_id}").body
            if any(w["kind"] == "waiting" and w["detail"] == input_name for w in seen.get("waits", [])):
                return seen
            time.sleep(0.05)
        raise AssertionError(f"execution {execution_id} never waited for {input_name!r}; last seen: {seen}")
