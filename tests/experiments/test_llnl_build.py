"""experiments/llnl_build.py: LLNL UMap and its umapsort and bfs built from source into a prefix, its one
compatibility change (register_region's ioctl check) applied or the build stopped, a prefix already built with the
change used as it is, and programs with UMap linked into them (no library could stand in for LLNL's) found."""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

import pytest

from experiments import llnl_build

# "UMAP_DIR:APPS_DIR": checkouts of github.com/LLNL/umap (v2.1.0) and github.com/LLNL/umap-apps
LLNL_SOURCES = os.environ.get("AUTOPAGER_LLNL_SOURCES", "")


def compile_c(source: str, output: Path, *flags: str) -> None:
    c_file = output.with_suffix(".c")
    c_file.write_text(source)
    subprocess.run(["gcc", str(c_file), "-o", str(output), *flags], check=True)


def fake_prefix(prefix: Path, umap_linked_into_umapsort: bool) -> None:
    """A prefix laid out as LLNL UMap's: a libumap.so with umap(), programs calling it; umapsort either loading
    libumap.so or with umap() linked into it."""
    (prefix / "lib").mkdir(parents=True)
    (prefix / "bin").mkdir()
    umap = "void *umap(void) { return 0; }\n"
    compile_c(umap, prefix / "lib" / "libumap.so", "-shared", "-fPIC", "-Wl,-soname,libumap.so")
    program = "void *umap(void);\nint main(void) { return umap() != 0; }\n"
    compile_c(program, prefix / "bin" / "bfs", f"-L{prefix / 'lib'}", "-lumap")
    if umap_linked_into_umapsort:
        compile_c(program + umap, prefix / "bin" / "umapsort")
    else:
        compile_c(program, prefix / "bin" / "umapsort", f"-L{prefix / 'lib'}", "-lumap")


# register_region as in LLNL UMap v2.1.0's src/umap/Uffd.cpp, its end
REGISTER_REGION_END = """\
  if (ioctl(m_uffd_fd, UFFDIO_REGISTER, &uffdio_register) == -1) {
    UMAP_ERROR("ioctl(UFFDIO_REGISTER) failed: " << strerror(errno));
  }

  if ((uffdio_register.ioctls & UFFD_API_RANGE_IOCTLS) != UFFD_API_RANGE_IOCTLS)
    UMAP_ERROR("unexpected userfaultfd ioctl set: " << uffdio_register.ioctls);
}
"""


def test_the_ioctl_check_requires_the_ioctls_llnl_issues_and_not_continue():
    relaxed = llnl_build.relax_ioctl_check(REGISTER_REGION_END)
    assert "UFFD_API_RANGE_IOCTLS" not in relaxed and "_UFFDIO_CONTINUE" not in relaxed
    assert "(__u64)1 << _UFFDIO_COPY | (__u64)1 << _UFFDIO_WRITEPROTECT;" in relaxed
    before, after = REGISTER_REGION_END.split(llnl_build.UFFD_CHECK)
    assert relaxed.startswith(before) and relaxed.endswith(after)  # the rest unchanged
    assert relaxed.count("if ((uffdio_register.ioctls & umap_range_ioctls) != umap_range_ioctls)\n") == 1


def test_another_llnl_version_without_the_check_stops_the_change():
    with pytest.raises(SystemExit, match="has 0 times, not once"):
        llnl_build.relax_ioctl_check(REGISTER_REGION_END.replace("UFFD_API_RANGE_IOCTLS)", "UFFD_API_IOCTLS)"))
    with pytest.raises(SystemExit, match="has 2 times"):
        llnl_build.relax_ioctl_check(REGISTER_REGION_END + REGISTER_REGION_END)


def test_the_change_is_made_in_a_copy_of_the_source_tree(tmp_path):
    source = tmp_path / "umap"
    (source / "src" / "umap").mkdir(parents=True)
    (source / ".git").mkdir()
    (source / llnl_build.UFFD_SOURCE).write_text(REGISTER_REGION_END)
    (source / "CMakeLists.txt").write_text("project(umap)\n")
    copy = tmp_path / "build" / "umap-source"
    change = llnl_build.patched_source(source, copy)
    assert (source / llnl_build.UFFD_SOURCE).read_text() == REGISTER_REGION_END
    assert (copy / llnl_build.UFFD_SOURCE).read_text() == llnl_build.relax_ioctl_check(REGISTER_REGION_END)
    assert (copy / "CMakeLists.txt").is_file() and not (copy / ".git").exists()
    assert "-  if ((uffdio_register.ioctls & UFFD_API_RANGE_IOCTLS)" in change and "+#ifndef UMAP_RO_MODE" in change


def test_a_prefix_already_built_is_used_without_the_sources(tmp_path, capsys):
    prefix = tmp_path / "llnl-umap"
    fake_prefix(prefix, umap_linked_into_umapsort=False)
    (prefix / llnl_build.PATCH_RECORD).write_text("the change\n")
    assert llnl_build.build_llnl(tmp_path / "no-umap", tmp_path / "no-umap-apps", prefix) == prefix
    assert "already built" in capsys.readouterr().out
    assert not (tmp_path / "llnl-umap.build").exists()


def test_a_prefix_built_without_the_change_is_built_again(tmp_path):
    prefix = tmp_path / "llnl-umap"
    fake_prefix(prefix, umap_linked_into_umapsort=False)
    with pytest.raises(SystemExit, match="not a checkout of LLNL/umap"):
        llnl_build.build_llnl(tmp_path / "no-umap", tmp_path / "no-umap-apps", prefix)


def test_a_program_with_umap_linked_into_it_is_found_and_the_prefix_built_again(tmp_path):
    prefix = tmp_path / "llnl-umap"
    fake_prefix(prefix, umap_linked_into_umapsort=True)
    (prefix / llnl_build.PATCH_RECORD).write_text("the change\n")
    assert llnl_build.without_shared_umap(prefix) == [prefix / "bin" / "umapsort"]
    with pytest.raises(SystemExit, match="not a checkout of LLNL/umap"):
        llnl_build.build_llnl(tmp_path / "no-umap", tmp_path / "no-umap-apps", prefix)


def test_the_two_sources_go_together_and_not_with_an_install_prefix(tmp_path):
    parser = argparse.ArgumentParser()
    parser.add_argument("--llnl")
    llnl_build.add_source_arguments(parser)
    assert llnl_build.llnl_prefix(parser.parse_args([]), tmp_path) is None
    assert llnl_build.llnl_prefix(parser.parse_args(["--llnl", str(tmp_path)]), tmp_path) == tmp_path
    with pytest.raises(SystemExit, match="go together"):
        llnl_build.llnl_prefix(parser.parse_args(["--llnl-source", "umap"]), tmp_path)
    with pytest.raises(SystemExit, match="not both"):
        llnl_build.llnl_prefix(parser.parse_args(["--llnl", "p", "--llnl-source", "a", "--llnl-apps-source", "b"]),
                               tmp_path)


@pytest.mark.skipif(not LLNL_SOURCES, reason="set AUTOPAGER_LLNL_SOURCES=UMAP_DIR:APPS_DIR (checkouts of LLNL/umap "
                    "v2.1.0 and LLNL/umap-apps) to build LLNL UMap from source (under a minute on 2 cores)")
def test_llnl_umap_and_its_programs_built_from_source_load_the_built_library(tmp_path, capsys):
    umap_source, apps_source = map(Path, LLNL_SOURCES.split(os.pathsep))
    prefix = llnl_build.build_llnl(umap_source, apps_source, tmp_path / "llnl-umap")
    assert llnl_build.missing_files(prefix) == [] and llnl_build.without_shared_umap(prefix) == []
    usage = subprocess.run([str(prefix / "bin" / "bfs"), "-h"], capture_output=True, text=True,
                           env={**os.environ, "LD_LIBRARY_PATH": str(prefix / "lib")})
    assert usage.returncode == 0 and "BFS options" in usage.stdout + usage.stderr
    # umap() registers its region (with the check as LLNL has it, it fails on kernels since 5.13); 64 pages of
    # 64 KiB in a buffer of 16, sorted and validated by umapsort (exit 1 on a wrong order)
    sort = subprocess.run([str(prefix / "bin" / "umapsort"), "-f", str(tmp_path / "sort.data"), "-p", "64", "-t", "2",
                           "-N", "1"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "LD_LIBRARY_PATH": str(prefix / "lib"), "UMAP_PAGESIZE": "65536",
                               "UMAP_BUFSIZE": "16"})
    assert sort.returncode == 0 and "Validate took" in sort.stderr, sort.stdout + sort.stderr
    assert "UFFD_API_RANGE_IOCTLS" in (prefix / llnl_build.PATCH_RECORD).read_text()
    capsys.readouterr()
    assert llnl_build.build_llnl(umap_source, apps_source, prefix) == prefix
    assert "already built" in capsys.readouterr().out
