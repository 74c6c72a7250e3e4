import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def _seed():
    """Every test starts from the same random state."""
    np.random.seed(0)
    torch.manual_seed(0)

