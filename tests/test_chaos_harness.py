"""The chaos harness's own rule for a checkpoint a kill cut in its first offset write (no broker,
no Spark): only leftovers of a checkpoint that logged no batch are removed."""

from __future__ import annotations

from pathlib import Path

from chaos.run import clear_unlogged_start
from chaos.sinks import committed_epochs


def _files(root: Path, *names: str) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")


def test_a_new_checkpoint_is_left_alone(tmp_path: Path) -> None:
    assert clear_unlogged_start(tmp_path / "missing") == 0
    (tmp_path / "offsets").mkdir()
    assert clear_unlogged_start(tmp_path) == 0


def test_the_leftovers_of_a_cut_first_write_are_removed(tmp_path: Path) -> None:
    # what a kill during the first offset write left (seen in a real run)
    _files(tmp_path, "offsets/.0.c71cba64.tmp", "offsets/..0.c71cba64.tmp.crc", "sources/0/meta")
    assert clear_unlogged_start(tmp_path) == 2
    assert list((tmp_path / "offsets").iterdir()) == []
    assert (tmp_path / "sources/0/meta").exists()  # the sources' own files are not Spark's check


def test_a_checkpoint_with_a_logged_batch_is_never_touched(tmp_path: Path) -> None:
    _files(tmp_path, "offsets/0", "offsets/.0.crc", "commits/.0.e05d.tmp")
    assert clear_unlogged_start(tmp_path) == 0
    assert sorted(f.name for f in (tmp_path / "offsets").iterdir()) == [".0.crc", "0"]
    assert [f.name for f in (tmp_path / "commits").iterdir()] == [".0.e05d.tmp"]


def test_a_commit_without_its_offset_is_left_for_spark_to_refuse(tmp_path: Path) -> None:
    # not what a kill leaves (a commit follows its offset): the run must fail loudly, not be cleared
    _files(tmp_path, "commits/0", "commits/.0.crc")
    (tmp_path / "offsets").mkdir()
    assert clear_unlogged_start(tmp_path) == 0
    assert sorted(f.name for f in (tmp_path / "commits").iterdir()) == [".0.crc", "0"]


def test_epochs_whose_commit_files_spark_deleted_still_count_as_committed(tmp_path: Path) -> None:
    # Spark keeps the last 100 commit files: a long real-time run's first epochs lose theirs, and
    # counting only the files left took their sink output for uncommitted (and removed it)
    _files(tmp_path, *(f"commits/{n}" for n in range(126, 131)), "commits/.130.crc")
    assert committed_epochs(str(tmp_path)) == set(range(131))
