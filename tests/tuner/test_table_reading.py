"""A study's table is read whole however long its fields (a failed trial's output) and with the byte-order mark a
spreadsheet saves it with: neither leaves the study unresumable or its trials discarded."""
import io

from autopager.tuner.table import StudyTable
from autopager.tuner.trial import Kind, Status, Trial

TRIALS = [Trial(0, Kind.DEFAULT, Status.OK, 1.5, {"page_size": 4096}, started="t0"),
          Trial(1, Kind.SEARCH, Status.FAILED, None, {"page_size": 8192}, started="t1",
                error="exited with status 1", stderr_tail="x" * (300 << 10)),
          Trial(2, Kind.SEARCH, Status.OK, 1.0, {"page_size": 16384}, started="t2")]


def written(tmp_path) -> StudyTable:
    table = StudyTable(tmp_path / "trials.csv")
    for trial in TRIALS:
        table.append(trial)
    return table


def read(tmp_path) -> tuple[list[Trial], str]:
    report = io.StringIO()
    table = StudyTable(tmp_path / "trials.csv", report)
    return table.rows, report.getvalue()


def test_a_field_over_128_KiB_is_read_back(tmp_path):
    written(tmp_path)
    rows, report = read(tmp_path)
    assert report == ""
    assert [row.number for row in rows] == [0, 1, 2] and rows[1].stderr_tail == "x" * (300 << 10)


def test_a_table_saved_with_a_byte_order_mark_keeps_its_rows(tmp_path):
    path = written(tmp_path).path
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    rows, report = read(tmp_path)
    assert report == "" and [row.number for row in rows] == [0, 1, 2]
    assert [row.value for row in rows] == [1.5, None, 1.0]
