"""File names and contents never become SQL text; the UI listens on this machine only; no secrets."""

import ast
import re
import subprocess
from pathlib import Path

from corpus import REPO

# Names that may be formatted into SQL: code constants and identifiers read from DuckDB's catalog
# (column_declarations: names and types from a table's schema in the code).
SQL_IDENTIFIERS = {
    "RAW_SCHEMA",
    "TABLE",
    "FILES_TABLE",
    "RECORDS_TABLE",
    "STAGING_TABLE",
    "table",
    "schema",
    "key_columns",
    "column_declarations",
}
SQL_CONSTANTS = {"ROW_GROUP_ROWS", "MARTS_SCHEMA"}  # module constants, never data
# Escaped by paperhouse.warehouse.database, where DuckDB takes no parameters (ATTACH, USE, COPY TO).
ESCAPED = re.compile(r"^sql_(literal|identifier)\(")


def _python_files() -> list[Path]:
    return [p for folder in ("src", "orchestration") for p in (REPO / folder).rglob("*.py")]


def test_sql_is_never_formatted_from_data():
    """Every f-string handed to ``execute`` interpolates only table and schema identifiers;
    data (file names, texts, ids) goes in as parameters or registered frames."""
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in {"execute", "sql", "query"}:
                for argument in node.args[:1]:
                    if isinstance(argument, ast.JoinedStr):
                        for value in argument.values:
                            if isinstance(value, ast.FormattedValue):
                                name = ast.unparse(value.value)
                                if name not in SQL_IDENTIFIERS | SQL_CONSTANTS and not ESCAPED.match(name):
                                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {{{name}}}")
    assert offenders == []


def test_ui_listens_on_this_machine_unless_told_otherwise(monkeypatch):
    from paperhouse import cli

    commands = []
    monkeypatch.setattr(cli.subprocess, "call", lambda command, **_: commands.append(command) or 0)
    cli.main(["ui"])
    cli.main(["ui", "--host", "0.0.0.0", "--port", "3001"])
    assert commands[0][commands[0].index("-h") + 1] == "127.0.0.1"
    assert commands[1][commands[1].index("-h") + 1] == "0.0.0.0" and "3001" in commands[1]


SECRET_PATTERNS = {
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "Slack token": re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    "password assignment": re.compile(r"""(?i)\b(password|passwd|secret|api_key|token)\s*[:=]\s*["'][^"'\s]{6,}["']"""),
}


def test_no_secrets_in_the_repository():
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    files = (
        [REPO / name for name in listed.stdout.split("\0") if name]
        if listed.returncode == 0
        else [p for p in REPO.rglob("*") if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts]
    )
    assert files
    found = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [
            f"{path.relative_to(REPO)}: {kind}" for kind, pattern in SECRET_PATTERNS.items() if pattern.search(text)
        ]
    assert found == []
