"""Clear errors: each failure is a Python exception whose message names the problem and the fix."""
import os
import platform
import shutil
import textwrap

import numpy as np
import pytest

import autopager
from tests.pager_support import requires_userfaultfd, run_python


pytestmark = requires_userfaultfd


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(1000, dtype=np.int32).tofile(path)
    return path


@pytest.mark.parametrize("mode", ["r", "r+", "c"])
def test_a_missing_file(tmp_path, mode):
    missing = tmp_path / "missing.bin"
    with pytest.raises(FileNotFoundError, match=r"no such file: .*missing\.bin \(mode 'w\+' creates"):
        autopager.memmap(missing, mode=mode)


def test_a_missing_file_among_several(path, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        autopager.memmap([path, tmp_path / "missing.bin"], mode="r")


def test_a_missing_scratch_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="scratch file"):
        autopager.empty(1000, scratch_dir=tmp_path / "no" / "such" / "dir")


@pytest.mark.parametrize("mode", ["r+", "w+"])
def test_a_mode_the_file_permissions_forbid(tmp_path, mode):
    """As root, run without the capabilities that ignore file permissions."""
    directory = tmp_path / "shared"
    directory.mkdir()
    readonly = directory / "readonly.bin"
    readonly.write_bytes(b"\0" * 4096)
    readonly.chmod(0o444)
    drop = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        drop = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]
    script = textwrap.dedent(f"""
        import autopager
        try:
            autopager.memmap({str(readonly)!r}, mode={mode!r}, shape=4096)
        except PermissionError as error:
            print(error)
    """)
    result = run_python(script, tmp_path, prefix=drop)
    assert "permission denied" in result.stdout and "readonly.bin" in result.stdout, result.stderr
    assert "mode 'r' (read-only) or 'c' (copy-on-write)" in result.stdout


@pytest.mark.parametrize("mode", ["r", "c"])
def test_a_shape_larger_than_the_file(path, mode):
    with pytest.raises(ValueError, match=r"needs 8000 bytes from offset 0, but .*data\.bin holds only 4000"):
        autopager.memmap(path, dtype=np.int64, mode=mode, shape=1000)
    with pytest.raises(ValueError, match="holds only 0"):
        autopager.memmap(path, dtype=np.int32, mode=mode, offset=8000, shape=1)


def test_a_file_that_is_not_whole_items(path):
    with pytest.raises(ValueError, match="not a whole number of float64 items"):
        autopager.memmap(path, dtype=np.float64, mode="r", offset=4)


@pytest.mark.parametrize("arguments, message", [
    ({"mode": "x"}, "mode must be one of"),
    ({"mode": "w+"}, "shape must be given in mode 'w\\+'"),
    ({"offset": -1}, "offset must be >= 0"),
    ({"shape": (-1, 2)}, "negative dimensions"),
    ({"order": "X"}, "order must be 'C'"),
])
def test_bad_array_arguments(path, arguments, message):
    with pytest.raises(ValueError, match=message):
        autopager.memmap(path, **arguments)


@pytest.mark.parametrize("params, message", [
    ({"page_size": 5000}, r"page_size=5000: not a multiple of the system page"),
    ({"page_size": "64 parsecs"}, r"page_size=64 parsecs: not a size"),
    ({"evict_low_water": 95}, r"evict_low_water .*not below the high water mark"),
    ({"fillers": 0}, r"fillers=0: out of range; allowed: an integer from 1"),
    ({"fillers": -3}, r"fillers=-3: out of range; allowed: an integer from 1"),
    ({"read_ahead": 1.5}, r"read_ahead=1.5: not an integer"),
    ({"buffer_size": 100}, r"buffer_size=100: out of range; allowed: from two pages"),
    ({"buffer_size": 100000, "page_size": 65536}, r"buffer_size=100000: 1 pages of page_size=64KiB"),
    ({"page_sise": 4096}, r"unknown paging parameter\(s\) \['page_sise'\]; known: page_size"),
])
def test_bad_parameters(path, params, message):
    with pytest.raises(ValueError, match=message):
        autopager.memmap(path, mode="r", **params)
    with pytest.raises(ValueError, match=message):
        autopager.Pager(**params)


def test_parameters_and_a_pager_together(path):
    with autopager.Pager(buffer_size="1MiB") as pager:
        with pytest.raises(ValueError, match="pass them to autopager.Pager"):
            autopager.memmap(path, pager=pager, page_size=8192)


def test_a_read_only_array_refuses_writes(path):
    a = autopager.memmap(path, dtype=np.int32, mode="r", buffer_size="1MiB")
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 1


# A seccomp filter refusing userfaultfd(2) and ioctl(USERFAULTFD_IOC_NEW) on /dev/userfaultfd, with EPERM.
SECCOMP_DENY_USERFAULTFD = """
import ctypes
SYS_USERFAULTFD, SYS_IOCTL, USERFAULTFD_IOC_NEW = 323, 16, 0xAA00
RET_ERRNO_EPERM, RET_ALLOW = 0x00050001, 0x7FFF0000
class Instruction(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Instruction))]
LOAD, JUMP_IF_EQUAL, RETURN = 0x20, 0x15, 0x06
code = (Instruction * 7)(
    Instruction(LOAD, 0, 0, 0),                                 # the system call number
    Instruction(JUMP_IF_EQUAL, 3, 0, SYS_USERFAULTFD),
    Instruction(JUMP_IF_EQUAL, 0, 3, SYS_IOCTL),
    Instruction(LOAD, 0, 0, 24),                                # its second argument
    Instruction(JUMP_IF_EQUAL, 0, 1, USERFAULTFD_IOC_NEW),
    Instruction(RETURN, 0, 0, RET_ERRNO_EPERM),
    Instruction(RETURN, 0, 0, RET_ALLOW))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Program(7, code)), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp filter uses x86_64 system call numbers")
def test_userfaultfd_unavailable(path):
    script = SECCOMP_DENY_USERFAULTFD + textwrap.dedent(f"""
        import autopager
        try:
            autopager.memmap({str(path)!r}, mode="r")
        except OSError as error:
            print(type(error).__name__, error)
    """)
    result = run_python(script, path.parent)
    assert "PermissionError" in result.stdout, result.stderr
    assert "userfaultfd is not permitted" in result.stdout and "vm.unprivileged_userfaultfd=1" in result.stdout


def test_a_file_object_or_an_empty_list(path):
    with open(path, "rb") as file, pytest.raises(TypeError, match="a path or a list of paths"):
        autopager.memmap(file)
    with pytest.raises(ValueError, match="no file given"):
        autopager.memmap([])
