"""The live daphne (`daphne console.asgi:application`) answers a request head over its limits, over a real
socket: 414 for a ~100 KB query string, 431 for ~100 KB of headers, where it used to drop the connection
with no answer (and give a bare 400)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from tests.api.client import Live


def _exchange(live: Live, raw: bytes) -> bytes:
    address = urlsplit(live.base)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_a_100_kb_query_string_is_a_414_and_100_kb_of_headers_a_431(live: Live) -> None:
    long_line = _exchange(
        live, b"GET /api/v1/health?q=" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    )
    headers = b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 1000) for i in range(100))
    big_head = _exchange(live, b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\n")
    assert long_line.split(b"\r\n", 1)[0] == b"HTTP/1.1 414 URI Too Long"
    assert big_head.split(b"\r\n", 1)[0] == b"HTTP/1.1 431 Request Header Fields Too Large"
