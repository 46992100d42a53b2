"""Structured inputs beside text lists: CSV, TSV, JSON lines and JSON arrays, their columns, venue
and year, keywords, decisions from a companion table, bad rows and quarantined files, incremental
parsing, and the real exports of ../shared/realdata/raw read in place."""

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from corpus import SEEDS, seed_abstracts

from paperhouse.dedup.papers import assign_papers
from paperhouse.evaluation import real_data
from paperhouse.ingest import parse_cache
from paperhouse.ingest.input_files import name_venue_year
from paperhouse.ingest.normalize import normalized_text
from paperhouse.ingest.parse_cache import read_records
from paperhouse.warehouse.database import connect

ABSTRACTS = seed_abstracts()
RAW = real_data.realdata_dir() / "raw"


def write_json_lines(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def records(folder: Path) -> pl.DataFrame:
    return read_records(folder)


def by_row(frame: pl.DataFrame, source_file: str) -> dict[int, dict]:
    rows = frame.filter(pl.col("source_file") == source_file).iter_rows(named=True)
    return {row["record_no"]: row for row in rows}


@pytest.mark.parametrize(
    ("name", "venue", "year"),
    [
        ("neurips_2022.csv", "NeurIPS", 2022),
        ("ICLR2021_papers.tsv", "ICLR", 2021),
        ("NeurIPS2022_papers.csv", "NeurIPS", 2022),
        ("evanzd_ICLR2021_paperlist.tsv", "ICLR", 2021),
        ("acme-workshop-2019.json", "acme workshop", 2019),
        ("papers.csv", None, None),  # no year, no list: a name like any export's
        ("inspec_valid.jsonl", None, None),
    ],
)
def test_a_file_name_gives_venue_and_year(name, venue, year):
    assert name_venue_year(name) == (venue, year)


def test_columns_are_recognised_by_their_usual_names_in_any_case(tmp_path):
    pl.DataFrame(
        {
            "Paper_ID": ["a1"],
            "TITLE": ["A Title"],
            "Abstract": [ABSTRACTS[0]],
            "Keyword": ["x; y"],
            "URL": ["https://example.org/a1"],
            "Authors": ["Ada Lovelace, Alan Turing"],
            "Decision": ["Accept"],
            "Year": ["2024"],
            "Venue": ["ICML"],
            "pages": ["1-9"],
        }
    ).write_csv(tmp_path / "export.csv")
    row = records(tmp_path).row(0, named=True)
    expected = {
        "source_file": "export.csv",
        "record_no": 1,
        "external_id": "a1",
        "title": "A Title",
        "keywords": ["x", "y"],
        "link": "https://example.org/a1",
        "authors": "Ada Lovelace; Alan Turing",
        "decision": "Accept",
        "year": 2024,
        "venue": "ICML",
        "reject_reason": None,
        "text": ABSTRACTS[0],
        "header": None,
        "encoding": "utf-8",
    }
    assert {name: row[name] for name in expected} == expected


def test_every_format_reads_the_same_records(tmp_path):
    papers = [
        {"id": f"p{i}", "title": f"Paper {i}", "abstract": ABSTRACTS[i], "keywords": ["graph", "attention"]}
        for i in range(3)
    ]
    as_text = [paper | {"keywords": "graph, attention"} for paper in papers]
    pl.DataFrame(as_text).write_csv(tmp_path / "icml_2024.csv")
    pl.DataFrame(as_text).write_csv(tmp_path / "icml_2024_b.tsv", separator="\t")
    write_json_lines(tmp_path / "icml_2024_c.jsonl", papers)
    (tmp_path / "icml_2024_d.json").write_text(json.dumps(papers), encoding="utf-8")
    rows = records(tmp_path)
    columns = ["record_no", "external_id", "title", "keywords", "text", "venue", "year"]
    frames = [frame.select(columns) for _, frame in rows.group_by("source_file", maintain_order=True)]
    assert len(frames) == 4 and all(frame.equals(frames[0]) for frame in frames)
    assert frames[0]["venue"].to_list() == ["ICML"] * 3 and frames[0]["keywords"][0].to_list() == ["graph", "attention"]


def test_keywords_read_from_delimited_text_list_text_or_a_list(tmp_path):
    rows = [
        {"abstract": ABSTRACTS[0], "keywords": "GAN; image synthesis;  few-shot "},
        {"abstract": ABSTRACTS[1], "keywords": "GAN, image synthesis"},
        {"abstract": ABSTRACTS[2], "keywords": "['GAN', 'fairness, accountability']"},
        {"abstract": ABSTRACTS[3], "keywords": '["GAN", "VAE"]'},
        {"abstract": ABSTRACTS[4], "keywords": ["GAN", "gan", "R&amp;D", "<i>diffusion</i>", ""]},
        {"abstract": ABSTRACTS[5], "keywords": None},
        {"abstract": ABSTRACTS[6], "keywords": ""},
    ]
    write_json_lines(tmp_path / "list.jsonl", rows)
    keywords = records(tmp_path).sort("record_no")["keywords"].to_list()
    assert keywords == [
        ["GAN", "image synthesis", "few-shot"],
        ["GAN", "image synthesis"],
        ["GAN", "fairness, accountability"],
        ["GAN", "VAE"],
        ["GAN", "R&D", "diffusion"],  # each once, repaired as abstracts are
        None,
        None,
    ]


def test_venue_and_year_come_from_columns_then_the_file_name_then_the_sidecar(tmp_path):
    pl.DataFrame(
        {
            "abstract": ABSTRACTS[:3],
            "venue": ["ICML", None, ""],
            "year": ["2023", "", "in 2020"],
        }
    ).write_csv(tmp_path / "neurips_2022.csv")
    pl.DataFrame({"abstract": ABSTRACTS[3:5], "year": [None, "2019"]}).write_csv(tmp_path / "papers.csv")
    (tmp_path / "papers.csv.yml").write_text("venue: CoRL\nyear: 2021\n")
    rows = records(tmp_path)
    named = by_row(rows, "neurips_2022.csv")
    assert [(named[i]["venue"], named[i]["year"]) for i in (1, 2, 3)] == [
        ("ICML", 2023),
        ("NeurIPS", 2022),
        ("NeurIPS", 2020),
    ]
    sidecar = by_row(rows, "papers.csv")
    assert [(sidecar[i]["venue"], sidecar[i]["year"]) for i in (1, 2)] == [("CoRL", 2021), ("CoRL", 2019)]


def test_a_sidecar_maps_other_column_names(tmp_path):
    pl.DataFrame(
        {
            "heading": ["Mapped"],
            "summary": [ABSTRACTS[0]],
            "abstract": ["not the abstract"],
            "tags": ["a;b"],
            "forum": ["f1"],
        }
    ).write_csv(tmp_path / "scrape.csv")
    (tmp_path / "scrape.csv.yml").write_text(
        "venue: ICLR\nyear: 2024\ncolumns:\n  summary: abstract\n  heading: title\n  Tags: keywords\n  forum: id\n"
    )
    row = records(tmp_path).row(0, named=True)
    assert (row["title"], row["text"], row["keywords"], row["external_id"]) == (
        "Mapped",
        ABSTRACTS[0],
        ["a", "b"],
        "f1",
    )
    assert (row["venue"], row["year"]) == ("ICLR", 2024)


def test_bad_rows_are_rejected_with_their_reason_and_the_rest_kept(tmp_path):
    csv = (
        "paper_id,title,abstract\n"
        f'good,Good,"{ABSTRACTS[0]}"\n'
        "empty,No abstract here,\n"
        "\n"  # a blank line is no row
        "short,Short,Too short to be an abstract.\n"
        f'binary,Binary,"{ABSTRACTS[1][:50]}\x00\x00{ABSTRACTS[1][50:]}"\n'
        f'extra,Extra,"{ABSTRACTS[2]}",stray field\n'
        f'last,Last,"{ABSTRACTS[3]}"\n'
    )
    (tmp_path / "rows.csv").write_text(csv, encoding="utf-8")
    lines = [
        json.dumps({"abstract": ABSTRACTS[4]}),
        '{"abstract": "unterminated',
        json.dumps(["a", "list"]),
        "",
        json.dumps({"title": "no abstract key"}),
        json.dumps({"abstract": ABSTRACTS[5]}),
    ]
    (tmp_path / "rows.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = records(tmp_path)
    csv_rows = by_row(rows, "rows.csv")
    reasons = {csv_rows[n]["external_id"]: (csv_rows[n]["reject_reason"] or "").split(":")[0] for n in csv_rows}
    assert reasons == {
        "good": "",
        "empty": "no abstract",
        "short": "too short for an abstract",
        "binary": "binary data",
        "extra": "unparsable row",
        "last": "",
    }
    assert [csv_rows[n]["external_id"] for n in sorted(csv_rows)] == [
        "good",
        "empty",
        "short",
        "binary",
        "extra",
        "last",
    ]
    assert csv_rows[2]["excerpt"] == "No abstract here"  # a row without text shows its title
    json_rows = by_row(rows, "rows.jsonl")
    assert {n: (row["reject_reason"] or "").split(":")[0] for n, row in json_rows.items()} == {
        1: "",
        2: "unparsable row",
        3: "unparsable row",
        4: "no abstract",
        5: "",
    }
    assert json_rows[3]["reject_reason"] == "unparsable row: a list, not an object"


def test_files_that_cannot_be_read_as_tables_are_quarantined_whole(tmp_path):
    (tmp_path / "broken.json").write_text('[{"abstract": "a"}, {"abstract": ', encoding="utf-8")
    (tmp_path / "object.json").write_text('{"papers": []}', encoding="utf-8")
    (tmp_path / "garbage.jsonl").write_text("not json\nnor this\n", encoding="utf-8")
    pl.DataFrame({"paper_id": ["a"], "title": ["T"]}).write_csv(tmp_path / "titles.csv")
    (tmp_path / "header_only.tsv").write_text("paper_id\ttitle\tabstract\n", encoding="utf-8")
    (tmp_path / "empty.csv").write_bytes(b"")
    # Its one row has a field more than the header that no anchor can place: no row can be read.
    (tmp_path / "no_row.csv").write_text('paper_id,abstract\n1,"a, b",stray\n', encoding="utf-8")
    pl.DataFrame({"abstract": [ABSTRACTS[0]]}).write_csv(tmp_path / "bad_yaml.csv")
    (tmp_path / "bad_yaml.csv.yml").write_text("venue: [unclosed\n")
    pl.DataFrame({"abstract": [ABSTRACTS[1]]}).write_csv(tmp_path / "bad_field.csv")
    (tmp_path / "bad_field.csv.yml").write_text("columns:\n  abstract: summary\n")
    pl.DataFrame({"abstract": [ABSTRACTS[2]]}).write_csv(tmp_path / "bad_key.csv")
    (tmp_path / "bad_key.csv.yml").write_text("venue: ICLR\nlanguage: en\n")
    # A ratings file with no list named like it is no companion: a table without abstracts.
    pl.DataFrame({"paper_id": ["a"], "decision": ["Accept"]}).write_csv(tmp_path / "ICML2020_ratings.csv")
    rows = records(tmp_path)
    assert rows["record_no"].null_count() == rows.height  # nothing but whole-file rows
    reasons = dict(rows.select("source_file", "reject_reason").iter_rows())
    assert reasons["broken.json"].startswith("unparsable file: JSON: ")
    assert reasons["object.json"] == "unparsable file: JSON holds an object, not an array of objects"
    assert reasons["garbage.jsonl"].startswith("unparsable file: no row holds a JSON object")
    assert reasons["titles.csv"] == "no abstract column (columns: paper_id, title)"
    assert reasons["header_only.tsv"] == "header only, no rows"
    assert reasons["empty.csv"] == "empty file"
    assert reasons["no_row.csv"].startswith("unparsable file: CSV: no row could be read")
    assert reasons["bad_yaml.csv"].startswith("sidecar bad_yaml.csv.yml: not YAML")
    assert reasons["bad_field.csv"].startswith("sidecar bad_field.csv.yml: column 'abstract' maps to 'summary'")
    assert reasons["bad_key.csv"] == "sidecar bad_key.csv.yml: unknown settings language (known: venue, year, columns)"
    assert reasons["ICML2020_ratings.csv"] == "no abstract column (columns: paper_id, decision)"


def test_a_quote_never_closed_costs_its_row_only(tmp_path):
    """Once it quarantined the whole file: a stray quote is text, and the rows after it are rows."""
    (tmp_path / "unclosed.csv").write_text(
        f'id,abstract\n1,"never closed\n2,{ABSTRACTS[1]}\n3,"{ABSTRACTS[2]}"\n', encoding="utf-8"
    )
    rows = records(tmp_path).sort("record_no")
    assert rows["record_no"].to_list() == [1, 2, 3]
    assert rows["reject_reason"][0] is not None  # '"never closed' is no abstract
    assert rows["reject_reason"][1:].to_list() == [None, None]


def test_a_realigned_row_is_kept_and_counted_as_repaired(tmp_path):
    """A title with an unquoted comma gives its row a field more than the header: the row is read
    with its fields found again and says so in ``repairs`` (the run's "records repaired")."""
    title = "Stay Positive, Not Negative: Contrastive Learning Revisited"
    (tmp_path / "export.csv").write_text(
        "paper_id,title,link,keywords,abstract\n"
        f'a1,Clean Title,https://openreview.net/forum?id=a1,"x, y","{ABSTRACTS[0]}"\n'
        f'b2,{title},https://openreview.net/forum?id=b2,"graphs, learning","{ABSTRACTS[1]}"\n',
        encoding="utf-8",
    )
    rows = {row["record_no"]: row for row in records(tmp_path).iter_rows(named=True)}
    assert rows[1]["repairs"] is None and rows[1]["reject_reason"] is None
    assert rows[2]["reject_reason"] is None
    assert rows[2]["title"] == title and rows[2]["external_id"] == "b2"
    assert "realigned_fields" in rows[2]["repairs"].split(",")


def test_a_ratings_file_beside_its_list_gives_each_paper_its_decision(tmp_path):
    pl.DataFrame(
        {
            "paper_id": ["a", "b", "c"],
            "title": ["A", "B", "C"],
            "abstract": ABSTRACTS[:3],
            "decision": [None, None, "Accept (oral)"],
        }
    ).write_csv(tmp_path / "NeurIPS2022_papers.csv")
    pl.DataFrame(
        {
            "paper_id": ["b", "a", "c", "z"],
            "0": ["5.0", "7.0", "8.0", "1.0"],
            "decision": ["Reject", "Accept", "Accept", "Reject"],
        }
    ).write_csv(tmp_path / "NeurIPS2022_ratings.csv")
    with connect(None) as con:
        intake = parse_cache.ingest(con, tmp_path)
        rows = parse_cache.source_records(con)
    statuses = dict(intake.folder.files.select("source_file", "status").iter_rows())
    assert statuses == {"NeurIPS2022_papers.csv": "parsed", "NeurIPS2022_ratings.csv": "companion"}
    assert set(rows["source_file"]) == {"NeurIPS2022_papers.csv"}  # the companion has no rows of its own
    decisions = dict(rows.select("external_id", "decision").iter_rows())
    assert decisions == {"a": "Accept", "b": "Reject", "c": "Accept (oral)"}  # the list's own column wins


def test_structured_files_are_parsed_again_only_when_they_or_what_they_depend_on_change(tmp_path, monkeypatch):
    import paperhouse.ingest.reading as ingest_module

    folder = tmp_path / "seeds"
    folder.mkdir()
    shutil.copy(sorted(SEEDS.glob("*.txt"))[0], folder)
    pl.DataFrame({"paper_id": ["a", "b"], "abstract": ABSTRACTS[10:12]}).write_csv(folder / "NeurIPS2022_papers.csv")
    pl.DataFrame({"paper_id": ["a", "b"], "decision": ["Accept", "Reject"]}).write_csv(
        folder / "NeurIPS2022_ratings.csv"
    )
    pl.DataFrame({"abstract": ABSTRACTS[12:14]}).write_csv(folder / "export.csv")
    database = tmp_path / "build.duckdb"
    real_decode = ingest_module.decode_content

    def ingest() -> tuple[dict, pl.DataFrame]:
        parsed.clear()
        with connect(database) as con:
            intake = parse_cache.ingest(con, folder, run_id="test")
            return dict(intake.folder.files.select("source_file", "status").iter_rows()), parse_cache.source_records(
                con
            )

    parsed: list[str] = []
    monkeypatch.setattr(
        ingest_module, "decode_content", lambda data, digest: parsed.append(digest) or real_decode(data, digest)
    )
    first_statuses, first = ingest()
    assert len(parsed) == 3 and first_statuses["NeurIPS2022_ratings.csv"] == "companion"
    statuses, again = ingest()
    assert parsed == [] and again.equals(first)
    assert sorted(statuses.values()) == ["companion", "reused", "reused", "reused"]

    (folder / "export.csv.yml").write_text("venue: Workshop\nyear: 2020\n")  # a new sidecar: its list only
    statuses, rows = ingest()
    assert [name for name, status in statuses.items() if status == "parsed"] == ["export.csv"]
    assert set(rows.filter(pl.col("source_file") == "export.csv")["venue"]) == {"Workshop"}

    pl.DataFrame({"paper_id": ["a", "b"], "decision": ["Accept", "Accept"]}).write_csv(
        folder / "NeurIPS2022_ratings.csv"
    )
    statuses, rows = ingest()  # new decisions: the list they decide is parsed again
    assert [name for name, status in statuses.items() if status == "parsed"] == ["NeurIPS2022_papers.csv"]
    assert set(rows.filter(pl.col("source_file") == "NeurIPS2022_papers.csv")["decision"]) == {"Accept"}

    (folder / "export.csv.yml").unlink()  # the sidecar gone: its list is parsed again
    statuses, rows = ingest()
    assert [name for name, status in statuses.items() if status == "parsed"] == ["export.csv"]
    (folder / "export.csv").rename(folder / "renamed.csv")  # the name gives no venue: nothing to parse
    statuses, rows = ingest()
    assert parsed == [] and statuses["renamed.csv"] == "reused"
    (folder / "renamed.csv").rename(folder / "icml_2019.csv")  # now the name gives venue and year
    statuses, rows = ingest()
    assert [name for name, status in statuses.items() if status == "parsed"] == ["icml_2019.csv"]
    assert set(rows.filter(pl.col("source_file") == "icml_2019.csv")["venue"]) == {"ICML"}


def test_titles_and_abstracts_are_repaired_as_text_lists_are(tmp_path):
    pl.DataFrame(
        {
            "title": ["Robust &amp; Fast: <i>Sparse</i>\x07 Attention"],
            "abstract": [ABSTRACTS[0].replace(" ", " &amp; ", 1) + " <br/>More."],
        }
    ).write_csv(tmp_path / "scrape.csv")
    row = records(tmp_path).row(0, named=True)
    assert row["title"] == "Robust & Fast: Sparse Attention"
    assert "&amp;" not in row["text"] and "<br/>" not in row["text"]
    assert row["repairs"] == "html_entities,markup"


def test_the_same_paper_in_a_text_list_and_an_export_merges_and_a_shared_title_alone_merges_nothing():
    folder_rows = pl.DataFrame(
        {
            "source_file": ["list.txt", "export.csv", "export.csv", "export.csv"],
            "record_no": [1, 1, 2, 3],
            "file_sha256": ["a" * 64, "b" * 64, "b" * 64, "b" * 64],
            # the export's copy is the list's paragraph hard-wrapped; rows 2 and 3 share a title, not a text
            "text": [ABSTRACTS[0], ABSTRACTS[0].replace(". ", ".\n", 2), ABSTRACTS[1], ABSTRACTS[2]],
        }
    )
    assigned = assign_papers(folder_rows.with_columns(normalized_text=normalized_text(pl.col("text"))).drop("text"))
    papers = dict(assigned.select(pl.concat_str("source_file", "record_no", separator=":"), "paper_id").iter_rows())
    assert papers["list.txt:1"] == papers["export.csv:1"]
    assert papers["export.csv:2"] != papers["export.csv:3"]


def test_the_real_exports_read_whole_in_place():
    assert RAW.is_dir(), f"the real exports are missing at {RAW}"
    with connect(None) as con:
        intake = parse_cache.ingest(con, RAW)
        rows = parse_cache.source_records(con)
    statuses = dict(intake.folder.files.select("source_file", "status").iter_rows())
    assert statuses["NeurIPS2022_ratings.csv"] == "companion"
    per_file = {name: frame for (name,), frame in rows.group_by("source_file")}
    neurips, iclr, inspec = (
        per_file[name] for name in ("NeurIPS2022_papers.csv", "evanzd_ICLR2021_paperlist.tsv", "inspec_valid.jsonl")
    )
    assert (neurips.height, iclr.height, inspec.height) == (2795, 2966, 1500)
    assert neurips["reject_reason"].null_count() == neurips.height and iclr["reject_reason"].null_count() == iclr.height
    # Inspec's abstracts under 100 characters are rejected, as its text list leaves them out (1,487 kept).
    assert inspec["reject_reason"].is_not_null().sum() == 13
    assert set(inspec["reject_reason"].drop_nulls().str.replace(":.*", "")) == {"too short for an abstract"}
    assert neurips["decision"].value_counts().sort("decision").rows() == [
        ("Accept", 2640),
        ("Reject", 153),
        ("Unknown", 2),
    ]
    assert set(zip(neurips["venue"], neurips["year"], strict=True)) == {("NeurIPS", 2022)}
    assert set(zip(iclr["venue"], iclr["year"], strict=True)) == {("ICLR", 2021)}
    assert set(zip(inspec["venue"], inspec["year"], strict=True)) == {(None, None)}  # its name names no list
    for frame in (neurips, iclr, inspec):
        assert frame["title"].null_count() == 0
    assert neurips["external_id"].n_unique() == 2795 and iclr["link"].str.starts_with("https://openreview.net/").all()
    assert inspec["keywords"].null_count() == 0 and neurips["keywords"].list.len().sum() > 10_000
    # A title that starts with a quote is no quoted field in the TSV.
    assert iclr.filter(pl.col("title").str.starts_with('"Hey, that')).height == 1


def query(warehouse: Path, sql: str) -> list[tuple]:
    with connect(warehouse, read_only=True) as con:
        return con.execute(sql).fetchall()


def _text_list_head(path: Path, n: int) -> str:
    header, *paragraphs = path.read_text(encoding="utf-8").split("\n\n")
    return "\n\n".join([header, *paragraphs[:n]]) + "\n"


@pytest.mark.slow
def test_a_folder_mixing_text_lists_and_exports_builds_in_one_run(tmp_path):
    """The bundled seeds, the heads of the real conference lists and of the real exports (the same
    papers), the NeurIPS ratings read in place, some of those papers again as JSON lines, and two
    different papers sharing a title: one Dagster run."""

    from orchestration.runner import run_all
    from paperhouse.settings import resolve_paths

    n = 120
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for path in SEEDS.glob("*.txt"):
        shutil.copy(path, seeds)
    conferences = real_data.realdata_dir() / "conferences" / "inputs"
    for name in ("iclr_2021.txt", "neurips_2022.txt"):
        (seeds / name).write_text(_text_list_head(conferences / name, n), encoding="utf-8")
    neurips = pl.read_csv(RAW / "NeurIPS2022_papers.csv", infer_schema=False)
    iclr = pl.read_csv(RAW / "evanzd_ICLR2021_paperlist.tsv", separator="\t", quote_char=None, infer_schema=False)
    neurips.head(n).write_csv(seeds / "NeurIPS2022_papers.csv")
    iclr.head(n).write_csv(seeds / "ICLR2021_papers.tsv", separator="\t")
    (seeds / "NeurIPS2022_ratings.csv").symlink_to(RAW / "NeurIPS2022_ratings.csv")  # read in place
    inspec = (RAW / "inspec_valid.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:450]
    (seeds / "inspec_valid.jsonl").write_text("".join(inspec), encoding="utf-8")
    long_enough = sum(len(" ".join(json.loads(line)["abstract"].split())) >= 100 for line in inspec)
    write_json_lines(seeds / "neurips_2022_extra.jsonl", neurips.slice(0, 5).to_dicts())  # a third copy of five papers
    shared = iclr.slice(1000, 2).with_columns(title=pl.lit("A Title Two Papers Share"))
    shared.write_csv(seeds / "workshop_2020.csv")

    paths = resolve_paths(seeds, tmp_path / "out" / "warehouse.duckdb")
    outcome = run_all(paths)
    assert outcome.success, outcome.reason
    assert outcome.checks_failed == []
    assert outcome.ingest["files_companion"] == 1
    w = paths.warehouse

    # Counts per list and per year: each real paper once, from a text list and an export.
    lists = {
        (venue, year): (papers, records, duplicates)
        for venue, year, papers, records, duplicates in query(
            w, "select venue, year, papers, records, duplicates from marts.venue_summary"
        )
    }
    inspec_kept = query(w, "select count(*) from marts.paper_sources where source_file = 'inspec_valid.jsonl'")[0][0]
    assert lists == {
        ("ICLR", 2026): (76, 76, 0),
        ("ICLR", 2021): (n, 2 * n, n),
        ("NeurIPS", 2022): (n, 2 * n + 5, n + 5),
        ("workshop", 2020): (2, 2, 0),
        (None, None): (inspec_kept, inspec_kept, 0),
    }
    assert inspec_kept == long_enough < len(inspec)  # its abstracts under 100 characters rejected, as too short
    years = dict(query(w, "select year, count(*) from marts.papers group by year"))
    assert years == {2026: 76, 2021: n, 2022: n, 2020: 2, None: inspec_kept}

    # Titles where exports gave them, as the real lists' labels name the text lists' papers.
    labels = pl.read_ndjson(real_data.realdata_dir() / "conferences" / "labels.jsonl").filter(pl.col("record_no") <= n)
    titled = pl.DataFrame(
        query(
            w,
            """
        select s.source_file, s.record_no, p.title, p.display_name
        from marts.paper_sources s join marts.papers p using (paper_id)
        where s.source_file in ('iclr_2021.txt', 'neurips_2022.txt')""",
        ),
        schema=["file", "record_no", "title", "display_name"],
        orient="row",
    )
    joined = titled.join(labels.select("file", "record_no", label="title"), on=["file", "record_no"])
    assert joined.height == 2 * n
    assert (joined["title"] == joined["label"]).all() and (joined["display_name"] == joined["title"]).all()
    assert query(w, "select count(*) from marts.papers where venue = 'ICLR' and year = 2026 and title is not null") == [
        (0,)
    ]

    # Decisions from the ratings file, by the export's paper id.
    ratings = dict(
        pl.read_csv(RAW / "NeurIPS2022_ratings.csv", infer_schema=False).select("paper_id", "decision").iter_rows()
    )
    decided = query(
        w,
        """
        select s.external_id, p.decision from marts.paper_sources s join marts.papers p using (paper_id)
        where s.source_file = 'NeurIPS2022_papers.csv'""",
    )
    assert len(decided) == n and all(decision == ratings[paper] for paper, decision in decided)

    # The cross-format merge, with its evidence; a shared title alone merges nothing.
    merges = dict(
        query(
            w,
            """
        select list_sort([source_file, canonical_source_file])::varchar, count(*) from marts.duplicate_groups
        where match_kind = 'exact' group by 1""",
        )
    )
    assert sum(merges.values()) == 2 * n + 5
    assert merges.get("[ICLR2021_papers.tsv, iclr_2021.txt]") == n
    # Titles as evidence beside the texts: the five papers with a third, titled copy show their titles agree.
    titles = dict(
        query(
            w,
            """
        select coalesce(same_title::varchar, 'null'), count(*) from marts.duplicate_groups
        where paper_id in (select paper_id from marts.paper_sources where source_file = 'neurips_2022_extra.jsonl')
        group by 1""",
        )
    )
    # Each of the two merged copies agrees with a title, or is the text list's, which has none.
    assert set(titles) <= {"true", "null"} and titles["true"] >= 5 and sum(titles.values()) == 10
    assert query(
        w, "select count(distinct paper_id) from marts.paper_sources where source_file = 'workshop_2020.csv'"
    ) == [(2,)]
    # Author keywords land per record, and papers keep the keywords of each of their exports.
    first = neurips.row(0, named=True)
    keywords = query(
        w,
        """
        select keyword from marts.paper_keywords where source_file = 'NeurIPS2022_papers.csv' and record_no = 1
        order by keyword_no""",
    )
    assert [k for (k,) in keywords] == [k.strip() for k in first["keywords"].split(",")]

    # Trends over the mixed folder: a venue-year per list with a year (ICLR 2021 compared with ICLR
    # 2026, its venue's other list), topic shares summing to 1 per list and level, and each term's
    # share its papers over the list's papers, exports and text lists counted once per paper.
    topic_sums = query(
        w,
        """
        select venue, year, level, round(sum(share_of_list), 9), sum(papers), any_value(list_papers)
        from marts.topic_trends group by all order by all""",
    )
    assert {(venue, year) for venue, year, *_ in topic_sums} == {
        ("ICLR", 2021),
        ("ICLR", 2026),
        ("NeurIPS", 2022),
        ("workshop", 2020),
    }
    assert all(total == 1 and papers == list_papers for *_, total, papers, list_papers in topic_sums)
    assert query(w, "select distinct previous_year from marts.topic_trends where venue = 'ICLR' and year = 2026") == [
        (2021,)
    ]
    term_rows = query(
        w,
        """
        select count(*), count(*) filter (where abs(share_of_list - papers / list_papers) > 1e-9),
               count(*) filter (where papers > list_papers)
        from marts.term_trends""",
    )
    assert term_rows[0][0] > 0 and term_rows[0][1:] == (0, 0)
    counted = query(
        w,
        """
        select count(*) from marts.term_trends t
        join (select p.venue, p.year, pt.term, count(*) as papers
              from marts.paper_terms pt join marts.papers p using (paper_id) group by all) c
          on c.venue = t.venue and c.year = t.year and c.term = t.term
        where c.papers <> t.papers""",
    )
    assert counted == [(0,)]
