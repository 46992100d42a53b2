"""Whether a process runs, by its id: the one check the warm dbt processes, the runs that start
them and the Superset server's stop share."""

from __future__ import annotations

from pathlib import Path


def running(pid: int) -> bool:
    """Whether the process runs. One that ended is not running, whether or not it was waited for: a
    child that ended stays a zombie (state ``Z``) until its parent waits for it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
