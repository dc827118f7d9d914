"""The machine's description and the disk read-ahead setting the benchmarks change for the kernel's mmap."""
import os
from pathlib import Path

import pytest

from autopager.run.disk import bytes_read_from_disk, bytes_written_to_disk, read_ahead_file, read_ahead_of_disk, storage


def disk_setting(tmp_path: Path) -> Path:
    setting = read_ahead_file(tmp_path)
    if setting is None:
        pytest.skip(f"{tmp_path} is not on a block device with a read-ahead setting")
    if os.geteuid() != 0:
        pytest.skip("setting a disk's read-ahead needs root")
    return setting


def test_storage_states_the_disks_read_ahead(tmp_path):
    setting = read_ahead_file(tmp_path)
    if setting is None:
        pytest.skip(f"{tmp_path} is not on a block device with a read-ahead setting")
    assert f"read-ahead {setting.read_text().strip()} KiB" in storage(tmp_path)


def test_read_ahead_is_set_inside_the_block_and_restored_after(tmp_path):
    setting = disk_setting(tmp_path)
    before = setting.read_text().strip()
    changed = 256 if before != "256" else 512
    with pytest.raises(RuntimeError):
        with read_ahead_of_disk(tmp_path, changed):
            assert setting.read_text().strip() == str(changed)
            raise RuntimeError("a failed run")
    assert setting.read_text().strip() == before


def test_no_read_ahead_given_leaves_the_disk_as_it_is(tmp_path):
    setting = disk_setting(tmp_path)
    before = setting.read_text().strip()
    with read_ahead_of_disk(tmp_path, None):
        assert setting.read_text().strip() == before
    assert setting.read_text().strip() == before


def test_bytes_read_from_disk_count_a_read_past_the_page_cache(tmp_path):
    if bytes_read_from_disk(tmp_path) is None:
        pytest.skip(f"{tmp_path} is not on a block device with read counters")
    path, size = tmp_path / "data", 4 << 20
    path.write_bytes(os.urandom(size))
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)  # written back, so the next read goes to the disk
        before = bytes_read_from_disk(tmp_path)
        assert len(os.pread(fd, size, 0)) == size
        after = bytes_read_from_disk(tmp_path)
    finally:
        os.close(fd)
    assert after - before >= size


def test_bytes_written_to_disk_count_a_write_once_synced(tmp_path):
    if bytes_written_to_disk(tmp_path) is None:
        pytest.skip(f"{tmp_path} is not on a block device with write counters")
    size = 4 << 20
    before = bytes_written_to_disk(tmp_path)
    with open(tmp_path / "data", "wb") as out:
        out.write(os.urandom(size))
        out.flush()
        os.fsync(out.fileno())
    assert bytes_written_to_disk(tmp_path) - before >= size
