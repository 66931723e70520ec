"""daphne's HTTP/1.1 parser (Twisted's `HTTPChannel`, as daphne's own factory builds it) answers a request
line over its limit with 414 and a header block over its limit with 431, then closes; a request within
the limits still reaches the application. In process, on Twisted's string transport: `flowdeck.console.asgi`
installs the answers, as it does for `daphne flowdeck.console.asgi:application`."""

from __future__ import annotations

from typing import Any

import pytest
from daphne.http_protocol import HTTPFactory
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

import flowdeck.console.asgi  # noqa: F401  (installs the answers, as daphne's import of the application does)


class _Server:
    """What daphne's request asks of its server up to handing the request to the application."""

    root_path = ""
    server_name = ""
    request_buffer_size = 8192
    http_timeout = None
    proxy_forwarded_address_header = proxy_forwarded_port_header = proxy_forwarded_proto_header = None

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.received: list[Any] = []

    def protocol_connected(self, protocol: Any) -> None:
        pass

    def protocol_disconnected(self, protocol: Any) -> None:
        pass

    def create_application(self, protocol: Any, scope: dict[str, Any]) -> Any:
        self.seen.append(scope)
        return self  # the application's queue: `put_nowait` below

    def log_action(self, *args: Any) -> None:
        pass

    def put_nowait(self, message: Any) -> None:
        self.received.append(message)


def _send(raw: bytes) -> tuple[bytes, bool, list[Any]]:
    server = _Server()
    channel = HTTPFactory(server).buildProtocol(IPv4Address("TCP", "127.0.0.1", 5000))
    transport = StringTransport()
    channel.makeConnection(transport)
    channel.dataReceived(raw)
    return transport.value(), transport.disconnecting, server.seen


def _status(answer: bytes) -> bytes:
    return answer.split(b"\r\n", 1)[0]


def test_a_query_string_of_100_kb_is_a_414() -> None:
    answer, closed, seen = _send(b"GET /executions/?q=" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _status(answer) == b"HTTP/1.1 414 URI Too Long"
    assert answer.endswith(
        b"\r\n\r\n414 URI Too Long: the request line is too long: shorten the address or its query string\n"
    )
    assert (closed, seen) == (True, [])


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param(b"X-Big: " + b"b" * 20_000 + b"\r\n", id="one header over the line limit"),
        pytest.param(
            b"".join(b"X-H%d: %s\r\n" % (i, b"b" * 1000) for i in range(100)), id="100 KB of headers"
        ),
    ],
)
def test_a_header_block_over_the_limit_is_a_431(headers: bytes) -> None:
    answer, closed, seen = _send(b"GET / HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
    assert _status(answer) == b"HTTP/1.1 431 Request Header Fields Too Large"
    assert b"Content-Type: text/plain; charset=utf-8\r\n" in answer
    assert (closed, seen) == (True, [])


def test_a_request_within_the_limits_reaches_the_application() -> None:
    answer, closed, seen = _send(b"GET /?q=" + b"a" * 8_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (answer, closed) == (b"", False)
    assert [scope["query_string"] for scope in seen] == [b"q=" + b"a" * 8_000]
