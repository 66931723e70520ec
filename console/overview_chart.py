"""The overview's activity charts, drawn on the server as SVG: per bucket of time, three bars (started,
completed, failed) on one scale, a few time labels under them and the scale's top at the left.

Server-side so the page needs no charting script (CSP: scripts from static/ only) and shows at once; the
colours are CSS classes (static/console/overview.css), never inline styles. Every text is escaped. Every
chart has the same view box whatever its number of buckets, so two charts side by side share a text size.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, tzinfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from store import counts

__all__ = ["bar_chart"]

HEIGHT = 150  # the plot's height in SVG units; the labels take the band under it
LEFT = 30  # room for the scale's numbers
PLOT = 720  # the plot's width, shared by every bucket
SERIES = ("started", "completed", "failed")


def bar_chart(
    buckets: Sequence[counts.ActivityBucket], label_every: int, time_format: str, zone: tzinfo, title: str
) -> SafeString:
    """The SVG of `buckets`, a time label (in `zone`, `time_format`) under each bucket that starts on a
    multiple of `label_every` seconds (every 10 minutes: 15:10, 15:20, ...)."""
    top = _nice_top(max((max(b.started, b.completed, b.failed) for b in buckets), default=0))
    slot = PLOT / max(1, len(buckets))
    bars = format_html_join(
        "", "{}", ((_slot(LEFT + slot * i, slot, b, top, zone, time_format),) for i, b in enumerate(buckets))
    )
    labels = format_html_join(
        "",
        '<text class="tick" x="{}" y="{}">{}</text>',
        (
            (f"{LEFT + slot * i:.1f}", HEIGHT + 16, _local(b.start, zone).strftime(time_format))
            for i, b in enumerate(buckets)
            if int(b.start.timestamp()) % label_every == 0
        ),
    )
    return format_html(
        '<svg class="activity-chart" viewBox="0 0 {w} {h}" role="img" aria-label="{title}">'
        '<line class="axis" x1="{left}" y1="{base}" x2="{w}" y2="{base}"/>'
        '<line class="grid" x1="{left}" y1="0.5" x2="{w}" y2="0.5"/>'
        '<text class="scale" x="{sx}" y="10">{top}</text><text class="scale" x="{sx}" y="{base}">0</text>'
        "{bars}{labels}</svg>",
        w=LEFT + PLOT + 4,
        h=HEIGHT + 22,
        title=title,
        left=LEFT,
        base=HEIGHT,
        sx=LEFT - 4,
        top=top,
        bars=bars,
        labels=labels,
    )


def _slot(
    x: float, slot: float, bucket: counts.ActivityBucket, top: int, zone: tzinfo, time_format: str
) -> SafeString:
    bar = slot * 0.26
    values = (bucket.started, bucket.completed, bucket.failed)
    rects = format_html_join(
        "",
        '<rect class="bar {}" x="{}" y="{}" width="{}" height="{}"/>',
        (
            (css, f"{x + slot * 0.11 + bar * k:.1f}", HEIGHT - _height(v, top), f"{bar:.1f}", _height(v, top))
            for k, (css, v) in enumerate(zip(SERIES, values, strict=True))
            if v
        ),
    )
    at = _local(bucket.start, zone).strftime(time_format)
    tip = f"{at}: {bucket.started} started, {bucket.completed} completed, {bucket.failed} failed"
    # the whole slot answers the hover, so an empty bucket says so too
    return format_html(
        '<g class="slot"><title>{}</title><rect class="hit" x="{}" y="0" width="{}" height="{}"/>{}</g>',
        tip,
        f"{x:.1f}",
        f"{slot:.1f}",
        HEIGHT,
        rects,
    )


def _height(value: int, top: int) -> int:
    return 0 if not value else max(1, round(HEIGHT * value / top))


def _nice_top(peak: int) -> int:
    """The scale's top: the peak rounded up to 1, 2 or 5 times a power of ten (at least 1)."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if peak <= m * step:
                return m * step
        step *= 10


def _local(at: datetime, zone: tzinfo) -> datetime:
    return at.astimezone(zone)
