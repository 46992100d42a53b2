"""The paper-id registry: a paper keeps the id it was first given, whatever happens to the folder."""

from datetime import UTC, datetime

import polars as pl
from corpus import seed_abstracts

from paperhouse.dedup import registry
from paperhouse.dedup.papers import assign_papers, paper_id_for, text_hash
from paperhouse.ingest.reading import AcceptanceRules, judge_records
from paperhouse.warehouse.database import connect

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ABSTRACTS = seed_abstracts()


def groups_frame(groups: list[list[str]]) -> pl.DataFrame:
    """Assignments as dedup makes them: one row per record, ``paper_id`` minted from the group's
    canonical (first) text, which identifies the group. Texts stand for normalised word sequences."""
    rows, record_no = [], 0
    for texts in groups:
        for position, text in enumerate(texts):
            record_no += 1
            rows.append(
                {
                    "source_file": "list.txt",
                    "record_no": record_no,
                    "paper_id": paper_id_for(texts[0]),
                    "match_kind": "canonical" if position == 0 else "near",
                    "text_hash": text_hash(text),
                }
            )
    return pl.DataFrame(rows)


class History:
    """Successive runs against one registry."""

    def __init__(self):
        self.table = pl.DataFrame(schema=registry.REGISTRY_SCHEMA)
        self.runs = 0

    def run(self, groups: list[list[str]]) -> tuple[dict[str, str], registry.Resolution]:
        """Resolve, register, and return each text's paper id."""
        self.runs += 1
        resolution = registry.resolve(groups_frame(groups), self.table, f"run-{self.runs}", NOW)
        self.table = pl.concat([self.table, resolution.new_entries])
        by_hash = dict(resolution.assignments.select("text_hash", "paper_id").iter_rows())
        return {text: by_hash[text_hash(text)] for texts in groups for text in texts}, resolution


def test_first_run_mints_ids_from_the_canonical_text_alone():
    ids, resolution = History().run([["alpha beta", "alpha beta gamma"], ["delta"]])
    assert ids["alpha beta"] == ids["alpha beta gamma"] == paper_id_for("alpha beta")
    assert ids["delta"] == paper_id_for("delta")
    assert (resolution.minted, resolution.kept) == (2, 0)
    assert resolution.new_entries.height == 3
    assert resolution.new_entries["generation"].unique().to_list() == [1]


def test_a_better_version_becomes_canonical_and_the_id_stays():
    history = History()
    first, _ = history.run([["short version"]])
    later, resolution = history.run([["short version with the missing sentence", "short version"]])
    assert later["short version with the missing sentence"] == first["short version"]
    assert paper_id_for("short version with the missing sentence") != first["short version"]
    assert (resolution.kept, resolution.minted) == (1, 0)
    # The new text is registered under the paper's existing id, in a new generation.
    assert resolution.new_entries.select("paper_id", "generation").rows() == [(first["short version"], 2)]


def test_unchanged_input_changes_nothing():
    history = History()
    groups = [["one", "one again"], ["two"]]
    first, _ = history.run(groups)
    again, resolution = history.run(groups)
    assert again == first
    assert resolution.new_entries.height == 0


def test_papers_that_leave_and_come_back_get_their_old_id():
    history = History()
    first, _ = history.run([["kept paper"], ["paper in a file that is removed"]])
    without, _ = history.run([["kept paper"]])
    assert without["kept paper"] == first["kept paper"]
    back, resolution = history.run([["kept paper"], ["paper in a file that is removed"]])
    assert back == first and resolution.new_entries.height == 0


def test_new_papers_never_change_existing_ids():
    history = History()
    first, _ = history.run([[f"paper {i}"] for i in range(20)])
    more, _ = history.run([[f"paper {i}"] for i in range(40)])
    assert {text: more[text] for text in first} == first
    assert len(set(more.values())) == 40


def _texts_with_ids_in_order(prefix: str) -> tuple[str, str]:
    """Two texts whose minted ids sort the other way round than the order they are added in."""
    for n in range(1000):
        older, younger = f"{prefix} first {n}", f"{prefix} second {n}"
        if paper_id_for(younger) < paper_id_for(older):
            return older, younger
    raise AssertionError("no such pair")


def test_a_merge_keeps_the_oldest_id():
    older, younger = _texts_with_ids_in_order("merge")
    history = History()
    history.run([[older]])
    before, _ = history.run([[older], [younger]])
    merged, resolution = history.run([["the full version bridging both", older, younger]])
    # The id first given (generation 1) wins, although the younger one sorts first.
    assert set(merged.values()) == {before[older]}
    assert resolution.merged == 1 and resolution.minted == 0
    # The younger id stays in the registry under its text: marts.paper_id_aliases resolves it.
    assert history.table.filter(pl.col("text_hash") == text_hash(younger))["paper_id"].to_list() == [before[younger]]


def test_a_split_gives_the_id_to_the_group_holding_the_text_it_was_minted_from():
    history = History()
    first, _ = history.run([["origin text", "copy one", "copy two"]])
    split, resolution = history.run([["copy one", "copy two"], ["origin text"]])
    assert split["origin text"] == first["origin text"]
    assert split["copy one"] == split["copy two"] != first["origin text"]
    assert split["copy one"] == paper_id_for("copy one")  # the loser mints its own
    assert resolution.contested == 1


def test_a_contested_id_without_its_origin_is_resolved_deterministically():
    history = History()
    history.run([["origin", "left", "right"]])
    groups = [["left"], ["right"]]
    outcomes = set()
    for seed in range(5):  # the order records arrive in does not matter
        shuffled = groups_frame(groups).sample(fraction=1.0, shuffle=True, seed=seed)
        resolution = registry.resolve(shuffled, history.table, "run-x", NOW)
        outcomes.add(tuple(sorted(resolution.assignments.select("text_hash", "paper_id").unique().rows())))
    assert len(outcomes) == 1
    ids = dict(next(iter(outcomes)))
    assert len(set(ids.values())) == 2 and paper_id_for("origin") in ids.values()


def test_a_minted_id_never_reuses_an_id_of_another_text():
    taken = paper_id_for("newcomer")
    table = pl.DataFrame(
        {
            "text_hash": [text_hash("someone else")],
            "paper_id": [taken],
            "generation": [1],
            "first_run_id": ["r"],
            "first_seen_at": [datetime(2026, 1, 1)],
        },
        schema=registry.REGISTRY_SCHEMA,
    )
    resolution = registry.resolve(groups_frame([["newcomer"]]), table, "run-2", NOW)
    minted = resolution.assignments["paper_id"][0]
    assert minted != taken and minted.startswith("p_") and len(minted) == 18


def test_registry_rows_are_only_ever_added(tmp_path):
    database = tmp_path / "build.duckdb"
    history = History()
    history.run([["a"], ["b"]])
    with connect(database) as con:
        registry.append(con, history.table)
        stored = registry.load(con)
        # An entry for a registered text with another id is ignored: existing rows never change.
        conflicting = history.table.head(1).with_columns(paper_id=pl.lit("p_0000000000000000"))
        registry.append(con, conflicting)
        assert registry.load(con).sort("text_hash").equals(stored.sort("text_hash"))
    assert stored.sort("text_hash").equals(history.table.sort("text_hash"))


def _records(named_texts: dict[str, str]) -> pl.DataFrame:
    frame = pl.DataFrame(
        {
            "source_file": list(named_texts),
            "record_no": [1] * len(named_texts),
            "file_sha256": [text_hash(name) for name in named_texts],
            "raw_text": list(named_texts.values()),
            "reject_reason": [None] * len(named_texts),
        },
        schema_overrides={"record_no": pl.Int32, "reject_reason": pl.String},
    )
    return judge_records(frame.lazy(), AcceptanceRules()).collect()


def test_with_real_dedup_a_revision_keeps_the_id_of_the_paper_it_revises():
    originals = {f"paper{i}.txt": text for i, text in enumerate(ABSTRACTS[:10])}
    empty = pl.DataFrame(schema=registry.REGISTRY_SCHEMA)
    first = registry.resolve(assign_papers(_records(originals)), empty, "r1", NOW)
    revised = {**originals, "revision.txt": ABSTRACTS[3] + " Code and data are available from the authors on request."}
    second = registry.resolve(assign_papers(_records(revised)), first.new_entries, "r2", NOW)

    ids = lambda resolution: dict(resolution.assignments.select("source_file", "paper_id").iter_rows())  # noqa: E731
    before, after = ids(first), ids(second)
    assert {name: after[name] for name in originals} == before  # no paper changed its id
    assert after["revision.txt"] == before["paper3.txt"]  # the revision joined its paper, under its id
    canonical = second.assignments.filter(pl.col("match_kind") == "canonical")
    assert "revision.txt" in canonical["source_file"].to_list()  # ... and is the text it now shows
    assert second.minted == 0 and second.new_entries.height == 1


def test_resolution_is_fast_enough_for_large_folders():
    import time

    history = History()
    history.run([[f"paper {i}", f"copy of paper {i}"] for i in range(20_000)])
    started = time.perf_counter()
    _, resolution = history.run([[f"paper {i}", f"copy of paper {i}"] for i in range(40_000)])
    assert time.perf_counter() - started < 10
    assert (resolution.kept, resolution.minted) == (20_000, 20_000)
