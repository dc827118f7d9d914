"""LLNL UMap and its two programs, umapsort and bfs, built from source into an install prefix.

The library comes from a checkout of github.com/LLNL/umap (v2.1.0), the programs from one of
github.com/LLNL/umap-apps, built against it: ``PREFIX/lib/libumap.so``, ``PREFIX/bin/umapsort`` and
``PREFIX/bin/bfs`` (umap-apps's run_bfs). Both are built out of tree, in a directory beside the prefix, and
the checkouts are only read. umap-apps's own top level also builds programs the benchmark does not run, one of
them (median_calculation) with a data file in Git LFS that some checkouts lack, so a top level generated in the
build directory sets what umap-apps's sets and adds only the two programs' directories.

LLNL UMap is built from a copy of its checkout in the build directory, with one check in its code changed: after
UFFDIO_REGISTER, ``register_region`` in src/umap/Uffd.cpp requires every ioctl of the kernel headers'
UFFD_API_RANGE_IOCTLS to be reported for the range, and that mask has had UFFDIO_CONTINUE since Linux 5.13, which
the kernel reports only for a range registered for minor faults (LLNL registers for missing pages and
write-protection): every umap() then fails ("unexpected userfaultfd ioctl set: 380" on Linux 6.18). The check
requires instead the ioctls LLNL issues on a registered range, UFFDIO_COPY and UFFDIO_WRITEPROTECT (UFFDIO_COPY
alone in LLNL's read-only mode, built against headers without write-protection). The change is printed and written
into ``PREFIX/PATCHED.txt``; a different LLNL version, without that line, stops the build. A prefix already built
with the change is used as it is (delete it to build again); one without ``PATCHED.txt`` is built again.
"""
from __future__ import annotations

import argparse
import difflib
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

PROGRAMS = ("umapsort", "bfs")  # in PREFIX/bin

# What umap-apps's top-level CMakeLists.txt sets, with only umapsort and bfs; UMAP_INSTALL_PATH and
# UMAP_APPS_SOURCE are given on the command line.
APPS_TOP_LEVEL = """\
cmake_minimum_required(VERSION 3.5.1)
project(umap-apps LANGUAGES CXX C)
set(CMAKE_CXX_STANDARD 11)
set(CMAKE_C_STANDARD 99)
set(UMAPINCLUDEDIRS "${UMAP_INSTALL_PATH}/include")
set(UMAPLIBDIR "${UMAP_INSTALL_PATH}/lib")
add_subdirectory("${UMAP_APPS_SOURCE}/src/umapsort" umapsort)
add_subdirectory("${UMAP_APPS_SOURCE}/src/bfs" bfs)
# umap-apps links umapsort with libumap.a, which would put LLNL UMap inside the program; linked with
# libumap.so, as bfs is, another libumap.so on the library path stands in for LLNL's.
set_property(TARGET umapsort PROPERTY LINK_LIBRARIES "${UMAPLIBDIR}/libumap.so")
"""


# LLNL UMap's register_region (src/umap/Uffd.cpp, v2.1.0): the check of the ioctls UFFDIO_REGISTER reports, and
# what it becomes, requiring the ioctls LLNL issues on a registered range rather than UFFD_API_RANGE_IOCTLS, whose
# UFFDIO_CONTINUE (Linux 5.13 and later headers) a kernel reports only for a registration for minor faults.
UFFD_SOURCE = Path("src") / "umap" / "Uffd.cpp"
UFFD_CHECK = "  if ((uffdio_register.ioctls & UFFD_API_RANGE_IOCTLS) != UFFD_API_RANGE_IOCTLS)\n"
UFFD_CHECK_RELAXED = """\
#ifndef UMAP_RO_MODE
  const __u64 umap_range_ioctls = (__u64)1 << _UFFDIO_COPY | (__u64)1 << _UFFDIO_WRITEPROTECT;
#else
  const __u64 umap_range_ioctls = (__u64)1 << _UFFDIO_COPY;
#endif
  if ((uffdio_register.ioctls & umap_range_ioctls) != umap_range_ioctls)
"""
PATCH_REASON = ("register_region's check of the ioctls UFFDIO_REGISTER reports requires only UFFDIO_COPY and "
                "UFFDIO_WRITEPROTECT, the ones LLNL issues, instead of all of UFFD_API_RANGE_IOCTLS, whose "
                "UFFDIO_CONTINUE kernels since 5.13 report only for ranges registered for minor faults (without "
                "the change every umap() fails: unexpected userfaultfd ioctl set)")
PATCH_RECORD = "PATCHED.txt"  # in the prefix: what was changed in LLNL's code


def relax_ioctl_check(text: str) -> str:
    """Uffd.cpp's ``text`` with register_region's ioctl check relaxed; exits when the check is not there exactly
    once (another version of LLNL UMap)."""
    count = text.count(UFFD_CHECK)
    if count != 1:
        sys.exit(f"llnl_build: {UFFD_SOURCE} has {count} times, not once, the line to change "
                 f"({UFFD_CHECK.strip()!r}): not LLNL UMap v2.1.0? The change: {PATCH_REASON}")
    return text.replace(UFFD_CHECK, UFFD_CHECK_RELAXED)


def patched_source(umap_source: Path, copy: Path) -> str:
    """Copy ``umap_source`` (without .git) to ``copy`` and relax its ioctl check; returns the change as a diff."""
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(umap_source, copy, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    original = (copy / UFFD_SOURCE).read_text()
    relaxed = relax_ioctl_check(original)
    (copy / UFFD_SOURCE).write_text(relaxed)
    return "".join(difflib.unified_diff(original.splitlines(keepends=True), relaxed.splitlines(keepends=True),
                                        f"a/{UFFD_SOURCE}", f"b/{UFFD_SOURCE}"))


def missing_files(prefix: Path, programs: tuple[str, ...] = PROGRAMS) -> list[Path]:
    """What of LLNL UMap's library and these programs is not in ``prefix``."""
    wanted = [prefix / "lib" / "libumap.so", *(prefix / "bin" / program for program in programs)]
    return [path for path in wanted if not path.exists()]


def without_shared_umap(prefix: Path, programs: tuple[str, ...] = PROGRAMS) -> list[Path]:
    """The programs in ``prefix`` that do not load libumap.so (UMap linked into them): another library on the
    library path could not stand in for LLNL's there."""
    def loads_libumap(program: Path) -> bool:
        dynamic = subprocess.run(["readelf", "--dynamic", str(program)], capture_output=True, text=True)
        return "[libumap.so]" in dynamic.stdout
    return [prefix / "bin" / program for program in programs if not loads_libumap(prefix / "bin" / program)]


def run_step(command: list[str], log: Path) -> None:
    """Run one build command, its output in ``log``; on a failure, exit saying which command and where its log is."""
    print(f"llnl_build: {shlex.join(command)}", flush=True)
    with open(log, "w") as out:
        returncode = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    if returncode != 0:
        sys.exit(f"llnl_build: failed (exit {returncode}): {shlex.join(command)}\nllnl_build: its output: {log}")


def build_llnl(umap_source: Path, apps_source: Path, prefix: Path) -> Path:
    """Build LLNL UMap from ``umap_source`` and umapsort and bfs from ``apps_source`` into ``prefix``, or use the
    prefix as it is when it already has them; returns the prefix."""
    prefix = prefix.resolve()
    if not missing_files(prefix) and not without_shared_umap(prefix) and (prefix / PATCH_RECORD).is_file():
        print(f"llnl_build: LLNL UMap already built in {prefix}", flush=True)
        return prefix
    umap_source, apps_source = umap_source.resolve(), apps_source.resolve()
    if not (umap_source / "src" / "umap" / "umap.h").is_file():
        sys.exit(f"llnl_build: {umap_source} is not a checkout of LLNL/umap (no src/umap/umap.h)")
    for program in ("umapsort", "bfs"):
        if not (apps_source / "src" / program / "CMakeLists.txt").is_file():
            sys.exit(f"llnl_build: {apps_source} is not a checkout of LLNL/umap-apps (no src/{program}/CMakeLists.txt)")
    build = prefix.with_name(prefix.name + ".build")
    (prefix / PATCH_RECORD).unlink(missing_ok=True)
    umap_copy = build / "umap-source"
    shutil.rmtree(build / "umap", ignore_errors=True)  # configured, maybe, from another source tree
    change = patched_source(umap_source, umap_copy)
    print(f"llnl_build: changed {umap_copy / UFFD_SOURCE} (a copy of {umap_source}): {PATCH_REASON}", flush=True)
    apps_top_level = build / "apps-top-level"
    apps_top_level.mkdir(parents=True, exist_ok=True)
    (apps_top_level / "CMakeLists.txt").write_text(APPS_TOP_LEVEL)
    print(f"llnl_build: building LLNL UMap into {prefix} (in {build}; a few minutes)", flush=True)
    release = ["-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={prefix}"]
    for name, configure in [
            ("umap", ["cmake", "-S", str(umap_copy), "-B", str(build / "umap"), *release, "-DENABLE_TESTS=Off"]),
            ("apps", ["cmake", "-S", str(apps_top_level), "-B", str(build / "apps"), *release,
                      f"-DUMAP_INSTALL_PATH={prefix}", f"-DUMAP_APPS_SOURCE={apps_source}"])]:
        run_step(configure, build / f"{name}-configure.log")
        run_step(["cmake", "--build", str(build / name)], build / f"{name}-build.log")
        run_step(["cmake", "--install", str(build / name)], build / f"{name}-install.log")
    bfs = prefix / "bin" / "bfs"
    bfs.unlink(missing_ok=True)
    bfs.symlink_to("run_bfs")  # umap-apps's name for its bfs program
    (prefix / PATCH_RECORD).write_text(f"LLNL UMap built from {umap_source}, its code unchanged but for one check: "
                                       f"{PATCH_REASON}.\n\n{change}")
    print(f"llnl_build: LLNL UMap built in {prefix}", flush=True)
    return prefix


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--llnl-source", type=Path, metavar="DIR", help="a checkout of github.com/LLNL/umap (v2.1.0): "
                        "with --llnl-apps-source, LLNL UMap is built from source (once, into DATA_DIR/llnl-umap) "
                        "instead of given by --llnl")
    parser.add_argument("--llnl-apps-source", type=Path, metavar="DIR",
                        help="a checkout of github.com/LLNL/umap-apps (umapsort and bfs), with --llnl-source")


def llnl_prefix(args: argparse.Namespace, data_dir: Path) -> Path | None:
    """LLNL UMap's install prefix: ``--llnl``'s, or built from ``--llnl-source`` and ``--llnl-apps-source`` into
    ``data_dir/llnl-umap``; None when neither is given."""
    if (args.llnl_source is None) != (args.llnl_apps_source is None):
        sys.exit("--llnl-source and --llnl-apps-source go together: LLNL UMap's library comes from the first, its "
                 "umapsort and bfs programs from the second")
    if args.llnl_source is None:
        return Path(args.llnl).resolve() if args.llnl else None
    if args.llnl:
        sys.exit("give LLNL UMap either as an install prefix (--llnl) or as sources (--llnl-source), not both")
    return build_llnl(args.llnl_source, args.llnl_apps_source, data_dir / "llnl-umap")
