"""Folders built from the warehouse are swapped in whole, or not at all."""

from pathlib import Path

import pytest

from paperhouse.warehouse.publishing import publish_folder


def _writer(files: dict[str, str]):
    def write(folder: Path) -> None:
        for name, text in files.items():
            (folder / name).write_text(text)

    return write


def test_a_failed_build_leaves_the_published_version_whole(tmp_path):
    target = tmp_path / "marts"
    publish_folder(target, _writer({"a.parquet": "v1", "b.parquet": "v1"}))

    def half_written(folder: Path) -> None:
        (folder / "a.parquet").write_text("v2")
        raise RuntimeError("killed half-way")

    with pytest.raises(RuntimeError):
        publish_folder(target, half_written)
    assert {p.name: p.read_text() for p in target.iterdir()} == {"a.parquet": "v1", "b.parquet": "v1"}
    assert len(list((tmp_path / ".marts.versions").iterdir())) == 1  # the failed build left nothing behind


def test_each_publish_swaps_the_link_and_keeps_the_version_it_replaced(tmp_path):
    target = tmp_path / "dashboard"
    target.mkdir()
    (target / "old.html").write_text("made by hand")
    (tmp_path / ".dashboard.versions").mkdir()
    (tmp_path / ".dashboard.versions" / "left-by-a-killed-build").mkdir()
    versions = tmp_path / ".dashboard.versions"
    publish_folder(target, _writer({"index.html": "v0"}))
    kept = set(versions.iterdir()) - {target.resolve()}
    assert [sorted(p.name for p in folder.iterdir()) for folder in kept] == [["old.html"]]  # the hand-made folder
    for version in range(1, 4):
        before = target.resolve()
        publish_folder(target, _writer({"index.html": f"v{version}"}))
        assert target.is_symlink() and (target / "index.html").read_text() == f"v{version}"
        assert set(versions.iterdir()) == {target.resolve(), before}
    assert sorted(p.name for p in target.iterdir()) == ["index.html"]
