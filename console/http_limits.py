"""What daphne answers a request whose head is too long: 414 for the request line (a ~100 KB query string),
431 for the header block, each a short plain-text answer before the connection closes.

daphne parses HTTP/1.1 with Twisted's `HTTPChannel`, which refuses both before any ASGI application sees the
request: a line over `MAX_LENGTH` (16 KiB) dropped the connection with no answer at all, and a header block
over `totalHeadersSize` (16 KiB) got a bare `400 Bad Request`. The limits stay Twisted's; only the answers
change. `install()` is called by `console.asgi` (what `daphne console.asgi:application` imports before it
serves); a project serving its own ASGI application calls it there too.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HEADERS_TOO_LARGE", "URI_TOO_LONG", "install"]

URI_TOO_LONG = (414, "URI Too Long", "the request line is too long: shorten the address or its query string")
HEADERS_TOO_LARGE = (431, "Request Header Fields Too Large", "the request's headers are too large")


def install() -> None:
    """Make Twisted's HTTP/1.1 channel answer 414 and 431 (once per process; later calls do nothing)."""
    from twisted.web import http  # daphne's parser; imported here so importing this module costs nothing

    channel: Any = http.HTTPChannel
    if getattr(channel, "_flowdeck_limits", False):
        return
    line_received = channel.lineReceived

    def lineReceived(self: Any, line: bytes) -> Any:  # Twisted's name
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            return _refuse(self)
        return line_received(self, line)

    def lineLengthExceeded(self: Any, line: bytes) -> Any:  # Twisted's name
        return _refuse(self)

    channel.lineReceived = lineReceived
    channel.lineLengthExceeded = lineLengthExceeded
    channel._flowdeck_limits = True


def _refuse(channel: Any) -> None:
    # Nothing of this request's head has been counted yet while its first line is read: the request line.
    status, phrase, text = URI_TOO_LONG if channel._receivedHeaderSize == 0 else HEADERS_TOO_LARGE
    body = f"{status} {phrase}: {text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    channel.transport.write(head.encode() + body)
    channel.loseConnection()
