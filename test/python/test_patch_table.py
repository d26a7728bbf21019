# This file is part of OpenCV project.
# It is subject to the license terms in the LICENSE file found in the top-level directory
# of this distribution and at http://opencv.org/license.html.
"""doc/build.md's table of patches says what patches/ holds: one row per patch file, no row
without its file, and each row names the files its patch changes."""
import re

from conftest import PROJECT_ROOT


def table_rows():
    """{patch name: set of files} from the table of doc/build.md's "Patches" section."""
    section = (PROJECT_ROOT / "doc" / "build.md").read_text().split("\n## Patches\n")[1].split("\n## ")[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].startswith("`"):
            assert cells[0] not in rows, f"{cells[0]} has two rows"
            rows[cells[0].strip("`")] = set(re.findall(r"`([^`]+)`", cells[1]))
    return rows


def changed_files(patch):
    return {line.split()[1].removeprefix("b/") for line in patch.read_text().splitlines() if line.startswith("+++ ")}


def test_every_patch_has_its_row_and_every_row_its_patch():
    patches = {p.name for p in (PROJECT_ROOT / "patches").glob("*.patch")}
    rows = table_rows()
    assert sorted(patches - rows.keys()) == [], "patches missing from doc/build.md's table"
    assert sorted(rows.keys() - patches) == [], "doc/build.md's table names patches that patches/ lacks"


def test_each_row_names_the_files_its_patch_changes():
    for name, files in table_rows().items():
        patch = PROJECT_ROOT / "patches" / name
        if patch.exists():  # a missing one fails the test above
            assert files == changed_files(patch), name
