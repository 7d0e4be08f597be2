"""``neurips26-sfd convert``: a file, a directory in parallel, a file it must skip."""

import json
import shutil

import pytest

from neurips26.papers.sfd_edgar.cli import main
from neurips26.papers.sfd_edgar.experiment import data_dir, load_golden


def test_convert_directory_in_parallel(tmp_path, capsys):
    src = tmp_path / "in"
    (src / "sub").mkdir(parents=True)
    for name in ("AppleTable", "OracleTable"):
        shutil.copy(data_dir() / f"{name}.html", src / f"{name}.html")
    shutil.copy(data_dir() / "ixbrl.simple.html", src / "sub" / "ixbrl.simple.htm")
    (src / "scan.htm").write_bytes(b"%PDF-1.5 not html")
    (src / "empty.html").write_text("")
    out = tmp_path / "out"
    status = main(["convert", str(src), "-o", str(out), "--jobs", "2", "--quiet"])
    assert status == 1  # the PDF is skipped and reported
    assert (out / "AppleTable.md").read_text() == load_golden("AppleTable")
    assert (out / "sub" / "ixbrl.simple.md").read_text() == load_golden("ixbrl.simple")
    assert (out / "empty.md").read_text() == ""
    report = [json.loads(line) for line in (out / "conversion_report.jsonl").open()]
    assert len(report) == 5
    bad = [r for r in report if not r["ok"]]
    assert len(bad) == 1 and "PDF" in bad[0]["error"]
    empty = next(r for r in report if r["file"].endswith("empty.html"))
    assert empty["warnings"] == ["empty filing: nothing to convert"]
    assert "skipped" in capsys.readouterr().err


def test_convert_single_file(tmp_path):
    target = tmp_path / "apple.md"
    assert main(["convert", str(data_dir() / "AppleTable.html"), "-o", str(target), "-q"]) == 0
    assert target.read_text() == load_golden("AppleTable")


def test_bad_arguments(tmp_path):
    with pytest.raises(SystemExit, match="does not exist"):
        main(["convert", str(tmp_path / "missing"), "-o", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="jobs"):
        main(["convert", str(tmp_path), "-o", str(tmp_path / "o"), "--jobs", "0"])
    with pytest.raises(SystemExit, match=r"no \.htm"):
        main(["convert", str(tmp_path), "-o", str(tmp_path / "o")])
    with pytest.raises(SystemExit):
        main(["convert", str(tmp_path), "-o", str(tmp_path / "o"), "--currency", "yen"])
