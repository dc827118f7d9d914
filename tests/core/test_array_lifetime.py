"""Lifetime safety: a region stays mapped while any array, view or buffer uses it, in any order of
deletes, closes and garbage collection; arrays outliving their pager keep working and keep their writes."""
import gc
import itertools
import os
import threading
import weakref

import numpy as np
import pytest

import autopager
from tests.pager_support import requires_userfaultfd


pytestmark = requires_userfaultfd

N = 50_000


@pytest.fixture
def path(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(N, dtype=np.int64).tofile(path)
    return path


def test_views_and_slices_work_after_the_pager_is_closed(path):
    with autopager.Pager(page_size=8192, buffer_size="64KiB") as pager:
        a = pager.memmap(path, dtype=np.int64, mode="r+")
        view = a[1000:2000]
        column = a.reshape(500, 100)[:, 7]
    assert pager.closed
    del a
    gc.collect()
    assert view.sum() == sum(range(1000, 2000))
    assert column.tolist() == list(range(7, N, 100))
    view[:] = -1  # written after close: reaches the file when the last view goes
    del view, column
    values = np.fromfile(path, dtype=np.int64)
    assert (values[1000:2000] == -1).all() and values[2000] == 2000


def test_the_region_is_unmapped_when_the_last_user_goes(path):
    a = autopager.memmap(path, dtype=np.int64, mode="r", page_size=4096, buffer_size="64KiB")
    region = weakref.ref(a.region)
    view = a[::3]
    buffer = memoryview(a)
    del a
    gc.collect()
    assert region() is not None and buffer[5] == 5 and view[1] == 3
    del view
    gc.collect()
    assert region() is not None and buffer[N - 1] == N - 1
    buffer.release()
    gc.collect()
    assert region() is None


def test_a_closed_pager_maps_nothing_more(path):
    pager = autopager.Pager(buffer_size="1MiB")
    pager.close()
    pager.close()
    with pytest.raises(ValueError, match="closed"):
        pager.memmap(path)
    with pytest.raises(ValueError, match="closed"):
        pager.flush()
    assert isinstance(pager.stats(), dict)


EVENTS = ("close pager", "del array", "del view", "collect")


@pytest.mark.parametrize("order", list(itertools.permutations(EVENTS)))
def test_any_order_of_deletes_closes_and_collection(path, order):
    pager = autopager.Pager(page_size=4096, buffer_size="32KiB")
    holders = {"array": pager.memmap(path, dtype=np.int64, mode="r+")}
    holders["view"] = holders["array"][N // 2:]
    holders["array"][:10] = 7
    holders["view"][-10:] = 9
    cycle = [holders["view"]]
    cycle.append(cycle)  # a reference cycle that only the collector frees
    for event in order:
        if event == "close pager":
            pager.close()
        elif event == "collect":
            gc.collect()
        else:
            del holders[event.split()[1]]
    del cycle
    gc.collect()
    values = np.fromfile(path, dtype=np.int64)
    assert (values[:10] == 7).all() and (values[-10:] == 9).all() and values[10] == 10


def test_threads_read_one_array_while_another_flushes(path):
    with autopager.Pager(page_size=4096, buffer_size="64KiB") as pager:
        a = pager.memmap(path, dtype=np.int64, mode="r+")
        sums = []

        def read():
            sums.append(int(a.sum()))

        readers = [threading.Thread(target=read) for _ in range(4)]
        for reader in readers:
            reader.start()
        for _ in range(5):
            pager.flush()
        for reader in readers:
            reader.join()
    assert sums == [N * (N - 1) // 2] * 4


def test_forking_with_mapped_arrays_warns(path):
    a = autopager.memmap(path, dtype=np.int64, mode="r", buffer_size="1MiB")
    with pytest.warns(RuntimeWarning, match="'spawn' or 'forkserver'"):
        child = os.fork()
        if child == 0:
            os._exit(0)
    os.waitpid(child, 0)
    del a
