"""One filled run of the lessons for every test that needs it (it executes lessons 0-7: about 90 s)."""
import pytest
from your_turn_fill import run_filled


@pytest.fixture(scope="session")
def filled_lessons():
    """run_filled() of every lesson with your-turn cells, in one scratch folder (lesson 6 hands lesson 7 its class)."""
    return run_filled()
