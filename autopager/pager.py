"""The pager from Python: autopager.Pager, and autopager.memmap / autopager.empty that choose a pager.

A pager is one buffer (buffer_size bytes of pages at most: resident, in its fillers' read slots or in its
evictors' write-back slots) and one set of filler and evictor threads serving any number of arrays. Its parameters
(DESIGN.md) come, lowest precedence first, from the defaults, the UMAP_* environment variables, a profile, and
keyword arguments.
"""
from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, Mapping, Optional, Sequence, TypedDict, Union

import numpy as np

from autopager import _native
from autopager.array import (ArrayPlan, PagedArray, PathLike, ShapeLike, map_array, plan_memmap_array,
                             plan_scratch_array)
from autopager.parameters import ENV_VARS, PARAMETERS, check_params
from autopager.profiles import load_profile

if TYPE_CHECKING:
    from typing_extensions import Unpack

ProfileLike = Union[str, PathLike, Mapping[str, Any]]


class PagingParameters(TypedDict, total=False):
    """The paging parameters of DESIGN.md, as keyword arguments (sizes in bytes or as "64KiB")."""

    page_size: Union[int, str]
    fillers: int
    evictors: int
    buffer_size: Union[int, str]
    evict_high_water: int
    evict_low_water: int
    evict_retain: int
    eviction: str
    read_ahead: int
    read_ahead_run: Union[int, str]
    read_around: Union[int, str]
    max_fault_events: int
    direct_io: int
    compression: str
    huge_pages: str


class Pager:
    """A pager: one buffer and one set of threads for several arrays.

    Use it as a context manager::

        with autopager.Pager(page_size="64KiB", buffer_size="512MiB") as pager:
            a = pager.memmap("a.bin", dtype=np.float64, mode="r")
            b = pager.memmap("b.bin", dtype=np.float64, mode="r+", shape=a.shape)
            b[:] = a * 2
            print(pager.stats()["evictions"])

    Parameters (all optional; see DESIGN.md): page_size (bytes, or "64KiB"), fillers, evictors,
    buffer_size (bytes or "512MiB"), evict_high_water, evict_low_water, evict_retain (percent), eviction (the policy:
    "fifo", the default, "hotfifo", "s3fifo" or "clock"), read_ahead (reads),
    read_ahead_run (bytes, or "4MiB": the largest read-ahead read), read_around (bytes: the most read around a
    fault that starts no stream in an array that fits in the buffer, and up to 128 KiB around a thread's faults
    closing in on a spot out of core, as a binary search's do; 0: its page alone),
    max_fault_events, direct_io (1, the default: the files of memmap arrays are read and written with O_DIRECT
    where the file system allows, not through the kernel's page cache; 0: through it), compression ("none",
    "lz4", "zstd": how the pages of arrays on NBD exports are stored), huge_pages ("off", the default, "on",
    "auto": arrays' memory in 2 MiB huge pages, for a page_size of 2 MiB multiples). profile= takes them
    from a profile name, a profile file or a mapping; keyword arguments override it. A named profile or
    profile file gives the parameters its study searched: never the buffer size it was found with, unless the
    study searched that too. Several pagers with different parameters can live in one process.

    close() (or leaving the with block) writes back every dirty page and releases the pager; arrays
    still alive then keep their region mapped (and working) until they are deleted, and whatever they
    write afterwards reaches the file when they go. Memory is never unmapped under a live array.
    """

    def __init__(self, *, profile: Optional[ProfileLike] = None, **params: Unpack[PagingParameters]) -> None:
        config = native_config(resolve_parameters(profile, params))
        self._native: Optional[_native.Pager] = _native.Pager(config)
        self._config = self._native.config
        self._final_stats: Optional[Dict[str, float]] = None

    def memmap(self, filename: Union[PathLike, Sequence[PathLike]], dtype: Any = np.uint8, mode: str = "r+",
               offset: int = 0, shape: Optional[ShapeLike] = None, order: str = "C") -> PagedArray:
        """An array on a file (or on several files put end to end), with numpy.memmap's arguments.

        mode "r" reads, "r+" reads and writes (extending the file to fit shape), "w+" creates or
        overwrites the file, "c" is copy-on-write: the array can be written but the file never changes.
        """
        self._open()
        return self._map(plan_memmap_array(filename, dtype, mode, offset, shape, order, self._config))

    def empty(self, shape: ShapeLike, dtype: Any = float, order: str = "C", *, store: str = "file",
              scratch_dir: Optional[PathLike] = None) -> PagedArray:
        """A zero-filled array on an unlinked scratch file in scratch_dir (default: the temporary
        directory), which may be larger than memory, or on process memory with store="memory"."""
        self._open()
        return self._map(plan_scratch_array(shape, dtype, order, store, scratch_dir))

    def flush(self) -> None:
        """Write back every dirty page of every array of this pager. Raises OSError if a write failed."""
        self._open().flush()

    def stats(self) -> Dict[str, float]:
        """The pager's counters (faults, fills, evictions, write-backs, bytes, resident and dirty pages,
        fault service time); after close(), their values at closing."""
        if self._native is None:
            return dict(self._final_stats or {})
        return self._native.stats()

    @property
    def config(self) -> Dict[str, Any]:
        """The parameters in effect, with buffer_size in bytes."""
        c = self._config
        return {"page_size": c.page_size, "fillers": c.fillers, "evictors": c.evictors,
                "buffer_size": c.buffer_pages * c.page_size, "evict_high_water": c.evict_high_water,
                "evict_low_water": c.evict_low_water, "evict_retain": c.evict_retain, "eviction": c.eviction,
                "read_ahead": c.read_ahead, "read_ahead_run": c.read_ahead_run, "read_around": c.read_around,
                "max_fault_events": c.max_fault_events, "direct_io": int(c.direct_io), "compression": c.compression,
                "huge_pages": c.huge_pages}

    @property
    def has_write_protect(self) -> bool:
        """Whether writes are tracked per page (otherwise every page of a writable array is written back)."""
        return self._open().has_write_protect

    @property
    def closed(self) -> bool:
        return self._native is None

    def close(self) -> None:
        """Write back every dirty page and release the pager (see the class documentation for arrays
        still alive). Closing twice does nothing. Raises OSError when a page could not be written
        back; the pager then stays open, with the page, so that close() can be tried again."""
        if self._native is None:
            return
        self._native.flush()  # raises OSError when a write-back failed: the pager then stays open
        native, self._native = self._native, None
        self._final_stats = native.stats()

    def __enter__(self) -> "Pager":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        settings = ", ".join(f"{name}={value}" for name, value in self.config.items())
        return f"<autopager.Pager {state} {settings}>"

    def _map(self, plan: ArrayPlan) -> PagedArray:
        return map_array(self._open(), plan)

    def _open(self) -> _native.Pager:
        if self._native is None:
            raise ValueError("this Pager is closed; open a new autopager.Pager")
        return self._native


_default: Optional[Pager] = None
_default_lock = threading.Lock()


def _forget_inherited_default() -> None:
    # A forked child gets a default pager of its own when it first maps (the parent's serves nothing there).
    global _default, _default_lock
    _default, _default_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_inherited_default)


def default_pager() -> Pager:
    """The process's shared pager, configured from the UMAP_* environment variables, for the arrays
    opened without pager=, profile= or parameters."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Pager()
        return _default


def memmap(filename: Union[PathLike, Sequence[PathLike]], dtype: Any = np.uint8, mode: str = "r+",
           offset: int = 0, shape: Optional[ShapeLike] = None, order: str = "C", *, pager: Optional[Pager] = None,
           profile: Optional[ProfileLike] = None, **params: Unpack[PagingParameters]) -> PagedArray:
    """Like numpy.memmap, an ndarray on a file, but paged by autopager's user-space pager.

    filename, dtype, mode ("r", "r+", "w+", "c"), offset, shape and order mean what they mean for
    numpy.memmap; filename may also be a list of files, read as one array over them end to end, or an NBD
    export's URI (nbd://host:port/export, nbd+unix:///export?socket=PATH; modes "r", "r+", "c"), whose pages
    are stored as compression= says.

    The pager: pager= uses that Pager; profile= or paging parameters (page_size=, buffer_size=,
    fillers=, ...) give this array a pager of its own; otherwise the shared default_pager().

    Raises FileNotFoundError, PermissionError (the mode needs an access the file forbids), ValueError
    (a shape that does not fit the file, a bad parameter) and OSError (userfaultfd unavailable).
    """
    with _chosen_pager(pager, profile, params) as chosen:  # parameters checked before the file is touched
        return chosen._map(plan_memmap_array(filename, dtype, mode, offset, shape, order, chosen._config))


def empty(shape: ShapeLike, dtype: Any = float, order: str = "C", *, store: str = "file",
          scratch_dir: Optional[PathLike] = None, pager: Optional[Pager] = None,
          profile: Optional[ProfileLike] = None, **params: Unpack[PagingParameters]) -> PagedArray:
    """A new zero-filled array, possibly larger than memory: on an unlinked scratch file in
    scratch_dir (store="file", the default) or in process memory (store="memory"). The pager is chosen
    as for memmap; buffer_size= bounds the memory it uses."""
    with _chosen_pager(pager, profile, params) as chosen:
        return chosen._map(plan_scratch_array(shape, dtype, order, store, scratch_dir))


@contextlib.contextmanager
def _chosen_pager(pager: Optional[Pager], profile: Optional[ProfileLike],
                  params: Dict[str, Any]) -> Iterator[Pager]:
    if pager is not None:
        if profile is not None or params:
            raise ValueError("paging parameters belong to the pager when pager= is given: "
                             "pass them to autopager.Pager(...) instead")
        yield pager
    elif profile is None and not params:
        yield default_pager()
    else:
        # A pager for one array: closed once the array is made, it lives on in the array's region.
        with Pager(profile=profile, **params) as own:
            yield own


def resolve_parameters(profile: Optional[ProfileLike], params: Mapping[str, Any]) -> Dict[str, Any]:
    """The parameters of `profile` overridden by `params` (None values ignored); unknown names refused."""
    merged: Dict[str, Any] = {}
    for source in (_profile_parameters(profile) if profile is not None else {}), params:
        merged.update({name: value for name, value in source.items() if value is not None})
    unknown = sorted(set(merged) - set(PARAMETERS))
    if unknown:
        raise ValueError(f"unknown paging parameter(s) {unknown}; known: {', '.join(PARAMETERS)}")
    return merged


def native_config(params: Mapping[str, Any]) -> _native.Config:
    """The environment's configuration (UMAP_*) overridden by `params`. buffer_size is in bytes; when
    only page_size changes, the buffer keeps its size in bytes, and the page size is every region's; when only
    buffer_size changes and no page size is given (page_size, UMAP_PAGESIZE), the page sizes are the pager's
    choice for that buffer (_native.page_size_for_buffer for writable regions, read_only_page_size_for_buffer
    for read-only ones). Raises ValueError naming a bad value."""
    checked = check_params(params)
    config = _native.Config.from_environment()
    buffer_bytes = config.buffer_pages * config.page_size
    for name, value in checked.items():
        if name != "buffer_size":
            setattr(config, name, bool(value) if name == "direct_io" else value)
    if "page_size" in checked:
        config.read_only_page_size = 0
    if "buffer_size" in checked:
        buffer_bytes = checked["buffer_size"]
        if "page_size" not in checked and not _page_size_in_environment():
            config.page_size = _native.page_size_for_buffer(buffer_bytes)
            config.read_only_page_size = _native.read_only_page_size_for_buffer(buffer_bytes)
    config.buffer_pages = buffer_bytes // config.page_size
    if config.buffer_pages < 2:
        raise ValueError(f"buffer_size={buffer_bytes} bytes is less than two pages (page_size={config.page_size}); "
                         f"give a buffer of at least two pages: a filler's read slot and a resident page")
    config.validate()
    return config


def _page_size_in_environment() -> bool:
    # As the pager reads it: set to a number other than 0 (from_environment has refused any other text).
    return int(os.environ.get(ENV_VARS["page_size"], "").strip() or 0) != 0


def _profile_parameters(profile: ProfileLike) -> Mapping[str, Any]:
    if isinstance(profile, Mapping):
        return profile
    return load_profile(profile)
