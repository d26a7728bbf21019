import os
import pathlib

import pytest

PROJECT_ROOT = pathlib.Path(os.environ.get("LLM_PROJECT_ROOT", pathlib.Path(__file__).resolve().parents[2]))
SHARED_TESTDATA = pathlib.Path(os.environ.get("LLM_SHARED_TESTDATA", PROJECT_ROOT.parent / "shared" / "testdata"))


@pytest.fixture
def shared_testdata():
    return SHARED_TESTDATA
