"""Arrays whose memory is a pager region: numpy.memmap's arguments and modes on autopager's pager.

An array is planned (its files checked, created or extended, its store opened), then mapped on a
native pager. Users reach this through autopager.memmap, autopager.empty and autopager.Pager
(pager.py), which choose the pager.
"""
from __future__ import annotations

import errno
import math
import operator
import os
import tempfile
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from autopager import _native

PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]
ShapeLike = Union[int, Sequence[int]]

# numpy.memmap's modes and their long spellings
MODES = {"r": "r", "readonly": "r", "r+": "r+", "readwrite": "r+", "w+": "w+", "write": "w+",
         "c": "c", "copyonwrite": "c"}
_OPEN_FLAGS = {"r": "rb", "c": "rb", "r+": "r+b", "w+": "w+b"}

# Regions still mapped in this process. A forked child does not inherit their memory (the pager maps
# them MADV_DONTFORK): there, touching one of these arrays is SIGSEGV.
_mapped_regions: "weakref.WeakSet[_native.Region]" = weakref.WeakSet()


def _warn_before_fork() -> None:
    if len(_mapped_regions):
        warnings.warn(f"forking with {len(_mapped_regions)} autopager array region(s) mapped: the child cannot use "
                      f"them (touching one is SIGSEGV; it may map the files again itself); start worker processes "
                      f"with multiprocessing's 'spawn' or 'forkserver' method instead", RuntimeWarning, stacklevel=2)


os.register_at_fork(before=_warn_before_fork)


class PagedArray(np.ndarray):
    """An ndarray whose memory is a region mapped by an autopager pager (autopager.memmap returns one).

    It behaves like numpy.memmap: slices and views share the region and keep it mapped; results of
    computations and fancy indexing are plain ndarrays. The region is unmapped (its dirty pages
    written back) once no array, view or memoryview uses it.

    Unlike numpy.memmap, it does not survive fork(): the child has no mapping there, touching the array
    is SIGSEGV, and nothing the child does reaches the file (forking warns; the child may map the file
    again, or give multiprocessing the 'spawn' or 'forkserver' start method).

    Attributes:
        filename: absolute path of the file (a list for a multi-file array), None for scratch arrays.
        offset: byte offset of the array in the file (or in the files put end to end).
        mode: "r", "r+", "w+" or "c".
        region: the mapped region (autopager._native.Region); None for a zero-size array.
    """

    filename: Union[str, list, None] = None
    offset: Optional[int] = None
    mode: Optional[str] = None
    region: Optional[_native.Region] = None

    def __array_finalize__(self, obj: Any) -> None:
        if isinstance(obj, PagedArray) and obj.region is not None and np.may_share_memory(self, obj):
            self.region = obj.region
            self.filename = obj.filename
            self.offset = obj.offset
            self.mode = obj.mode

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        # A ufunc's result: in place (out= a paged array) stays paged, anything new is a plain ndarray.
        if isinstance(array, PagedArray) and array.region is not None:
            return array
        result = array.view(np.ndarray) if isinstance(array, np.ndarray) else array
        return result[()] if return_scalar else result

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        if isinstance(item, PagedArray) and item.region is None:
            return item.view(np.ndarray)
        return item

    def flush(self) -> None:
        """Write the changes of the whole region back to its file (like numpy.memmap.flush).

        Raises OSError when a write failed. Does nothing in mode "c": changes stay in memory.
        """
        if self.region is not None:
            self.region.flush()


def normalize_mode(mode: str) -> str:
    try:
        return MODES[mode]
    except (KeyError, TypeError):
        raise ValueError(f"mode must be one of {sorted(MODES)} (got {mode!r})") from None


def normalize_shape(shape: Optional[ShapeLike]) -> Optional[Tuple[int, ...]]:
    if shape is None:
        return None
    dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(map(operator.index, shape))
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimensions are not allowed (shape={dims})")
    return dims


def normalize_order(order: str) -> str:
    if order not in ("C", "F"):
        raise ValueError(f"order must be 'C' (row-major) or 'F' (column-major) (got {order!r})")
    return order


@dataclass
class ArrayPlan:
    """An array ready to be mapped: its store (checked, created or extended), layout and attributes.
    The paging parameters are checked (the pager made) before a plan touches any file; a bad file or shape is
    reported before any region is mapped."""

    store: Optional[_native.Store]  # None for a zero-size array
    nbytes: int
    shape: Tuple[int, ...]
    dtype: np.dtype
    order: str
    writable: bool
    filename: Union[str, list, None]
    offset: int
    mode: str


def plan_memmap_array(filename: Union[PathLike, Sequence[PathLike]], dtype: Any, mode: str, offset: int,
                      shape: Optional[ShapeLike], order: str, config: _native.Config) -> ArrayPlan:
    """memmap's array for `filename`: an NBD export when it is an NBD URI (plan_nbd_array), else file(s)."""
    if isinstance(filename, str) and _native.is_nbd_uri(filename):
        return plan_nbd_array(filename, dtype, mode, offset, shape, order, config)
    return plan_file_array(filename, dtype, mode, offset, shape, order, config.direct_io)


def plan_nbd_array(uri: str, dtype: Any, mode: str, offset: int, shape: Optional[ShapeLike], order: str,
                   config: _native.Config) -> ArrayPlan:
    """numpy.memmap's arguments on an NBD export (nbd://host:port/export, nbd+unix:///?socket=PATH), its pages
    stored as config.compression says. An export has a fixed size and cannot be created: modes "r", "r+" and
    "c"; a shape past the export's end is refused."""
    dtype, mode, offset, shape, order = _memmap_arguments(dtype, mode, offset, shape, order)
    if mode == "w+":
        raise ValueError(f"mode 'w+' creates a file; the NBD export {uri} exists with its size: use mode 'r+'")
    try:
        export = _native.nbd_store(uri, config)
    except RuntimeError as error:
        raise OSError(errno.ECONNREFUSED, str(error)) from None
    available = export.size - offset
    if shape is None:
        shape = _whole_items(available, offset, dtype, uri)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > available:
        raise ValueError(f"shape {shape} of {dtype} needs {nbytes} bytes from offset {offset}, but the NBD export "
                         f"{uri} holds only {max(available, 0)} there (an export does not grow)")
    store = None
    if nbytes > 0:
        store = _native.window_store(export, offset, nbytes) if offset or nbytes < export.size else export
        if mode == "c":
            store = _native.copy_on_write_store(store, tempfile.gettempdir())
        elif mode == "r+" and not store.writable:
            raise PermissionError(errno.EROFS, f"the NBD export {uri} is read-only: open it with mode 'r' or 'c'")
    return ArrayPlan(store, nbytes, shape, dtype, order, writable=mode != "r", filename=uri, offset=offset, mode=mode)


def plan_file_array(filename: Union[PathLike, Sequence[PathLike]], dtype: Any, mode: str, offset: int,
                    shape: Optional[ShapeLike], order: str, direct: bool = False) -> ArrayPlan:
    """numpy.memmap(filename, dtype, mode, offset, shape, order); a list of files is one array over the
    files put end to end (offset counts from the start of the first). ``direct``: O_DIRECT where the file
    system has it."""
    dtype, mode, offset, shape, order = _memmap_arguments(dtype, mode, offset, shape, order)
    paths = _paths(filename)
    if mode == "w+" and shape is None:
        raise ValueError("shape must be given in mode 'w+' (it sizes the new file)")
    if mode == "w+" and len(paths) > 1:
        raise ValueError("mode 'w+' creates one file; open several existing files with mode 'r', 'r+' or 'c'")

    sizes = [_open_for_mode(path, mode) for path in paths]
    available = sum(sizes) - offset
    if shape is None:
        shape = _whole_items(available, offset, dtype, _describe(paths))
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > available:
        if mode in ("r", "c"):
            raise ValueError(f"shape {shape} of {dtype} needs {nbytes} bytes from offset {offset}, but "
                             f"{_describe(paths)} holds only {max(available, 0)} there; pass a smaller shape, "
                             f"or open with mode 'r+' to extend the file")
        sizes[-1] += nbytes - available
        os.truncate(paths[-1], sizes[-1])

    store = None
    if nbytes > 0:
        writable_file = mode in ("r+", "w+")
        if len(paths) == 1:
            store = _native.file_store(paths[0], writable_file, offset, nbytes, direct)
        else:
            store = _native.multi_file_store(_segments(paths, sizes, offset, nbytes), writable_file, direct)
        if mode == "c":
            store = _native.copy_on_write_store(store, tempfile.gettempdir())
    single = isinstance(filename, (str, bytes, os.PathLike))
    return ArrayPlan(store, nbytes, shape, dtype, order, writable=mode != "r",
                     filename=paths[0] if single else paths, offset=offset, mode=mode)


def plan_scratch_array(shape: ShapeLike, dtype: Any, order: str, store: str,
                       scratch_dir: Optional[PathLike]) -> ArrayPlan:
    """A zero-filled array on a scratch file (store="file": may exceed memory) or in memory (store="memory")."""
    if store not in ("file", "memory"):
        raise ValueError(f"store must be 'file' (a scratch file) or 'memory' (got {store!r})")
    shape = normalize_shape(shape)
    dtype = np.dtype(dtype)
    order = normalize_order(order)
    nbytes = math.prod(shape) * dtype.itemsize
    native_store = None
    if nbytes > 0 and store == "file":
        directory = os.fsdecode(scratch_dir) if scratch_dir is not None else tempfile.gettempdir()
        native_store = _native.scratch_store(directory, nbytes)
    elif nbytes > 0:
        native_store = _native.memory_store(nbytes)
    return ArrayPlan(native_store, nbytes, shape, dtype, order, writable=True, filename=None, offset=0, mode="w+")


def map_array(pager: _native.Pager, plan: ArrayPlan) -> PagedArray:
    """The planned array, on a new region of `pager`."""
    if plan.store is None:
        array = np.ndarray.__new__(PagedArray, plan.shape, dtype=plan.dtype, order=plan.order)
    else:
        region = _native.Region(pager, plan.store, plan.nbytes, plan.writable)
        _mapped_regions.add(region)
        array = np.ndarray.__new__(PagedArray, plan.shape, dtype=plan.dtype, buffer=region, order=plan.order)
        array.region = region
    array.filename, array.offset, array.mode = plan.filename, plan.offset, plan.mode
    return array


def _memmap_arguments(dtype: Any, mode: str, offset: int, shape: Optional[ShapeLike],
                      order: str) -> Tuple[np.dtype, str, int, Optional[Tuple[int, ...]], str]:
    """numpy.memmap's dtype, mode, offset, shape and order in their normal forms; a negative offset refused."""
    offset = operator.index(offset)
    if offset < 0:
        raise ValueError(f"offset must be >= 0 (got {offset})")
    return np.dtype(dtype), normalize_mode(mode), offset, normalize_shape(shape), normalize_order(order)


def _whole_items(available: int, offset: int, dtype: np.dtype, where: str) -> Tuple[int]:
    """The shape of the `available` bytes after `offset` of `where`, which must be whole items of dtype."""
    if available < 0:
        raise ValueError(f"offset {offset} is past the end of {where} ({offset + available} bytes); pass an offset "
                         f"within it, or shape= with mode 'r+' to extend the file")
    if available % dtype.itemsize:
        raise ValueError(f"the {available} bytes after offset {offset} of {where} are not a whole number of "
                         f"{dtype} items ({dtype.itemsize} bytes); pass shape= or another offset")
    return (available // dtype.itemsize,)


def _paths(filename: Union[PathLike, Sequence[PathLike]]) -> list:
    names = [filename] if isinstance(filename, (str, bytes, os.PathLike)) else filename
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, (str, bytes, os.PathLike)) for n in names):
        raise TypeError(f"filename must be a path or a list of paths (got {filename!r})")
    if not names:
        raise ValueError("no file given: filename is an empty list")
    return [os.path.abspath(os.fsdecode(name)) for name in names]


def _open_for_mode(path: str, mode: str) -> int:
    """The file's size, after opening it as the mode needs (creating or truncating it in 'w+')."""
    try:
        with open(path, _OPEN_FLAGS[mode]) as file:
            return os.fstat(file.fileno()).st_size
    except FileNotFoundError:
        fix = "its directory does not exist" if mode == "w+" else "mode 'w+' creates a new file"
        raise FileNotFoundError(errno.ENOENT, f"no such file: {path} ({fix})", path) from None
    except PermissionError:
        if mode in ("r+", "w+"):
            fix = f"mode {mode!r} writes to it: open it with mode 'r' (read-only) or 'c' (copy-on-write), " \
                  f"or make it writable"
        else:
            fix = "make it readable"
        raise PermissionError(errno.EACCES, f"permission denied: {path} ({fix})", path) from None


def _segments(paths: list, sizes: list, offset: int, nbytes: int) -> list:
    """(path, offset, length) pieces of the files that hold bytes [offset, offset + nbytes) of their union."""
    segments = []
    skip, remaining = offset, nbytes
    for path, size in zip(paths, sizes):
        if remaining == 0:
            break
        if skip >= size:
            skip -= size
            continue
        take = min(size - skip, remaining)
        segments.append((path, skip, take))
        skip, remaining = 0, remaining - take
    return segments


def _describe(paths: list) -> str:
    return paths[0] if len(paths) == 1 else f"the {len(paths)} files"
