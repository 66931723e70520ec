"""`/favicon.ico` is answered (no login, an icon a browser draws); every page links the console's icons."""

from __future__ import annotations

import struct

import pytest
from django.test import Client


@pytest.mark.django_db
def test_favicon_ico_is_an_icon_without_a_login() -> None:
    reply = Client().get("/favicon.ico")

    assert reply.status_code == 200
    assert reply["Content-Type"] == "image/x-icon"
    reserved, kind, count = struct.unpack("<HHH", reply.content[:6])
    assert (reserved, kind) == (0, 1)  # an ICO directory, not an SVG or a page under that name
    sizes = {reply.content[6 + 16 * n] for n in range(count)}
    assert sizes == {16, 32, 48}
    assert Client().head("/favicon.ico").status_code == 200
    assert Client().post("/favicon.ico").status_code == 405


@pytest.mark.django_db
def test_the_login_page_links_both_icons() -> None:
    html = Client().get("/login/").content.decode()

    assert 'rel="icon" href="/static/flowdeck/console/favicon.svg" type="image/svg+xml"' in html
    assert 'rel="icon" href="/favicon.ico"' in html
