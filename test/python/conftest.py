import os
import pathlib
import re

import pytest

PROJECT_ROOT = pathlib.Path(os.environ.get("LLM_PROJECT_ROOT", pathlib.Path(__file__).resolve().parents[2]))
SHARED_TESTDATA = pathlib.Path(os.environ.get("LLM_SHARED_TESTDATA", PROJECT_ROOT.parent / "shared" / "testdata"))

# ctest sets LLM_REQUIRE_GENERATED_TEST_DATA=1 (test/tests.cmake) and runs the fixtures that make
# the generated models first: there, a test that skips because such a model is missing fails
# instead, since a fixture did not make it. Run by hand, such a test still skips. Skips for other
# reasons (a program the sanitized build leaves out, an optional package) stay skips.
REQUIRE_GENERATED_TEST_DATA = os.environ.get("LLM_REQUIRE_GENERATED_TEST_DATA") == "1"
MISSING_GENERATED_DATA_SKIP = re.compile(r"ctest fixture|model missing")


@pytest.fixture
def shared_testdata():
    return SHARED_TESTDATA


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if REQUIRE_GENERATED_TEST_DATA and report.skipped and call.excinfo is not None:
        reason = str(call.excinfo.value)
        if MISSING_GENERATED_DATA_SKIP.search(reason):
            report.outcome = "failed"
            report.longrepr = f"generated test data missing under ctest: {reason}"
