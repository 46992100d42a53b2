"""Every kind of bad input is repaired (entities, tags, stray control bytes) or ends as a rejected
row with a reason, never as a crash, and never costs the good paragraphs beside it. (The whole
pipeline on a messy folder: tests/test_pipeline.py.)"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest
from corpus import HOSTILE_NAMES, seed_abstracts

from paperhouse.ingest.parse_cache import read_records
from paperhouse.ingest.reading import folder_fingerprint, scan_folder

ABSTRACTS = seed_abstracts()


def by_file(records: pl.DataFrame) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for row in records.sort("source_file", "record_no").iter_rows(named=True):
        rows.setdefault(row["source_file"], []).append(row)
    return rows


def accounted(records: pl.DataFrame) -> None:
    """Each paragraph read is accepted or rejected with a reason, and each file has a row."""
    paragraphs = records.filter(pl.col("record_no").is_not_null())
    accepted = paragraphs.filter(pl.col("reject_reason").is_null())
    rejected = paragraphs.filter(pl.col("reject_reason").is_not_null())
    assert accepted.height + rejected.height == paragraphs.height
    assert records.filter(pl.col("record_no").is_null() & pl.col("reject_reason").is_null()).height == 0
    assert accepted["text"].null_count() == 0
    assert accepted.filter(pl.col("normalized_text").str.len_chars() == 0).height == 0


def read_texts(folder: Path, name: str, paragraphs: list[str]) -> list[dict]:
    """The records of one list file holding ``paragraphs`` under a header."""
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(("ICLR 2026 Papers\n\n" + "\n\n".join(paragraphs) + "\n").encode())
    return by_file(read_records(folder))[name]


CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")


def test_stray_control_bytes_are_dropped_and_their_paragraph_kept(tmp_path):
    """A stray control byte (C0 or C1, a lone NUL included) costs nothing: it goes, the paragraph
    stays, and ``repairs`` says so. Separators (U+001C..U+001F) become a space."""
    clean = ABSTRACTS[:12]
    damaged = list(clean)
    damaged[1] = clean[1][:50] + "\x02" + clean[1][50:]
    damaged[2] = clean[2][:30] + "\x08" + clean[2][30:60] + "\x7f\x9b" + clean[2][60:]
    damaged[3] = clean[3][:40] + "\x00" + clean[3][40:]
    damaged[4] = clean[4].replace(" ", "\x1f", 1)
    expected = read_texts(tmp_path / "clean", "list.txt", clean)
    rows = read_texts(tmp_path / "damaged", "list.txt", damaged)
    assert [row["reject_reason"] for row in rows] == [None] * 12
    assert [row["repairs"] for row in rows] == [None] + ["control_characters"] * 4 + [None] * 7
    for row, want in zip(rows, expected, strict=True):
        for column in ("text", "normalized_text", "excerpt"):
            assert row[column] == want[column]
        assert not CONTROL_CHARACTERS.search(row["raw_text"])  # no client ever reads a control byte
    accounted(pl.DataFrame(rows))


def test_mostly_binary_paragraphs_are_rejected_and_shown_with_their_bytes_marked(tmp_path):
    binary = "".join(chr(c) for c in [*range(1, 9), *range(0x0E, 0x1C)])  # 22 control characters
    sentence = "Figure data follows in the original encoding of the scanned appendix of this paper. "
    paragraphs = [
        *ABSTRACTS[:30],
        sentence + binary + sentence,  # 22 control characters in 190: 12%, binary
        ABSTRACTS[30][:60] + "\x00\x00" + ABSTRACTS[30][60:],  # NULs in a run, as binary data holds them
        ABSTRACTS[31][:60] + binary[:4] + ABSTRACTS[31][60:],  # a few stray bytes: repaired
    ]
    rows = read_texts(tmp_path, "appendix.txt", paragraphs)
    assert [row["reject_reason"] for row in rows[:30]] == [None] * 30
    assert rows[30]["reject_reason"] == "binary data: 12% of characters are control bytes or undecodable"
    assert rows[31]["reject_reason"] == "binary data: a run of NUL bytes (2 control or undecodable characters)"
    assert (rows[32]["reject_reason"], rows[32]["repairs"]) == (None, "control_characters")
    for row in rows[30:32]:
        assert row["text"] is None and row["raw_text"] is None and row["repairs"] is None
        assert not CONTROL_CHARACTERS.search(row["excerpt"]) and "\ufffd" in row["excerpt"]  # shown, not smuggled
    assert rows[30]["excerpt"].startswith(sentence + "\ufffd" * 22)


def test_html_entities_and_tags_are_decoded_and_recorded(tmp_path):
    scraped = (
        "We study &quot;grounded&quot; R&amp;D agents &#39;in the wild&#x27; with &lt;i&gt;escaped&lt;/i&gt; "
        "and <i>real</i> tags: H<sub>2</sub>O<br/>flows&nbsp;at p &lt; 0.05, &amp;quot;twice&amp;quot; escaped. "
    )
    decoded = (
        "We study \"grounded\" R&D agents 'in the wild' with escaped and real tags: H2O flows at p < 0.05, "
        '"twice" escaped. '
    )
    paragraphs = [
        scraped + ABSTRACTS[5],
        "<p>" + ABSTRACTS[6] + '</p><p>Code: <a href="https://example.org">example.org</a>.</p>',
        "Q&A and R&D, with n<k and m>1 for all 0<t<1: " + ABSTRACTS[7],  # no entity, no tag: left alone
        "&lt;b&gt;Bold&lt;/b&gt;\x02 " + ABSTRACTS[8],
        ABSTRACTS[9],
    ]
    rows = read_texts(tmp_path, "scraped.txt", paragraphs)
    assert [row["reject_reason"] for row in rows] == [None] * 5
    assert [row["repairs"] for row in rows] == [
        "html_entities,markup",
        "markup",
        None,
        "html_entities,markup,control_characters",
        None,
    ]
    assert rows[0]["text"] == decoded + ABSTRACTS[5]
    assert rows[1]["text"] == ABSTRACTS[6] + " Code: example.org."
    assert rows[2]["text"] == paragraphs[2]
    assert rows[3]["text"] == "Bold " + ABSTRACTS[8]
    assert rows[0]["raw_text"] == paragraphs[0]  # as read
    for row in rows:
        assert not re.search(r"&(quot|amp|lt|gt|#39|#x27|nbsp);|<(/?i|sub|br/|p)>", row["text"])
        assert not re.search(r"\b(quot|amp|lt|gt|nbsp|sub)\b", row["normalized_text"])


def scraped_abstract(abstract: str) -> str:
    """An abstract as a careless scraper leaves it: escaped once or twice, with tags."""
    first, rest = abstract.split(" ", 1)
    return (
        f"<p>&lt;b&gt;{first}&lt;/b&gt; {html.escape(rest)} It scales as O(n<sup>2</sup>) at p &lt; 0.05 "
        "&amp; holds &amp;quot;in the wild&amp;quot; &gt; 90% of the time.</p>"
    )


@pytest.mark.slow
def test_scraped_entities_and_tags_reach_no_mart_and_no_term(tmp_path, monkeypatch, capsys):
    """A whole run on lists a third of whose abstracts are escaped and tagged: the marts hold the
    decoded texts, paper_sources says what was repaired, the summary and the ingest asset count
    them, and no entity or tag name becomes a term."""
    from orchestration import runner
    from paperhouse import cli

    seeds = tmp_path / "seeds"
    seeds.mkdir()
    scraped = set(range(0, len(ABSTRACTS), 3))
    texts = [scraped_abstract(a) if i in scraped else a for i, a in enumerate(ABSTRACTS)]
    for n, start in enumerate(range(0, len(texts), 20)):
        (seeds / f"scraped {n}.txt").write_text("ICLR 2026 Papers\n\n" + "\n\n".join(texts[start : start + 20]) + "\n")
    outcomes = []
    real_outcome = runner._outcome
    monkeypatch.setattr(runner, "_outcome", lambda *args: outcomes.append(real_outcome(*args)) or outcomes[-1])
    warehouse = tmp_path / "out" / "warehouse.duckdb"
    assert cli.main(["run", "--seeds", str(seeds), "--warehouse", str(warehouse)]) == 0
    summary = capsys.readouterr().out
    assert re.search(rf"^  records repaired +{len(scraped)}$", summary, re.MULTILINE), summary
    assert outcomes[0].ingest["records_repaired"] == len(scraped)

    with duckdb.connect(str(warehouse), read_only=True) as con:
        repairs = dict(con.execute("select repairs, count(*) from marts.paper_sources group by 1").fetchall())
        assert repairs == {"html_entities,markup": len(scraped), None: len(ABSTRACTS) - len(scraped)}
        assert con.execute("select count(*) from marts.papers").fetchone() == (len(ABSTRACTS),)
        leaks = con.execute(
            "select count(*) from marts.papers where regexp_matches(abstract, '&[a-z#0-9]+;|</?(p|b|sup)>')"
        ).fetchone()
        assert leaks == (0,)
        decoded = con.execute(
            "select count(*) from marts.papers where abstract like '%O(n2) at p < 0.05 & holds \"in the wild\" > 90%'"
        ).fetchone()
        assert decoded == (len(scraped),)
        terms = {term for (term,) in con.execute("select term from marts.terms").fetchall()}
        words = {word for term in terms for word in term.split()}
        leaked = words & {"quot", "amp", "lt", "gt", "sup", "nbsp", "39", "x27"}
        assert terms and not leaked, sorted(leaked)


def test_dense_nul_bytes_make_a_binary_file(tmp_path):
    (tmp_path / "sparse-looking.txt").write_bytes((ABSTRACTS[0] + "\x00" * 50).encode())
    (row,) = by_file(read_records(tmp_path))["sparse-looking.txt"]
    assert row["record_no"] is None and row["reject_reason"].startswith("binary file")


def test_damaged_utf8_bytes_reject_only_their_paragraph(tmp_path):
    paragraphs = [ABSTRACTS[0], "Über “naïve” café résumés — " + ABSTRACTS[4], ABSTRACTS[5]]
    data = ("ICLR 2026 Papers\n\n" + "\n\n".join(paragraphs)).encode()
    cut = data.index(ABSTRACTS[5].encode()) + 40
    data = data[:cut] + b"\xff\xfe" + data[cut:]  # two bytes no UTF-8 text holds
    (tmp_path / "damaged.txt").write_bytes(data)
    rows = by_file(read_records(tmp_path))["damaged.txt"]
    assert [row["encoding"] for row in rows] == ["utf-8"] * 3  # not guessed as Windows-1252 mojibake
    assert rows[0]["reject_reason"] is None and rows[1]["reject_reason"] is None
    assert "naïve" in rows[1]["text"]
    assert rows[2]["reject_reason"] == "undecodable bytes: 2 characters could not be decoded"


def test_entries_that_are_not_files_are_listed_with_a_reason(tmp_path):
    (tmp_path / "good.txt").write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n")
    (tmp_path / "loop.txt").symlink_to("loop.txt")
    (tmp_path / "a.txt").symlink_to("b.txt")
    (tmp_path / "b.txt").symlink_to("a.txt")
    (tmp_path / "dangling.txt").symlink_to("missing/nowhere.txt")
    (tmp_path / "folder.txt").mkdir()
    os.mkfifo(tmp_path / "pipe.txt")  # opening it for reading would block forever
    (tmp_path / "link to good.txt").symlink_to("good.txt")
    started = time.monotonic()
    records = read_records(tmp_path)
    assert time.monotonic() - started < 10
    rows = by_file(records)
    reasons = {name: file_rows[0]["reject_reason"] for name, file_rows in rows.items()}
    assert reasons == {
        "a.txt": "not a file: symbolic link loop",
        "b.txt": "not a file: symbolic link loop",
        "dangling.txt": "not a file: dangling symbolic link",
        "folder.txt": "not a file: a folder",
        "good.txt": None,
        "link to good.txt": None,  # a link to a file is read like the file
        "loop.txt": "not a file: symbolic link loop",
        "pipe.txt": "not a file: a named pipe, socket or device",
    }
    assert all(rows[name][0]["record_no"] is None for name, reason in reasons.items() if reason)
    assert folder_fingerprint(tmp_path)  # the sensor copes too


def test_hostile_file_names_are_data(tmp_path):
    for i, name in enumerate(HOSTILE_NAMES):
        (tmp_path / name).write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[i]}\n")
    # A name that is not valid UTF-8 (Linux allows any bytes but / and NUL).
    raw_name = os.fsdecode(b"latin1 caf\xe9.txt")
    (tmp_path / raw_name).write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[20]}\n")
    records = read_records(tmp_path)
    assert set(records["source_file"]) == {*HOSTILE_NAMES, "latin1 caf\\xe9.txt"}
    assert records["reject_reason"].null_count() == records.height
    accounted(records)


def test_file_that_changes_while_it_is_read_is_read_again(tmp_path, monkeypatch):
    import paperhouse.ingest.reading as ingest_module

    path = tmp_path / "growing.txt"
    path.write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n")
    real_read = ingest_module._read_all
    writes = {"left": 1}

    def read_then_append(fd):
        data = real_read(fd)
        if writes["left"]:
            writes["left"] -= 1
            with open(path, "a") as handle:  # a scraper appends while we read
                handle.write(f"\n{ABSTRACTS[1]}\n")
        return data

    monkeypatch.setattr(ingest_module, "_read_all", read_then_append)
    rows = by_file(read_records(tmp_path))["growing.txt"]
    assert [row["reject_reason"] for row in rows] == [None, None]  # the second read saw both, unchanged


def test_file_that_never_stops_changing_is_rejected_for_this_run(tmp_path, monkeypatch):
    import paperhouse.ingest.reading as ingest_module

    path = tmp_path / "busy.txt"
    path.write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n")
    (tmp_path / "calm.txt").write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[1]}\n")
    real_read = ingest_module._read_all

    def read_then_append(fd):
        data = real_read(fd)
        if os.fstat(fd).st_ino == path.stat().st_ino:
            with open(path, "a") as handle:
                handle.write("more ")
        return data

    monkeypatch.setattr(ingest_module, "_read_all", read_then_append)
    rows = by_file(read_records(tmp_path))
    assert rows["calm.txt"][0]["reject_reason"] is None
    (busy,) = rows["busy.txt"]
    assert busy["record_no"] is None and busy["reject_reason"].startswith("changed while being read (3 attempts)")


@pytest.mark.slow
def test_reading_beside_a_real_concurrent_writer_never_crashes(tmp_path):
    """A thread rewrites a file as fast as it can while the folder is read over and over."""
    path = tmp_path / "rewritten.txt"
    versions = [
        "ICLR 2026 Papers\n\n" + "\n\n".join(ABSTRACTS[i : i + n]) + "\n" for i, n in ((0, 3), (10, 5), (20, 1))
    ]
    path.write_text(versions[0])
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            with open(path, "w") as handle:  # truncate, then write in pieces: readers can see any prefix
                for piece in range(0, len(versions[n % 3]), 300):
                    handle.write(versions[n % 3][piece : piece + 300])
                    handle.flush()
            n += 1

    thread = threading.Thread(target=writer)
    thread.start()
    outcomes = {"whole": 0, "changing": 0}
    try:
        for _ in range(200):
            records = read_records(tmp_path)
            accounted(records)
            reasons = records["reject_reason"].drop_nulls().to_list()
            if any(reason.startswith("changed while being read") for reason in reasons):
                outcomes["changing"] += 1
            else:
                outcomes["whole"] += 1
    finally:
        stop.set()
        thread.join()
    assert sum(outcomes.values()) == 200


def test_unreadable_file_is_rejected_with_the_reason(tmp_path):
    """Real permissions. Root reads everything, so as root (CI) the folder is read by a child
    process that drops to the user nobody once paperhouse has read a folder like it: the
    modules that reading imports lazily are loaded by then, since nobody may not be able to read
    the checkout or its virtualenv (a clone under /root, or any 0700 folder)."""
    root = os.geteuid() == 0
    # pytest's own temporary folders are closed to other users.
    folder = Path(tempfile.mkdtemp(prefix="paperhouse-perm-")) if root else tmp_path
    try:
        os.chmod(folder, 0o755)
        (folder / "readable.txt").write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[0]}\n")
        os.chmod(folder / "readable.txt", 0o644)
        secret = folder / "secret.txt"
        secret.write_text(f"ICLR 2026 Papers\n\n{ABSTRACTS[1]}\n")
        os.chmod(secret, 0o000)
        warm_up = Path(tempfile.mkdtemp(prefix="paperhouse-warm-"))
        shutil.copy(folder / "readable.txt", warm_up / "readable.txt")
        program = (
            "import json, os, sys\n"
            "from pathlib import Path\n"
            "from paperhouse.ingest.parse_cache import read_records\n"
            "read_records(Path(sys.argv[2]))\n"
            "if os.geteuid() == 0:\n"
            "    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
            "records = read_records(Path(sys.argv[1]))\n"
            "print(json.dumps(records.select('source_file', 'record_no', 'reject_reason').rows()))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", program, str(folder), str(warm_up)], capture_output=True, text=True, timeout=120
        )
        shutil.rmtree(warm_up)
        assert result.returncode == 0, result.stderr[-2000:]
        rows = {name: (record_no, reason) for name, record_no, reason in json.loads(result.stdout)}
        assert rows == {"readable.txt": (1, None), "secret.txt": (None, "unreadable file: Permission denied")}
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder)


def test_ten_thousand_tiny_files(tmp_path):
    """10,000 one-abstract files (and a few empty ones) read in seconds, incrementally faster."""
    from paperhouse.ingest import parse_cache
    from paperhouse.warehouse.database import connect

    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(10_000):
        words = " ".join(f"w{(i * 7 + k) % 997}" for k in range(15))
        (folder / f"list {i:05d}.txt").write_text(
            f"Workshop {2000 + i % 26}\n\nAbstract {i}: we study {words} and report what we learn from it.\n"
        )
    for i in range(10):
        (folder / f"empty {i}.txt").write_bytes(b"")
    database = tmp_path / "build.duckdb"
    started = time.perf_counter()
    with connect(database) as con:
        first = parse_cache.ingest(con, folder)
        first_records = parse_cache.source_records(con)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    with connect(database) as con:
        second = parse_cache.ingest(con, folder)
        second_records = parse_cache.source_records(con)
    warm = time.perf_counter() - started
    print(f"10,010 files: cold {cold:.1f} s, warm {warm:.1f} s")
    assert first.folder.count("parsed") == 10_010 and second.folder.count("reused") == 10_010
    assert first_records.height == 10_010
    assert first_records.filter(pl.col("reject_reason") == "empty file").height == 10
    assert second_records.equals(first_records)
    accounted(first_records)
    assert len(scan_folder(folder)) == 10_010
    assert cold < 60 and warm < 60
