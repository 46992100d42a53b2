"""The shipped dashboard: five static HTML pages built from the Parquet export of the marts.

It reads only ``data/marts/*.parquet`` (never the DuckDB file, so it holds no lock a run or a
reader needs), renders the Jinja templates in ``templates/`` and publishes the site atomically
(``publish_folder``). Charts are inline SVG: the pages need no script and no network.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from paperhouse.dashboard import trend_charts
from paperhouse.settings import DASHBOARD_TEMPLATES
from paperhouse.warehouse.publishing import publish_folder

PAGES = {
    "index.html": "Overview",
    "topics.html": "Topics",
    "terms.html": "Terms",
    "trends.html": "Trends",
    "quality.html": "Duplicates & data quality",
}
TOP_TERMS = 30
PAPERS_PER_TOPIC = 10


@dataclass(frozen=True)
class Site:
    folder: Path
    pages: list[str]
    figures: dict[str, int]  # the overview's headline numbers


def _mart(export: Path, name: str) -> pl.LazyFrame:
    return pl.scan_parquet(export / f"{name}.parquet")


def _rows(frame: pl.LazyFrame | pl.DataFrame) -> list[dict[str, Any]]:
    return (frame.collect() if isinstance(frame, pl.LazyFrame) else frame).to_dicts()


def page_data(export: Path) -> dict[str, Any]:
    """Everything the templates show, computed from the exported marts."""
    papers = _mart(export, "papers")
    quality = _mart(export, "quality_runs")
    runs = (
        quality.group_by("run_id")
        .agg(
            started=pl.col("evaluated_at").min(),
            checks=pl.len(),
            passed=pl.col("passed").sum(),
            failed=(~pl.col("passed") & (pl.col("severity") == "ERROR")).sum(),
            warned=(~pl.col("passed") & (pl.col("severity") == "WARN")).sum(),
        )
        .sort("started", descending=True)
        .collect()
    )
    last_run = runs.head(1)
    figures = {
        "papers": papers.select(pl.len()).collect().item(),
        "records": _mart(export, "paper_sources").select(pl.len()).collect().item(),
        "duplicates": _mart(export, "duplicate_groups").select(pl.len()).collect().item(),
        "rejected": _mart(export, "rejected_records").select(pl.len()).collect().item(),
        "terms": _mart(export, "terms").select(pl.len()).collect().item(),
        "topics": _mart(export, "topics").select(pl.len()).collect().item(),
        "checks_passed": int(last_run["passed"].sum()),
        "checks_failed": int(last_run["failed"].sum()),
    }
    topics = _mart(export, "topics").sort("topic_id")
    # The most typical papers of each topic (level 1) and subtopic (level 2): the largest shares.
    typical = pl.concat(
        [
            papers.join(
                _mart(export, table).filter("is_primary").select("paper_id", "topic_id", "weight"), on="paper_id"
            )
            for table in ("paper_topics", "paper_subtopics")
        ]
    )
    topic_papers = (
        typical.sort("topic_id", "weight", "paper_id", descending=[False, True, False])
        .group_by("topic_id", maintain_order=True)
        .head(PAPERS_PER_TOPIC)
        .select("topic_id", "display_name", "venue", "year")
        .collect()
    )
    topic_rows = [
        {**topic, "papers": topic_papers.filter(topic_id=topic["topic_id"]).to_dicts()} for topic in _rows(topics)
    ]
    return {
        "figures": figures,
        "venues": _rows(_mart(export, "venue_summary").sort(pl.col("papers"), "venue_label", descending=[True, False])),
        "topics": topic_rows,
        # Each topic (level 1) with its subtopics (level 2), the topics largest first.
        "topic_tree": [
            {**topic, "subtopics": [sub for sub in topic_rows if sub["parent_topic_id"] == topic["topic_id"]]}
            for topic in sorted(
                (t for t in topic_rows if t["level"] == 1), key=lambda t: (-t["n_papers"], t["topic_id"])
            )
        ],
        "topic_lists": _rows(
            _mart(export, "topic_summary").filter(level=1).sort("topic_id", "venue", "year", nulls_last=True)
        ),
        "top_terms": _rows(
            _mart(export, "terms")
            .sort("key_papers", "doc_freq", "term", descending=[True, True, False])
            .head(TOP_TERMS)
            .join(
                _mart(export, "term_summary").group_by("term_id").agg(pl.col("aliases").first()),
                on="term_id",
                how="left",
                maintain_order="left",
            )
        ),
        "acronyms": _rows(
            _mart(export, "term_aliases")
            .filter(alias_kind="acronym")
            .sort(pl.col("papers"), "alias", descending=[True, False])
        ),
        "rejections": _rows(
            _mart(export, "rejected_records")
            .group_by(reason=pl.col("reason").str.replace(r":.*", ""))
            .agg(records=pl.len())
            .sort(pl.col("records"), "reason", descending=[True, False])
        ),
        "merges": _rows(
            _mart(export, "duplicate_groups")
            .group_by("match_kind", "matched_by")
            .agg(records=pl.len())
            .sort(pl.col("records"), "match_kind", "matched_by", descending=[True, False, False])
        ),
        "runs": runs.to_dicts(),
        "failing_checks": _rows(
            quality.filter(~pl.col("passed"))
            .join(last_run.lazy().select("run_id"), on="run_id")
            .sort("severity", "asset", "check_name")
        ),
        **trend_charts.page_data(export),
    }


def build(export: Path, target: Path) -> Site:
    """Render every page from the Parquet export in ``export`` and publish the site at ``target``."""
    data = page_data(export)
    environment = Environment(
        loader=FileSystemLoader(DASHBOARD_TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )

    def write(folder: Path) -> None:
        for page, title in PAGES.items():
            template = environment.get_template(page.replace(".html", ".html.j2"))
            (folder / page).write_text(template.render(pages=PAGES, current=page, title=title, **data))
        shutil.copy(DASHBOARD_TEMPLATES / "style.css", folder / "style.css")

    publish_folder(target, write)
    return Site(folder=target, pages=list(PAGES), figures=data["figures"])
