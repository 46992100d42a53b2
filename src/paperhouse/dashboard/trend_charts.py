"""The dashboard's Trends page: line charts of shares by year, one line per venue, as inline SVG.

Computed from the exported trend marts (``topic_trends``, ``term_trends``, ``emerging_terms``;
``docs/trends.md``). Each chart puts every list with a year on one time axis, so lists of
different venues (ICLR 2021, NeurIPS 2022, ICLR 2026) sit side by side; a venue's line joins its
own lists in year order. The geometry is worked out here, so the template only draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

TOP_TOPICS = 6  # charts of the largest topics (level 1)
TERM_CHARTS = 6  # charts of emerging terms, and of terms new to a venue
WIDTH, HEIGHT = 320, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 14, 12, 30
MIN_TICK_GAP = 34  # pixels between the centres of two year labels (a label is about 28 wide)
# Colours by venue, in the order of the venues' names (the palette of style.css, then more).
PALETTE = ("#486581", "#d64545", "#2f8132", "#f0b429", "#9446ed", "#0e7c86", "#8d2b0b", "#627d98")
# Top of a chart's share axis: the smallest of these at or above the chart's largest share.
SHARE_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
UNKNOWN_VENUE = "unknown"


@dataclass(frozen=True)
class TimeAxis:
    years: list[int]

    def labelled_years(self) -> list[int]:
        """The years labelled on the axis: from the latest back, each far enough from the one after it."""
        kept: list[int] = []
        for year in reversed(self.years):
            if not kept or self.x(kept[-1]) - self.x(year) >= MIN_TICK_GAP:
                kept.append(year)
        return kept[::-1]

    def x(self, year: int) -> float:
        first, last = self.years[0], self.years[-1]
        if first == last:
            return LEFT + (WIDTH - LEFT - RIGHT) / 2
        return LEFT + (WIDTH - LEFT - RIGHT) * (year - first) / (last - first)


def share_top(largest: float) -> float:
    return next((step for step in SHARE_STEPS if largest <= step), 1.0)


def venue_label(venue: str | None) -> str:
    return venue if venue is not None else UNKNOWN_VENUE


def chart(key: str, title: str, points: list[dict[str, Any]], axis: TimeAxis, colours: dict[str, str]) -> dict:
    """One line chart: ``points`` hold venue, year, papers, list_papers and share, one per list
    the chart covers; a line per venue through its points in year order."""
    top = share_top(max((p["share"] for p in points), default=0.0))
    plot_height = HEIGHT - TOP - BOTTOM

    def y(share: float) -> float:
        return TOP + plot_height * (1 - share / top)

    series = []
    for venue in sorted({venue_label(p["venue"]) for p in points}):
        own = sorted((p for p in points if venue_label(p["venue"]) == venue), key=lambda p: p["year"])
        placed = [{**p, "venue": venue, "cx": round(axis.x(p["year"]), 1), "cy": round(y(p["share"]), 1)} for p in own]
        series.append(
            {
                "venue": venue,
                "colour": colours[venue],
                "points": placed,
                "path": " ".join(f"{p['cx']},{p['cy']}" for p in placed),
            }
        )
    return {
        "key": key,
        "title": title,
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "bottom": TOP + plot_height,
        "y_ticks": [{"label": f"{round(100 * top * f, 2):g}%", "y": round(y(top * f), 1)} for f in (0, 0.5, 1)],
        "x_ticks": [{"label": str(year), "x": round(axis.x(year), 1)} for year in axis.labelled_years()],
        "series": series,
    }


def _term_points(trends: pl.DataFrame, lists: list[dict], term_id: str) -> list[dict]:
    """A term's share of every list; a list without a row in term_trends uses it in no paper."""
    rows = {(r["venue"], r["year"]): r for r in trends.filter(term_id=term_id).to_dicts()}
    return [
        {
            "venue": lst["venue"],
            "year": lst["year"],
            "list_papers": lst["papers"],
            "papers": rows[key]["papers"] if (key := (lst["venue"], lst["year"])) in rows else 0,
            "share": rows[key]["share_of_list"] if key in rows else 0.0,
        }
        for lst in lists
    ]


def page_data(export: Path) -> dict[str, Any]:
    """What the Trends page shows, from the Parquet export in ``export``."""
    topic_trends = pl.read_parquet(export / "topic_trends.parquet")
    term_trends = pl.scan_parquet(export / "term_trends.parquet")
    emerging = pl.read_parquet(export / "emerging_terms.parquet").sort(
        "rank", "year", "venue", descending=[False, True, False]
    )
    lists = (
        pl.read_parquet(export / "venue_summary.parquet")
        .filter(pl.col("year").is_not_null() & (pl.col("papers") > 0))
        .select("venue", "year", "papers", "venue_label")
        .sort("year", "venue", nulls_last=True)
        .to_dicts()
    )
    for lst in lists:  # the venue's previous list, which changes are measured from
        lst["previous_year"] = max(
            (o["year"] for o in lists if o["venue"] == lst["venue"] and o["year"] < lst["year"]), default=None
        )
    venues = sorted({venue_label(lst["venue"]) for lst in lists})
    colours = {venue: PALETTE[i % len(PALETTE)] for i, venue in enumerate(venues)}
    axis = TimeAxis(sorted({lst["year"] for lst in lists}) or [0])

    level_one = topic_trends.filter(level=1)
    top_topics = (
        level_one.group_by("topic_id", "label")
        .agg(pl.col("papers").sum())
        .sort("papers", "topic_id", descending=[True, False])
        .head(TOP_TOPICS)
        .to_dicts()
    )
    topic_charts = [
        chart(
            f"topic-{t['topic_id']}",
            f"{t['topic_id']}. {t['label']}",
            [{**r, "share": r["share_of_list"]} for r in level_one.filter(topic_id=t["topic_id"]).to_dicts()],
            axis,
            colours,
        )
        for t in top_topics
    ]

    emerging_ids = emerging.unique("term_id", keep="first", maintain_order=True).head(TERM_CHARTS)
    # Terms a venue's list uses for the first time, when the venue had an earlier list: its new words.
    new_terms = (
        term_trends.filter(pl.col("previous_year").is_not_null() & (pl.col("first_year_in_venue") == pl.col("year")))
        .sort("papers", "term", descending=[True, False])
        .unique("term_id", keep="first", maintain_order=True)
        .head(TERM_CHARTS)
        .collect()
    )
    chosen = pl.concat([emerging_ids.select("term_id"), new_terms.select("term_id")]).unique()
    chosen_trends = term_trends.join(chosen.lazy(), on="term_id").collect()

    def term_charts(terms: pl.DataFrame, prefix: str) -> list[dict]:
        return [
            chart(
                f"{prefix}-{t['term_id']}", t["term"], _term_points(chosen_trends, lists, t["term_id"]), axis, colours
            )
            for t in terms.to_dicts()
        ]

    return {
        "trend_lists": lists,
        "trend_venues": [
            {
                "venue": v,
                "colour": colours[v],
                "years": [lst["year"] for lst in lists if venue_label(lst["venue"]) == v],
            }
            for v in venues
        ],
        "compared_lists": [lst for lst in lists if lst["previous_year"] is not None],
        "topic_charts": topic_charts,
        "topic_table": [{**t, "cells": [_cell(level_one, t["topic_id"], lst) for lst in lists]} for t in top_topics],
        "emerging_charts": term_charts(emerging_ids, "emerging"),
        "emerging_terms": emerging.to_dicts(),
        "new_term_charts": term_charts(new_terms, "new"),
    }


def _cell(level_one: pl.DataFrame, topic_id: int, lst: dict) -> dict | None:
    rows = level_one.filter(
        pl.col("topic_id") == topic_id, pl.col("year") == lst["year"], pl.col("venue").eq_missing(lst["venue"])
    ).to_dicts()
    return rows[0] if rows else None
