"""What every `/api/` request is checked for before anything authenticates or parses it.

The checks run in `flowdeck.console.gate.api`, so they hold for every route alike (and for a caller
with no token: the token check reads the body too):

- the body is at most Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` bytes (2.5 MiB unless the settings say
  otherwise), whether it came with a `Content-Length` or streamed without one: `BodyTooLarge`, 413;
- a JSON body nests at most `MAX_JSON_DEPTH` arrays and objects, counted on the raw text before any
  parser recurses into it: `NestingTooDeep`, 400;
- no path, query value or JSON string holds a NUL (`NulCharacter`) or a lone surrogate
  (`LoneSurrogate`), neither of which a database text column or UTF-8 can hold: 400.

Each refusal is an exception in `flowdeck.console.api.errors.ERROR_TABLE`, answered with the API's error body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

__all__ = [
    "MAX_JSON_DEPTH",
    "BodyTooLarge",
    "LoneSurrogate",
    "NestingTooDeep",
    "NulCharacter",
    "RequestRefused",
    "check_request",
    "json_depth_exceeds",
]

MAX_JSON_DEPTH = 64


class RequestRefused(Exception):
    """A request turned away before routing; `detail` is the error body's `detail`."""

    def __init__(self, message: str, **detail: Any) -> None:
        super().__init__(message)
        for key, value in detail.items():
            setattr(self, key, value)


class BodyTooLarge(RequestRefused):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes", limit=limit)


class NestingTooDeep(RequestRefused):
    def __init__(self) -> None:
        super().__init__(
            f"the JSON body nests deeper than {MAX_JSON_DEPTH} arrays or objects", limit=MAX_JSON_DEPTH
        )


class NulCharacter(RequestRefused):
    """No text column of PostgreSQL can hold U+0000, so no id, name, filter or value may carry one."""

    def __init__(self, where: str) -> None:
        super().__init__(f"the request's {where} carries a NUL character (U+0000), which cannot be stored")


class LoneSurrogate(RequestRefused):
    """`"\\udfff"` without its pair is valid JSON text but no character: UTF-8 cannot encode it."""

    def __init__(self) -> None:
        super().__init__(
            "the JSON body holds a lone surrogate (\\ud800-\\udfff unpaired), which is no character"
        )


# A JSON string literal (escapes included), so brackets inside strings are not counted as nesting.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Every opener becomes `[` and every closer `]`; all other bytes are dropped.
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{]}")
# Text the parser could turn into a NUL or a lone surrogate: only then is the body parsed here.
_SUSPECT = re.compile(rb"\x00|\\u0000|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `body`, read as JSON text, opens more than `limit` arrays or objects at some point.

    Counted on the bytes, never by a recursive parser: with strings cut out and only brackets kept, each
    pass of `replace("[]", "")` removes exactly one level of every nest, so a nest still standing after
    `limit` passes is deeper than `limit`, and so is text leaving more than `limit` brackets open. Text
    that is not JSON may pass with less than twice the limit: the parser then refuses it, without
    recursing anywhere near Python's limit.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", body).translate(_BRACKETS, _NOT_BRACKETS)
    for _ in range(limit):
        reduced = brackets.replace(b"[]", b"")
        if len(reduced) == len(brackets):
            break
        brackets = reduced
    return b"[]" in brackets or brackets.count(b"[") > limit


def _strings(value: Any) -> Iterable[str]:
    """Every key and string in a parsed JSON value (its depth is already bounded)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise NulCharacter(where)
    if any("\ud800" <= char <= "\udfff" for char in text):
        raise LoneSurrogate()


def _check_body(body: bytes) -> None:
    if json_depth_exceeds(body):
        raise NestingTooDeep()
    if not _SUSPECT.search(body):
        return
    if b"\x00" in body:
        raise NulCharacter("body")
    try:
        value = json.loads(body)
    except ValueError:
        return  # not JSON: the route's own parsing refuses it
    for text in _strings(value):
        _check_text(text, "body")


def _body(request: HttpRequest) -> bytes:
    """The body, read once (and kept by Django for the view): Django refuses to read past the limit,
    from `Content-Length` or from the bytes a body without one actually brought."""
    try:
        return request.body
    except RequestDataTooBig as error:
        raise BodyTooLarge(settings.DATA_UPLOAD_MAX_MEMORY_SIZE) from error


def check_request(request: HttpRequest) -> None:
    """Refuse the request (a `RequestRefused`) unless its body, path and query may go further."""
    body = _body(request)
    _check_text(request.path, "path")
    for key, values in request.GET.lists():
        for text in (key, *values):
            _check_text(text, "query")
    if body:
        _check_body(body)
