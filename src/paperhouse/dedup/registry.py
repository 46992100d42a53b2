"""The paper-id registry: once a paper has an id, it keeps it.

``raw.paper_id_registry`` holds one row per distinct record text ever accepted (``text_hash``:
SHA-256 of the normalised word sequence, the key exact duplicates share) with the ``paper_id``
its paper had when the text was first seen, the generation (a counter of runs that added
entries), the run and the time. Rows are only ever added, never changed or removed, and the
registry travels with every published warehouse, so a lost build database loses no id.

Each run, dedup groups the records into papers afresh; then each paper (group) is named:

1. **Kept id.** A group whose texts are registered takes the *oldest* id among them (lowest
   generation, then smallest id). Adding files, revising an abstract (a longer version may
   become the displayed, canonical text) or removing some copies does not change it, and a
   paper whose file comes back gets its old id back.
2. **Merges.** When two papers that had ids of their own become one, the older id wins; the
   other is kept resolvable in ``marts.paper_id_aliases``.
3. **Splits.** When two groups claim the same id, the group holding the text the id was
   minted from keeps it; failing that the group with more texts registered to it, then the
   one whose canonical text hash is smallest. The other group takes its next-oldest id, or
   a new one.
4. **New papers** mint ``p_`` + the first 16 hex digits of their canonical text hash, as
   ``paperhouse.dedup.papers`` always has: on a first run ids depend on the text alone. (Should that
   id already belong to another text, the hash of ``<text hash>#<n>`` is used instead.)

Every text not yet registered is then registered with its group's id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count

import duckdb
import polars as pl

from paperhouse.warehouse.database import RAW_SCHEMA, append_rows, table_exists

TABLE = "paper_id_registry"
REGISTRY_SCHEMA = {
    "text_hash": pl.String,
    "paper_id": pl.String,
    "generation": pl.Int64,
    "first_run_id": pl.String,
    "first_seen_at": pl.Datetime("us"),  # UTC
}


@dataclass(frozen=True)
class Resolution:
    assignments: pl.DataFrame  # the input with each group's final paper_id
    new_entries: pl.DataFrame  # REGISTRY_SCHEMA rows to add
    papers: int
    kept: int  # papers named by a registered id
    minted: int  # papers with a new id
    merged: int  # papers whose texts were registered under more than one id
    contested: int  # papers that lost an id to another group holding the same one


def load(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    if not table_exists(con, RAW_SCHEMA, TABLE):
        return pl.DataFrame(schema=REGISTRY_SCHEMA)
    frame = con.execute(f"select * from {RAW_SCHEMA}.{TABLE}").pl()
    return frame.select([pl.col(name).cast(dtype) for name, dtype in REGISTRY_SCHEMA.items()])


def append(con: duckdb.DuckDBPyConnection, entries: pl.DataFrame) -> None:
    """Add entries (inside the caller's transaction); existing rows are never touched."""
    append_rows(con, TABLE, entries, key=("text_hash",))


def minted_id(text_hash: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A new paper's id from its canonical text's hash: ``p_`` + its first 16 hex digits, or, while
    that is ``taken``, of the hash of ``<text hash>#<n>``."""
    return next(candidate for candidate in id_candidates(text_hash) if candidate not in taken)


def id_candidates(text_hash: str) -> Iterator[str]:
    """The ids a new paper may mint, in the order they are tried (``minted_id``)."""
    yield "p_" + text_hash[:16]
    for n in count(1):
        yield "p_" + hashlib.sha256(f"{text_hash}#{n}".encode()).hexdigest()[:16]


CLAIM_ORDER = (["generation", "paper_id", "has_origin", "n_texts", "canonical_hash"], [False, False, True, True, False])


def name_claimants(claims: pl.DataFrame) -> dict[str, str]:
    """Each group that gets a registered id, and the id: oldest ids first (``claims`` sorted by
    ``CLAIM_ORDER``), each to its best claimant (``group``) that has no id yet."""
    named: dict[str, str] = {}
    current, given = None, False
    for group, paper_id in claims.select("group", "paper_id").iter_rows():
        if paper_id != current:
            current, given = paper_id, False
        if not given and group not in named:
            named[group] = paper_id
            given = True
    return named


def resolve(assignments: pl.DataFrame, registry: pl.DataFrame, run_id: str | None, now: datetime) -> Resolution:
    """Name the papers of ``assignments`` (one row per record: ``paper_id`` as dedup minted it,
    which identifies the group, ``text_hash``, ``match_kind``) from the registry."""
    groups = (
        assignments.group_by("paper_id")
        .agg(canonical_hash=pl.col("text_hash").filter(pl.col("match_kind") == "canonical").first())
        .rename({"paper_id": "group"})
        .sort("group")
    )
    texts = assignments.select(group="paper_id", text_hash="text_hash").unique()
    id_age = registry.group_by("paper_id").agg(pl.col("generation").min())
    claims = (
        texts.join(registry.select("text_hash", "paper_id"), on="text_hash")
        .with_columns(is_origin=pl.col("text_hash").str.slice(0, 16) == pl.col("paper_id").str.slice(2))
        .group_by("group", "paper_id")
        .agg(n_texts=pl.len(), has_origin=pl.col("is_origin").any())
        .join(id_age, on="paper_id")
        .join(groups, on="group")
        .sort(CLAIM_ORDER[0], descending=CLAIM_ORDER[1])
    )
    named = name_claimants(claims)
    taken = set(registry["paper_id"].to_list()) | set(named.values())
    minted = 0
    for group, canonical_hash in groups.select("group", "canonical_hash").iter_rows():
        if group not in named:
            named[group] = minted_id(canonical_hash, taken)
            taken.add(named[group])
            minted += 1

    naming = naming_frame(named)
    resolved = (
        assignments.join(naming, left_on="paper_id", right_on="group", how="left", maintain_order="left")
        .with_columns(paper_id="final_id")
        .drop("final_id")
    )
    unregistered = (
        resolved.select("text_hash", "paper_id")
        .unique("text_hash")
        .join(registry.select("text_hash"), on="text_hash", how="anti")
    )
    new_entries = registry_entries(unregistered, next_generation(registry), run_id, now)
    by_group = claims.group_by("group", maintain_order=True).agg(oldest=pl.col("paper_id").first(), ids=pl.len())
    contested = sum(1 for group, oldest in by_group.select("group", "oldest").iter_rows() if named[group] != oldest)
    return Resolution(
        assignments=resolved,
        new_entries=new_entries,
        papers=groups.height,
        kept=groups.height - minted,
        minted=minted,
        merged=by_group.filter(pl.col("ids") > 1).height,
        contested=contested,
    )


def naming_frame(named: dict[str, str]) -> pl.DataFrame:
    """``group`` (dedup's id of a paper) and the ``final_id`` it is named by."""
    return pl.DataFrame(
        {"group": list(named), "final_id": list(named.values())}, schema={"group": pl.String, "final_id": pl.String}
    )


def next_generation(registry: pl.DataFrame) -> int:
    return int(registry["generation"].max() or 0) + 1


def registry_entries(unregistered: pl.DataFrame, generation: int, run_id: str | None, now: datetime) -> pl.DataFrame:
    """``REGISTRY_SCHEMA`` rows for the ``text_hash``, ``paper_id`` pairs first seen in this run."""
    return (
        unregistered.sort("text_hash")
        .with_columns(
            generation=pl.lit(generation, pl.Int64),
            first_run_id=pl.lit(run_id, pl.String),
            first_seen_at=pl.lit(_utc(now), pl.Datetime("us")),
        )
        .select([pl.col(name).cast(dtype) for name, dtype in REGISTRY_SCHEMA.items()])
    )


def _utc(moment: datetime) -> datetime:
    """A naive UTC timestamp: plain TIMESTAMP columns read the same in every client and time zone."""
    return moment.astimezone(UTC).replace(tzinfo=None)
