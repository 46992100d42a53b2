"""The parse cache is keyed by ``parser_version``, which no longer reads the sources at run time
(an installed package, or a checkout the run's user cannot read, has none to read). This test is
what keeps it honest: the parsing modules' sources are fingerprinted here, and a change to them
without a new ``PARSER_REVISION`` fails, so a stale cache is never reused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import paperhouse.ingest.reading as ingest
from paperhouse.ingest.judging import AcceptanceRules
from paperhouse.ingest.reading import PARSER_REVISION, PARSING_MODULES, parser_version

SNAPSHOT = Path(__file__).parent / "snapshots" / "parser_revision.json"


def sources_fingerprint() -> str:
    digest = hashlib.sha256()
    for module in PARSING_MODULES:
        digest.update((Path(ingest.__file__).parent / module).read_bytes())
    return digest.hexdigest()


def test_parsing_sources_change_only_with_a_new_revision():
    recorded = json.loads(SNAPSHOT.read_text())
    current = sources_fingerprint()
    if current != recorded["sources_sha256"]:
        assert recorded["revision"] != PARSER_REVISION, (
            "The parsing modules changed: raise PARSER_REVISION in src/paperhouse/ingest/reading.py, then run "
            "`python tests/test_parser_revision.py` to record the new fingerprint."
        )
        raise AssertionError("PARSER_REVISION was raised: record it with `python tests/test_parser_revision.py`.")
    assert recorded["revision"] == PARSER_REVISION


def test_parser_version_reads_no_source_file(monkeypatch):
    """The version is computed without opening a file: a run as a user who cannot read the
    checkout (the bad-input test's `nobody`) still gets it."""

    def refuse(*args, **kwargs):
        raise PermissionError("a run must not read its own sources")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    monkeypatch.setattr(Path, "read_text", refuse)
    monkeypatch.setattr("builtins.open", refuse)
    assert parser_version() == parser_version(AcceptanceRules())
    assert parser_version(AcceptanceRules(min_chars=1500)) != parser_version()


if __name__ == "__main__":
    SNAPSHOT.write_text(
        json.dumps({"revision": PARSER_REVISION, "sources_sha256": sources_fingerprint()}, indent=2) + "\n"
    )
    print(f"recorded {PARSER_REVISION} for {SNAPSHOT}")
