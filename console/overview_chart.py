"""The overview's activity charts, drawn on the server as SVG: per bucket of time, three bars (started,
completed, failed) on one scale, a few time labels under them and the scale's top at the left. Each bar
that counts something is a link (its third of the bucket's column, full height, answers the pointer) to
the list of exactly what it counts; its hover text says so.

The SVG is a `group` (not an `img`, whose children are presentational): its bars are links. Server-side so
the page needs no charting script (CSP: scripts from static/ only) and shows at once; the colours are CSS
classes (static/console/overview.css), never inline styles. Every text is escaped. Every
chart has the same view box whatever its number of buckets, so two charts side by side share a text size.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from flowdeck.store import counts

__all__ = ["bar_chart"]

HEIGHT = 150  # the plot's height in SVG units; the labels take the band under it
LEFT = 30  # room for the scale's numbers
PLOT = 720  # the plot's width, shared by every bucket
SERIES = ("started", "completed", "failed")
# where each series' link zone starts and ends, in parts of the bucket's slot: between its bar's
# neighbours' middles (the bars sit at 0.11 + 0.26 k, 0.26 wide)
_ZONES = ((0.0, 0.37), (0.37, 0.63), (0.63, 1.0))
_LISTS = {"started": "started", "completed": "that completed", "failed": "that failed"}

Link = Callable[[datetime, str], str]  # (a bucket's start, a series) → the list of what that bar counts


def bar_chart(
    buckets: Sequence[counts.ActivityBucket],
    label_every: int,
    time_format: str,
    zone: tzinfo,
    title: str,
    link: Link | None = None,
    span: str = "bucket",
) -> SafeString:
    """The SVG of `buckets`, a time label (in `zone`, `time_format`) under each bucket that starts on a
    multiple of `label_every` seconds (every 10 minutes: 15:10, 15:20, ...); with `link`, each bar that
    counts something links there, its hover text naming what it lists (in that `span`: minute, hour)."""
    top = _nice_top(max((max(b.started, b.completed, b.failed) for b in buckets), default=0))
    slot = PLOT / max(1, len(buckets))
    drawn = _Drawn(slot, top, zone, time_format, link, span)
    bars = format_html_join("", "{}", ((drawn.slot(LEFT + slot * i, b),) for i, b in enumerate(buckets)))
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
        '<svg class="activity-chart" viewBox="0 0 {w} {h}" role="group" aria-label="{title}">'
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


class _Drawn:
    """What every bucket of one chart shares: the slot's width, the scale, the clock, the links."""

    def __init__(
        self, slot: float, top: int, zone: tzinfo, time_format: str, link: Link | None, span: str
    ) -> None:
        self.width, self.top, self.zone, self.time_format = slot, top, zone, time_format
        self.link, self.span = link, span

    def slot(self, x: float, bucket: counts.ActivityBucket) -> SafeString:
        values = (bucket.started, bucket.completed, bucket.failed)
        at = _local(bucket.start, self.zone).strftime(self.time_format)
        bars = format_html_join(
            "",
            "{}",
            (
                (self._bar(x, k, css, v, bucket.start, at),)
                for k, (css, v) in enumerate(zip(SERIES, values, strict=True))
            ),
        )
        tip = f"{at}: {bucket.started} started, {bucket.completed} completed, {bucket.failed} failed"
        # the whole slot answers the hover, so an empty bucket says so too
        return format_html(
            '<g class="slot"><title>{}</title><rect class="hit" x="{}" y="0" width="{}" height="{}"/>{}</g>',
            tip,
            f"{x:.1f}",
            f"{self.width:.1f}",
            HEIGHT,
            bars,
        )

    def _bar(self, x: float, k: int, series: str, value: int, start: datetime, at: str) -> SafeString:
        if not value:
            return SafeString("")
        bar = self.width * 0.26
        height = _height(value, self.top)
        rect = format_html(
            '<rect class="bar {}" x="{}" y="{}" width="{}" height="{}"/>',
            series,
            f"{x + self.width * 0.11 + bar * k:.1f}",
            HEIGHT - height,
            f"{bar:.1f}",
            height,
        )
        if self.link is None:
            return rect
        left, right = _ZONES[k]
        said = f"{at}: {value} {series}: list the executions {_LISTS[series]} in this {self.span}"
        # out of the tab order: a chart holds up to 180 of them; the sums above it are the keyboard's way
        return format_html(
            '<a href="{}" class="bar-link" tabindex="-1" aria-label="{}"><title>{}</title>'
            '<rect class="zone" x="{}" y="0" width="{}" height="{}"/>{}</a>',
            self.link(start, series),
            said,
            said,
            f"{x + self.width * left:.1f}",
            f"{self.width * (right - left):.1f}",
            HEIGHT,
            rect,
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
