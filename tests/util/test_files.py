"""Atomic writes and the check of output paths (fairjudge._util._files)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

from fairjudge._util._files import (
    atomic_write,
    check_output_folder,
    check_output_paths,
    read_json_file,
)
from fairjudge._util._warnings import FairjudgeInputError


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_replaces_the_file_on_success(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with atomic_write(target) as handle:
        handle.write("new\n")
        assert target.read_text() == "old\n"  # invisible until complete
    assert target.read_text() == "new\n"
    assert _leftovers(tmp_path) == []


def test_an_error_while_writing_leaves_the_previous_file(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old complete file\n")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_write(target) as handle:
            handle.write("half of the new fi")
            raise RuntimeError("killed")
    assert target.read_text() == "old complete file\n"
    assert _leftovers(tmp_path) == []
    new = tmp_path / "new.csv"
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(new, "wb") as handle:
            handle.write(b"partial")
            raise KeyboardInterrupt
    assert not new.exists() and _leftovers(tmp_path) == []


def test_atomic_write_keeps_permissions_and_follows_links(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.html"
    link.symlink_to(target)
    with atomic_write(link) as handle:
        handle.write("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_killed_writer_leaves_the_previous_file_intact(tmp_path):
    """A process killed (SIGKILL) in the middle of writing a large table leaves the previous
    complete file, never a truncated one: the writer waits, mid-file, for the kill."""
    target = tmp_path / "verdicts.jsonl"
    target.write_text('{"item_a": "x", "item_b": "y", "winner": "a"}\n')
    before = target.read_bytes()
    script = textwrap.dedent(f"""
        import os, sys, time
        import pandas as pd
        from fairjudge.data import write_table

        original = pd.DataFrame.to_json

        def slow_to_json(self, target, *args, **kwargs):
            if isinstance(target, (str, os.PathLike)):  # a writer straight into the file
                target = open(target, "w")
            target.write('{{"item_a": "x", "item_b": "y", "wi')  # a partial record
            target.flush()
            print("writing", flush=True)
            time.sleep(60)  # killed here

        pd.DataFrame.to_json = slow_to_json
        frame = pd.DataFrame({{"item_a": ["x"] * 200000, "item_b": ["y"] * 200000,
                              "winner": ["a"] * 200000}})
        write_table(frame, {str(target)!r})
    """)
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout.readline().strip() == "writing"
        process.kill()
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
    assert target.read_bytes() == before


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "missing" / "v.jsonl", []), r"--out .*v\.jsonl: folder .*missing does not "
                                                r"exist"),
    (lambda d: (d, []), r"--out .*: is a folder; give a file name"),
    (lambda d: ((d / "file.txt") / "v.jsonl", []), r"file\.txt is not a folder"),
    (lambda d: (d / "in.jsonl", [("PAIRS", d / "in.jsonl")]),
     r"--out .*in\.jsonl: is also the input PAIRS, which would be overwritten"),
    (lambda d: (d / "sub" / ".." / "in.jsonl", [("PAIRS", d / "in.jsonl")]),
     r"is also the input PAIRS"),
])
def test_check_output_paths_errors_name_the_file(tmp_path, make, message):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "in.jsonl").write_text("x")
    (tmp_path / "sub").mkdir()
    out, inputs = make(tmp_path)
    with pytest.raises(FairjudgeInputError, match=message):
        check_output_paths([("--out", out)], inputs)


def test_two_outputs_naming_one_file_are_an_error(tmp_path):
    (tmp_path / "sub").mkdir()
    with pytest.raises(FairjudgeInputError,
                       match=r"--aggregate .*v\.jsonl: is the same file as --out"):
        check_output_paths([("--out", tmp_path / "v.jsonl"),
                            ("--aggregate", tmp_path / "sub" / ".." / "v.jsonl")])
    real = tmp_path / "real.jsonl"
    real.write_text("x")
    (tmp_path / "hard.jsonl").hardlink_to(real)
    with pytest.raises(FairjudgeInputError, match="is the same file as"):
        check_output_paths([("--out", real), ("--aggregate", tmp_path / "hard.jsonl")])
    check_output_paths([("--out", tmp_path / "a.jsonl"), ("--aggregate", None),
                        ("--html", tmp_path / "a.html")])  # distinct: fine


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permission bits do not bind root (or non-POSIX systems)")
def test_an_unwritable_folder_or_file_is_an_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    readonly = tmp_path / "readonly.jsonl"
    readonly.write_text("x")
    os.chmod(readonly, 0o444)
    os.chmod(locked, 0o555)
    try:
        with pytest.raises(FairjudgeInputError, match=r"cannot write in folder .*locked"):
            check_output_paths([("--out", locked / "v.jsonl")])
        with pytest.raises(FairjudgeInputError, match=r"readonly\.jsonl: the file exists and "
                                                      r"is read-only"):
            check_output_paths([("--out", readonly)])
    finally:
        os.chmod(locked, 0o755)


def test_an_unwritable_folder_is_an_error_even_for_root(tmp_path, monkeypatch):
    """The folder is tried with a real file, so what the OS refuses (a read-only file
    system, an ACL) is caught; the refusal is simulated here."""
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if ".fairjudge-write-test" in str(path):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(FairjudgeInputError, match=r"--html .*a\.html: cannot write in folder"):
        check_output_paths([("--html", tmp_path / "a.html")])
    with pytest.raises(FairjudgeInputError, match=r"--out .*deeper: cannot write in folder"):
        check_output_folder("--out", tmp_path / "results" / "deeper")


def test_check_output_folder(tmp_path):
    check_output_folder("--out", tmp_path / "new" / "deeper")  # created later: fine
    (tmp_path / "f").write_text("x")
    with pytest.raises(FairjudgeInputError, match=r"--out .*f: is a file; give a folder"):
        check_output_folder("--out", tmp_path / "f")
    with pytest.raises(FairjudgeInputError, match=r"f is not a folder"):
        check_output_folder("--out", tmp_path / "f" / "sub")


def test_read_json_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text('{\n  "m": {"input": 1,,}\n}')
    with pytest.raises(FairjudgeInputError, match=r"^prices\.json line 2: not valid JSON"):
        read_json_file(path, "price")
    path.write_bytes('{\n"m": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(FairjudgeInputError, match=r"^prices\.json line 2: not UTF-8 text"):
        read_json_file(path, "price")
    path.write_bytes(b'\xef\xbb\xbf{"m": 1}')  # a byte-order mark is skipped
    assert read_json_file(path, "price") == {"m": 1}
    with pytest.raises(FairjudgeInputError, match=r"is a folder; expected a JSON price file"):
        read_json_file(tmp_path, "price")
