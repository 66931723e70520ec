"""The overview's server-side SVG chart: bars to scale, a scale top on 1-2-5 steps, a hover text per
bucket (an empty one too), labels on round times only, and nothing in it that a CSP would refuse."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from flowdeck.console import overview_chart
from flowdeck.store import counts

T0 = datetime(2026, 12, 1, 15, 0, tzinfo=UTC)


def _minutes(*values: tuple[int, int, int]) -> list[counts.ActivityBucket]:
    return [counts.ActivityBucket(T0 + timedelta(minutes=i), *v) for i, v in enumerate(values)]


def _heights(svg: str, series: str) -> list[int]:
    return [int(h) for h in re.findall(rf'<rect class="bar {series}" [^>]*height="(\d+)"', svg)]


def test_bars_are_to_one_scale_and_an_empty_series_draws_nothing() -> None:
    svg = str(overview_chart.bar_chart(_minutes((7, 0, 0), (0, 14, 3)), 600, "%H:%M", UTC, "t"))
    assert '<text class="scale" x="26" y="10">20</text>' in svg  # 14 rounds up to 20
    assert _heights(svg, "started") == [round(150 * 7 / 20)]
    assert _heights(svg, "completed") == [round(150 * 14 / 20)]
    assert _heights(svg, "failed") == [round(150 * 3 / 20)]
    assert svg.count('<g class="slot">') == 2
    assert "<title>15:01: 0 started, 14 completed, 3 failed</title>" in svg


def test_an_empty_chart_still_has_its_slots_and_a_scale_of_one() -> None:
    svg = str(overview_chart.bar_chart(_minutes(*[(0, 0, 0)] * 60), 600, "%H:%M", UTC, "t"))
    assert 'class="bar' not in svg
    assert svg.count("<title>") == 60
    assert '<text class="scale" x="26" y="10">1</text>' in svg


def test_labels_fall_on_round_times_and_nothing_is_styled_inline() -> None:
    svg = str(overview_chart.bar_chart(_minutes(*[(1, 1, 1)] * 60), 600, "%H:%M", UTC, "<b>&"))
    assert re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg) == [
        "15:00", "15:10", "15:20", "15:30", "15:40", "15:50",
    ]  # fmt: skip
    assert "style=" not in svg
    assert "<script" not in svg
    assert 'aria-label="&lt;b&gt;&amp;"' in svg  # the title is escaped


def test_each_bar_that_counts_links_to_its_list_and_says_what_it_lists() -> None:
    def link(start: datetime, series: str) -> str:
        return f"/x?at={start:%H%M}&s={series}&q=<&>"

    svg = str(overview_chart.bar_chart(_minutes((2, 0, 1)), 600, "%H:%M", UTC, "t", link, "minute"))
    links = re.findall(r'<a href="([^"]+)" class="bar-link" tabindex="-1" aria-label="([^"]+)">', svg)
    escaped = "&amp;q=&lt;&amp;&gt;"
    assert links == [
        (
            f"/x?at=1500&amp;s=started{escaped}",
            "15:00: 2 started: list the executions started in this minute",
        ),
        (
            f"/x?at=1500&amp;s=failed{escaped}",
            "15:00: 1 failed: list the executions that failed in this minute",
        ),
    ]
    # each link's zone is its third of the slot, full height, and holds its bar
    zones = re.findall(
        r'<rect class="zone" x="([\d.]+)" y="0" width="([\d.]+)" height="150"/><rect class="bar', svg
    )
    assert zones == [("30.0", "266.4"), ("483.6", "266.4")]
    assert "bar-link" not in str(overview_chart.bar_chart(_minutes((2, 0, 1)), 600, "%H:%M", UTC, "t"))
