"""The whole graph, materialised through Dagster into a temporary warehouse."""

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from corpus import SEEDS, seed_abstracts
from warehouses import paperhouse

ABSTRACTS = seed_abstracts()
NEW_ABSTRACT = (
    "Retrieval-augmented generation grounds language model answers in documents, but retrievers trained on "
    "web text miss domain terminology. We present a lightweight adapter that rewrites queries with a glossary "
    "mined from the target corpus, improving recall on three biomedical benchmarks without retraining the retriever."
)


def query(warehouse: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def bundled_run(seeds_build) -> tuple[subprocess.CompletedProcess, Path]:
    """`paperhouse run` on the bundled seeds, as a user runs it (the session's shared build)."""
    return seeds_build.process, seeds_build.warehouse


def test_bundled_seeds_build_the_contract_warehouse(bundled_run):
    result, warehouse = bundled_run
    assert result.returncode == 0, result.stderr[-3000:]
    assert "papers             76" in result.stdout
    assert str(warehouse) in result.stdout
    assert query(warehouse, "select count(*) from marts.papers") == [(76,)]
    assert query(warehouse, "select count(*) from marts.paper_sources") == [(76,)]
    assert query(warehouse, "select count(*) from marts.rejected_records") == [(0,)]
    assert query(warehouse, "select distinct venue, year from marts.papers") == [("ICLR", 2026)]
    assert query(warehouse, "select count(*) >= 2 from marts.topics") == [(True,)]
    primary_counts = query(
        warehouse,
        "select count(*) filter (where is_primary) from marts.papers left join marts.paper_topics using (paper_id)"
        " group by paper_id",
    )
    assert len(primary_counts) == 76 and set(primary_counts) == {(1,)}


def test_contract_columns_exist(bundled_run):
    _, warehouse = bundled_run
    required = {
        "papers": {"paper_id", "abstract", "venue", "year"},
        "paper_sources": {"source_file", "record_no", "paper_id", "match_kind", "similarity"},
        "rejected_records": {"source_file", "record_no", "reason", "excerpt"},
        "terms": {"term_id", "term", "kind", "doc_freq", "idf"},
        "paper_terms": {"paper_id", "term_id", "weight", "rank"},
        "paper_keyphrases": {"paper_id", "rank", "keyphrase", "term_id", "score"},
        "term_aliases": {"alias", "term_id", "alias_kind"},
        "topics": {"topic_id", "label", "n_papers", "coherence"},
        "topic_terms": {"topic_id", "term_id", "weight"},
        "similar_papers": {"paper_id", "similar_paper_id", "score", "rank"},
        "paper_topics": {"paper_id", "topic_id", "weight", "is_primary"},
    }
    for table, columns in required.items():
        found = {
            c
            for (c,) in query(
                warehouse,
                "select column_name from information_schema.columns where table_schema = 'marts' and "
                f"table_name = '{table}'",
            )
        }
        assert columns <= found, (table, columns - found)
    assert query(warehouse, "select count(*) from marts.paper_terms where rank = 1") == [(76,)]
    # By default a paper's keyphrases are its ten best terms.
    assert (
        query(
            warehouse,
            "select paper_id, rank, term_id, score from marts.paper_keyphrases"
            " except select paper_id, rank, term_id, weight from marts.paper_terms where rank <= 10",
        )
        == []
    )
    assert query(warehouse, "select count(*) from marts.paper_keyphrases") == query(
        warehouse, "select count(*) from marts.paper_terms where rank <= 10"
    )
    assert query(warehouse, "select count(*), count(distinct paper_id) from marts.similar_papers") == [(380, 76)]
    assert query(warehouse, "select count(*) from marts.papers where display_name is null") == [(0,)]


def test_marts_show_names_acronyms_and_readable_topics(bundled_run):
    _, warehouse = bundled_run
    lorsa = query(
        warehouse,
        "select method_name, display_name from marts.papers where abstract like 'We propose Low-Rank "
        "Sparse Attention%'",
    )
    assert lorsa == [("Lorsa", "Lorsa: Low-Rank Sparse Attention")]
    # The acronym and its expansion are one term.
    assert ("SAE", "sparse autoencoder") in query(warehouse, "select alias, term from marts.term_aliases")
    assert query(warehouse, "select count(*) from marts.terms where term in ('sae', 'saes')") == [(0,)]
    labels = [label for (label,) in query(warehouse, "select label from marts.topics")]
    assert all(2 <= len(label.split(", ")) <= 4 for label in labels) and not any(
        label.startswith("topic") for label in labels
    )
    # A paper that introduces no named method shows its subject, capitalised: the most repeated of its
    # five best terms, a phrase of n words counting sqrt(n) times its repeats, the better ranked on a tie.
    unnamed = query(warehouse, "select paper_id, display_name from marts.papers where method_name is null")
    subject = {}
    for paper_id, term, occurrences, rank in query(
        warehouse,
        "select paper_id, term, occurrences, rank from marts.paper_terms where rank <= 5 order by paper_id, rank",
    ):
        score = (occurrences * len(term.split(" ")) ** 0.5, -rank)
        if paper_id not in subject or score > subject[paper_id][0]:
            subject[paper_id] = (score, term)
    assert unnamed and {paper_id: name for paper_id, name in unnamed} == {
        paper_id: subject[paper_id][1][:1].upper() + subject[paper_id][1][1:] for paper_id, _ in unnamed
    }


def test_text_lists_alone_give_no_keyword_terms(bundled_run):
    """Text lists carry no author keywords: the terms are the mined ones, as before keywords joined
    them (tests/test_keyword_terms.py has an export's)."""
    _, warehouse = bundled_run
    assert query(warehouse, "select count(*) from raw.keyword_terms") == [(0,)]
    assert query(warehouse, "select count(*) from marts.paper_keywords") == [(0,)]
    # Every mined term once, and nothing else; the aliases are the abstracts' alone.
    terms, mined, missing_or_extra = query(
        warehouse,
        """
        select count(t.term), count(r.term), count(*) filter (where t.term is null or r.term is null)
        from marts.terms as t full join raw.terms as r using (term)""",
    )[0]
    assert terms == mined > 0 and missing_or_extra == 0
    assert query(warehouse, "select count(*) from marts.terms where kind = 'keyword' or keyword_papers <> 0") == [(0,)]
    assert query(
        warehouse, "select (select count(*) from marts.term_aliases) = (select count(*) from raw.term_aliases)"
    ) == [(True,)]
    assert query(warehouse, "select count(*) from marts.term_aliases where alias_kind = 'keyword'") == [(0,)]


def test_warehouse_opens_read_only_in_duckdb_1_5(bundled_run):
    _, warehouse = bundled_run
    assert duckdb.__version__.startswith("1.5."), "the contract promises files DuckDB 1.5 clients can read"
    assert query(warehouse, "select count(*) from marts.topics")[0][0] >= 2


def test_query_answers_in_every_format_and_cannot_write(bundled_run):
    _, warehouse = bundled_run
    sql = "select venue, year, count(*) as papers from marts.papers group by all"
    table = paperhouse("query", sql, "--warehouse", str(warehouse))
    assert table.returncode == 0 and "ICLR" in table.stdout and "76" in table.stdout
    as_json = paperhouse("query", sql, "--warehouse", str(warehouse), "--format", "json")
    assert json.loads(as_json.stdout) == [{"venue": "ICLR", "year": 2026, "papers": 76}]
    as_csv = paperhouse("query", sql, "--warehouse", str(warehouse), "--format", "csv")
    assert as_csv.stdout.splitlines() == ["venue,year,papers", "ICLR,2026,76"]
    for statement in (
        "drop table marts.papers",
        "insert into marts.topics (topic_id, label, n_papers) values (99, 'x', 0)",
    ):
        refused = paperhouse("query", statement, "--warehouse", str(warehouse))
        assert refused.returncode != 0 and "read-only" in refused.stderr
    assert query(warehouse, "select count(*) from marts.papers") == [(76,)]
    # Nor can it write (or read) any other file, or change that back.
    outside = warehouse.parent / "exported.csv"
    for statement in (
        f"copy marts.papers to '{outside}'",
        f"attach '{warehouse.parent / 'new.duckdb'}' as other",
        "select * from read_csv('/etc/passwd')",
        "set enable_external_access = true",
    ):
        refused = paperhouse("query", statement, "--warehouse", str(warehouse))
        assert refused.returncode != 0 and refused.stderr.startswith("paperhouse: "), statement
    assert not outside.exists() and not (warehouse.parent / "new.duckdb").exists()


def test_check_command_validates_the_published_warehouse(bundled_run):
    _, warehouse = bundled_run
    result = paperhouse("check", "--warehouse", str(warehouse))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout and "suites passed" in result.stdout


def test_docs_site_is_generated_offline(bundled_run):
    _, warehouse = bundled_run
    result = paperhouse("docs", "--warehouse", str(warehouse))
    assert result.returncode == 0, result.stdout + result.stderr
    site = Path(result.stdout.strip().split("dbt docs: ")[-1])
    html = site.read_text()
    assert "One row per distinct paper" in html and "duplicate_groups" in html


def _wrap(text: str, width: int = 80) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join([*lines, line])


@pytest.mark.slow
def test_messy_folder_ingests_duplicates_and_rejects_bad_input(tmp_path, monkeypatch):
    """Copies in other encodings, revisions, and every kind of bad input, in one run."""
    import os

    import paperhouse.ingest.reading as ingest_module
    from orchestration.runner import run_all
    from orchestration.warm_dbt.worker import warm_dbt
    from paperhouse.settings import resolve_paths

    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for path in SEEDS.glob("*.txt"):
        (seeds / path.name).write_bytes(path.read_bytes())
    # 19 exact duplicates: one list re-scraped as UTF-16 with CRLF line ends and hard-wrapped lines.
    copied = [p.strip() for p in sorted(SEEDS.glob("*.txt"))[2].read_text().split("\n\n") if p.strip()]
    rescraped = "\n\n".join([copied[0]] + [_wrap(p) for p in copied[1:]]).replace("\n", "\r\n")
    (seeds / "rescraped list.txt").write_bytes(rescraped.encode("utf-16"))
    # 3 revisions of bundled papers and 1 new paper, in GB18030 under a Chinese header.
    revisions = [
        ABSTRACTS[5] + " Code and data are available at https://example.org/code.",
        ABSTRACTS[20][: int(len(ABSTRACTS[20]) * 0.7)].rsplit(" ", 1)[0] + " ...",
        ABSTRACTS[65].split(". ", 1)[1],  # first sentence dropped
        NEW_ABSTRACT,
    ]
    (seeds / "neurips.txt").write_bytes(("NeurIPS 2025 论文列表\n\n" + "\n\n".join(revisions)).encode("gb18030"))
    # Hostile file names with exact copies (one with a stray line); a blob; files that hold no abstract.
    (seeds / "it's; DROP TABLE x.txt").write_text(f"Workshop 2024\n\n{ABSTRACTS[60]}\n\nPage 2\n")
    (seeds / 'new\nline "quoted".txt').write_text(f"Workshop 2024\n\n{ABSTRACTS[62]}\n")
    (seeds / os.fsdecode(b"latin1 caf\xe9.txt")).write_text(f"Workshop 2024\n\n{ABSTRACTS[63]}\n")
    (seeds / "blob.txt").write_text("Scrape 2025\n\n" + "token " * 600_000 + f"\n\n{ABSTRACTS[61]}\n")
    (seeds / "empty.txt").write_bytes(b"")
    (seeds / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 64)
    (seeds / "header_only.txt").write_text("ICML 2025 Papers\n")
    (seeds / "undecodable.txt").write_bytes(b"abc \x81\x20 def \x8d\x20 ghi")
    # Damage inside otherwise good files costs only the paragraph that holds it (binary data: NULs in a
    # run; a stray control byte is only dropped, see test_bad_input.py).
    (seeds / "nul.txt").write_text(
        f"Workshop 2024\n\n{ABSTRACTS[30]}\n\n{ABSTRACTS[31][:40]}\x00\x00{ABSTRACTS[31][40:]}\n"
    )
    damaged = f"ICLR 2026 论文列表\n\n{ABSTRACTS[33]}\n\n{ABSTRACTS[34]}\n".encode()
    cut = damaged.index(ABSTRACTS[34][:30].encode()) + 10
    (seeds / "damaged.txt").write_bytes(damaged[:cut] + b"\xff" + damaged[cut:])
    # Entries that are no file, a file nobody may read, a file that never stops changing.
    (seeds / "loop.txt").symlink_to("loop.txt")
    (seeds / "dangling.txt").symlink_to("gone.txt")
    (seeds / "folder.txt").mkdir()
    os.mkfifo(seeds / "pipe.txt")
    (seeds / "secret.txt").write_text(f"Workshop 2024\n\n{ABSTRACTS[40]}\n")
    (seeds / "busy.txt").write_text(f"Workshop 2024\n\n{ABSTRACTS[41]}\n")
    real_open, real_read = ingest_module._open_regular, ingest_module._read_all

    def open_as_if_forbidden(path):  # as root, permissions bind nobody: test_bad_input.py checks real ones
        if path.name == "secret.txt":
            raise PermissionError(13, "Permission denied")
        return real_open(path)

    def read_while_appending(fd):
        data = real_read(fd)
        if os.fstat(fd).st_ino == (seeds / "busy.txt").stat().st_ino:
            with open(seeds / "busy.txt", "a") as handle:
                handle.write("more ")
        return data

    monkeypatch.setattr(ingest_module, "_open_regular", open_as_if_forbidden)
    monkeypatch.setattr(ingest_module, "_read_all", read_while_appending)

    paths = resolve_paths(seeds, tmp_path / "out" / "warehouse.duckdb")
    outcome = run_all(paths)
    assert outcome.success, outcome.reason
    assert not warm_dbt().listening  # the run stopped its warm dbt: nothing writes into its build folder now
    assert outcome.checks_failed == []
    assert [w.split(" ")[0] for w in outcome.checks_warned] == ["raw/source_records:no_rejected_records"]
    whole_files = {
        "empty.txt",
        "binary.txt",
        "header_only.txt",
        "undecodable.txt",
        "loop.txt",
        "dangling.txt",
        "folder.txt",
        "pipe.txt",
        "secret.txt",
        "busy.txt",
    }
    paragraphs = 76 + 19 + 4 + 2 + 1 + 1 + 2 + 2 + 2
    assert outcome.ingest["files_unread"] == 6
    assert outcome.ingest["paragraphs_read"] == paragraphs
    assert outcome.ingest["records_rejected"] == len(whole_files) + 4
    w = paths.warehouse

    assert query(w, "select count(*) from marts.papers") == [(77,)]
    kinds = dict(query(w, "select match_kind, count(*) from marts.paper_sources group by 1"))
    assert kinds == {"canonical": 77, "exact": 19 + 2 + 2 + 2, "near": 3}
    rejected = dict(query(w, "select source_file, reason from marts.rejected_records where record_no is null"))
    assert set(rejected) == whole_files
    assert rejected["loop.txt"] == "not a file: symbolic link loop"
    assert rejected["pipe.txt"].startswith("not a file")
    assert rejected["secret.txt"] == "unreadable file: Permission denied"
    assert rejected["busy.txt"].startswith("changed while being read")
    stray = query(
        w, "select source_file, record_no, reason from marts.rejected_records where record_no is not null order by 1"
    )
    assert [(f, n) for f, n, _ in stray] == [
        ("blob.txt", 1),
        ("damaged.txt", 2),
        ("it's; DROP TABLE x.txt", 2),
        ("nul.txt", 2),
    ]
    assert [r.split(":")[0] for _, _, r in stray] == [
        "too long for one abstract",
        "undecodable bytes",
        "too short for an abstract",
        "binary data",
    ]
    assert query(
        w,
        "select count(*) from marts.paper_sources where source_file in ('new\nline \"quoted\".txt', "
        "'latin1 caf\\xe9.txt')",
    ) == [(2,)]
    # Accepted + rejected = paragraphs read, file by file.
    read = dict(
        query(w, "select source_file, count(*) from staging.stg_source_records where record_no is not null group by 1")
    )
    landed = dict(
        query(
            w,
            """
        select source_file, count(*) from (
            select source_file from marts.paper_sources
            union all select source_file from marts.rejected_records where record_no is not null)
        group by 1""",
        )
    )
    assert read == landed and sum(read.values()) == paragraphs
    assert query(w, "select distinct encoding from marts.paper_sources where source_file = 'rescraped list.txt'") == [
        ("utf-16",)
    ]
    assert query(w, "select distinct venue, year from marts.paper_sources where source_file = 'neurips.txt'") == [
        ("NeurIPS", 2025)
    ]
    # Every merged record is explained beside its paper's canonical record.
    groups = query(
        w,
        """
        select g.match_kind, count(*), bool_and(g.canonical_source_file = p.canonical_source_file),
               bool_and(g.similarity between 0 and 1)
        from marts.duplicate_groups g join marts.papers p using (paper_id) group by 1 order by 1""",
    )
    assert groups == [("exact", 25, True, True), ("near", 3, True, True)]


@pytest.mark.slow
def test_failing_expectation_blocks_downstream_and_fails_the_run(tmp_path, monkeypatch, capsys):
    """Corrupt the dedup output: its blocking check fails, nothing after it runs, nothing is published."""
    import polars as pl

    from paperhouse import cli
    from paperhouse.dedup import papers as dedup

    real_assign = dedup.assign_papers
    # The DuckDB engine's dedup step (paperhouse.engines.LocalCompute) calls it.
    monkeypatch.setattr(
        dedup, "assign_papers", lambda records: real_assign(records).with_columns(similarity=pl.lit(1.5))
    )
    warehouse = tmp_path / "warehouse.duckdb"
    code = cli.main(["run", "--seeds", str(SEEDS), "--warehouse", str(warehouse)])
    stderr = capsys.readouterr().err

    assert code != 0
    assert "raw/paper_assignments:great_expectations_paper_assignments" in stderr
    assert "expect_column_values_to_be_between on `similarity`" in stderr
    assert '"examples": [1.5' in stderr  # the offending values, not only the expectation's name
    assert not warehouse.exists()  # not published
    build = warehouse.parent / f".{warehouse.name}.build" / warehouse.name
    tables = {t for (t,) in query(build, "select table_schema || '.' || table_name from information_schema.tables")}
    assert "raw.paper_assignments" in tables
    assert "raw.paper_terms" not in tables and "marts.papers" not in tables  # downstream never ran


@pytest.mark.slow
def test_failing_dbt_test_fails_the_run_and_nothing_is_published(tmp_path, monkeypatch, capsys):
    """dbt runs inside the run's process: a failing dbt test still fails its check and the run.
    A term missing from raw.terms passes every raw suite; only dbt's relationships test sees it."""
    import dataclasses

    import polars as pl

    from paperhouse import cli
    from paperhouse.nlp import analysis

    real_index = analysis.index_words

    def index_missing_a_term(words, **options):
        index = real_index(words, **options)
        ranked_first = index.paper_terms["term"][0]
        return dataclasses.replace(index, terms=index.terms.filter(pl.col("term") != ranked_first))

    monkeypatch.setattr(analysis, "index_words", index_missing_a_term)
    warehouse = tmp_path / "warehouse.duckdb"
    code = cli.main(["run", "--seeds", str(SEEDS), "--warehouse", str(warehouse)])
    stderr = capsys.readouterr().err

    assert code != 0
    assert "marts/paper_terms:relationships_paper_terms_term_id__term_id__ref_terms_" in stderr
    assert "failed: expect_" not in stderr  # no suite failed: dbt alone caught it
    assert not warehouse.exists()  # not published
    # The failure explains itself: the invariant in words, then the rows that break it, read
    # from the build database (the term ids the papers point at and raw.terms no longer holds).
    build = warehouse.parent / f".{warehouse.name}.build" / warehouse.name
    missing = query(
        build,
        "select distinct term_id from marts.paper_terms where term_id not in (select term_id from marts.terms)",
    )
    assert missing
    line = next(line for line in stderr.splitlines() if "relationships_paper_terms_term_id" in line)
    assert "every `term_id` of `paper_terms` is a `term_id` of `terms`" in line
    assert f"{len(missing)} row" in line
    assert any(f"e.g. from_field={term_id}" in line for (term_id,) in missing)


@pytest.mark.slow
def test_dedup_and_analysis_compute_with_the_build_database_closed(tmp_path, monkeypatch, capsys):
    """A connection left open keeps the blocks it read cached (1.1 GB for 10^6 texts) under the
    step's own memory; closed, another process can open the build database for writing."""
    from paperhouse import cli
    from paperhouse.dedup import papers as dedup
    from paperhouse.nlp import analysis

    build = tmp_path / ".warehouse.duckdb.build" / "warehouse.duckdb"
    opens_elsewhere = []

    def probe() -> None:
        opener = subprocess.run(
            [sys.executable, "-c", f"import duckdb; duckdb.connect({str(build)!r}).close()"],
            capture_output=True,
            text=True,
        )
        opens_elsewhere.append(opener.returncode == 0 or opener.stderr[-300:])

    real_assign = dedup.assign_papers
    monkeypatch.setattr(dedup, "assign_papers", lambda records: probe() or real_assign(records))

    def analyse_and_stop(papers, previous_topics=None):
        probe()
        raise RuntimeError("stop here")

    monkeypatch.setattr(analysis, "analyse", analyse_and_stop)
    assert cli.main(["run", "--seeds", str(SEEDS), "--warehouse", str(tmp_path / "warehouse.duckdb")]) != 0
    assert "stop here" in capsys.readouterr().err
    assert opens_elsewhere == [True, True]
