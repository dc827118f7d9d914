"""A bad paging parameter is refused before autopager.memmap creates, truncates or extends any file."""
import numpy as np
import pytest

import autopager
from tests.pager_support import requires_userfaultfd

pytestmark = requires_userfaultfd

BAD = [({"page_size": 12345}, "page"), ({"buffer_size": "lots"}, "buffer_size"), ({"fillers": -1}, "fillers"),
       ({"evict_low_water": 95, "evict_high_water": 90}, "water")]


@pytest.mark.parametrize("params, named", BAD)
@pytest.mark.parametrize("mode, shape", [("w+", (10,)), ("r+", (4096,))])
def test_a_bad_parameter_leaves_the_file_as_it_was(tmp_path, params, named, mode, shape):
    path = tmp_path / "data.bin"
    original = np.arange(100, dtype=np.int32)
    original.tofile(path)
    with pytest.raises(ValueError, match=named):
        autopager.memmap(path, dtype=np.int32, mode=mode, shape=shape, **params)
    assert path.read_bytes() == original.tobytes()


@pytest.mark.parametrize("params, named", BAD)
def test_a_bad_parameter_creates_no_file(tmp_path, params, named):
    path = tmp_path / "new.bin"
    with pytest.raises(ValueError, match=named):
        autopager.memmap(path, dtype=np.int32, mode="w+", shape=(10,), **params)
    assert not path.exists()
