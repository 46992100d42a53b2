"""Every kind of bad input ends as a rejected row with a reason, never as a crash, and never costs
the good paragraphs beside it. (The whole pipeline on a messy folder: tests/test_pipeline.py.)"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import polars as pl

from corpus import seed_abstracts
from paperhouse.ingest import folder_fingerprint, scan_folder
from paperhouse.parse_cache import read_records

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


def test_stray_nul_and_control_bytes_reject_only_their_paragraph(tmp_path):
    good, bad = ABSTRACTS[0], ABSTRACTS[1][:50] + "\x00\x00" + ABSTRACTS[1][50:]
    text = "ICLR 2026 Papers\n\n" + "\n\n".join([good, bad, ABSTRACTS[2], ABSTRACTS[3] + "\x07"]) + "\n"
    (tmp_path / "nul.txt").write_bytes(text.encode())
    rows = by_file(read_records(tmp_path))["nul.txt"]
    reasons = [row["reject_reason"] for row in rows]
    assert reasons[0] is None and reasons[2] is None
    assert reasons[1].startswith("control characters: 2 NUL")
    assert reasons[3].startswith("control characters: 1 ")
    assert "\x00" not in rows[1]["excerpt"] and "\ufffd" in rows[1]["excerpt"]  # shown, not smuggled


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


HOSTILE_NAMES = [
    "it's; DROP TABLE marts.papers; --.txt",
    'double "quoted" name.txt',
    "spaces   and\ttab.txt",
    "new\nline.txt",
    "back\\slash.txt",
    "论文 列表 2026.txt",
    "émoji 📄.txt",
    "$(rm -rf ~).txt",
]


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
    import paperhouse.ingest as ingest_module

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
    import paperhouse.ingest as ingest_module

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


def test_reading_beside_a_real_concurrent_writer_never_crashes(tmp_path):
    """A thread rewrites a file as fast as it can while the folder is read over and over."""
    path = tmp_path / "rewritten.txt"
    versions = ["ICLR 2026 Papers\n\n" + "\n\n".join(ABSTRACTS[i : i + n]) + "\n" for i, n in ((0, 3), (10, 5), (20, 1))]
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
    process that drops to the user nobody once paperhouse is imported."""
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
        program = (
            "import json, os, sys\n"
            "from pathlib import Path\n"
            "from paperhouse.parse_cache import read_records\n"
            "if os.geteuid() == 0:\n"
            "    os.setgroups([]); os.setgid(65534); os.setuid(65534)\n"
            "records = read_records(Path(sys.argv[1]))\n"
            "print(json.dumps(records.select('source_file', 'record_no', 'reject_reason').rows()))\n"
        )
        result = subprocess.run([sys.executable, "-c", program, str(folder)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        rows = {name: (record_no, reason) for name, record_no, reason in json.loads(result.stdout)}
        assert rows == {"readable.txt": (1, None), "secret.txt": (None, "unreadable file: Permission denied")}
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder)


def test_ten_thousand_tiny_files(tmp_path):
    """10,000 one-abstract files (and a few empty ones) read in seconds, incrementally faster."""
    from paperhouse import parse_cache
    from paperhouse.warehouse import connect

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
