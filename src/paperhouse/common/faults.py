"""Failpoints: named places where a run can be made to die on purpose, to prove it is crash safe.

``PAPERHOUSE_FAILPOINTS="name[@n][,name[@n]...]"`` makes the process SIGKILL itself the n-th
time (default: the first) it reaches ``failpoint(name)``: no cleanup, no ``finally``, exactly
what the OOM killer or a power cut does. Unset (always, outside tests), a failpoint costs one
dictionary look-up. ``tests/test_reliability.py`` kills runs this way at each stage.

Failpoints in the code: ``ingest.before_commit`` (the parse cache and source records are written
but not committed), ``dedup.before_commit``, ``dbt.event`` (once per dbt event: ``dbt.event@30``
dies in the middle of ``dbt build``, leaving dbt itself orphaned), ``publish.copy_chunk`` (once
per MiB copied into the staging file), ``publish.before_replace``.
"""

from __future__ import annotations

import os
import signal

from paperhouse.settings import settings


def _parse(spec: str) -> dict[str, int]:
    points = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, nth = item.partition("@")
        points[name] = int(nth or 1)
    return points


_ARMED = _parse(settings().failpoints)
_HITS: dict[str, int] = {}


def failpoint(name: str) -> None:
    if name not in _ARMED:
        return
    _HITS[name] = _HITS.get(name, 0) + 1
    if _HITS[name] == _ARMED[name]:
        os.kill(os.getpid(), signal.SIGKILL)
