import os

import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    np.random.seed(0)
    torch.manual_seed(0)



@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The course website, built once (book/build.py) for tests/test_book.py and tests/test_site_frames.py:
    (html folder, the build's process, its seconds, whether the network was cut)."""
    from book_site import book_missing_reason, build

    reason = book_missing_reason()
    if reason:
        if os.environ.get("T5LESSON_REQUIRE_BOOK") == "1":
            pytest.fail(f"site test required here but cannot run: {reason}")
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("book")
    result, seconds, offline = build(out)
    return out / "html", result, seconds, offline
