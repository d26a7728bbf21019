#!/usr/bin/env python3
"""Checks the #include lines of modules/dnn/src/llm against the map of folders in
doc/design.md ("Map: from a file to logits"), the one place that says which folder may include
which: its table lists the folders lowest first, and a file may include (with a quoted,
relative #include) its own folder and the folders of earlier rows only. Folders that share a
row (`gguf/`, `onnx/`) do not include each other. Also checked: every folder is on the map, and
only `net/` includes dnn's own `net_impl.hpp` (Net::Impl), as the map's notes say.

    /usr/bin/python3 tools/check_includes.py [PROJECT_ROOT]

Prints one line per violation (file:line: what) and exits 1 when there is any. It first checks
itself on a small made-up tree with known violations, so that a broken checker cannot pass
silently. ctest runs it as check_includes (test/tests.cmake).
"""
import os
import re
import sys
import tempfile

MAP_DOC = os.path.join("doc", "design.md")
SOURCE_ROOT = os.path.join("modules", "dnn", "src", "llm")
MAP_HEADING = "## Map: from a file to logits"
TOP_LEVEL = "(top level)"  # the map's name for the files directly in modules/dnn/src/llm
NET_IMPL_FOLDER = "net"    # the only folder that includes dnn's net_impl.hpp
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_map(doc_path):
    """{folder: level} from the first table after MAP_HEADING ('' is the top level)."""
    levels = {}
    with open(doc_path, encoding="utf-8") as doc:
        lines = doc.read().split("\n")
    start = lines.index(MAP_HEADING)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break  # the table ended
    for level, row in enumerate(rows[2:]):  # after the header and its |---| line
        cell = row.split("|")[1].strip()
        folders = [""] if cell == TOP_LEVEL else re.findall(r"`([a-z0-9_]+)/`", cell)
        if not folders:
            raise ValueError(f"{doc_path}: the map's row '{cell}' names no folder")
        for folder in folders:
            levels[folder] = level
    return levels


def folder_of(relative_path):
    """The map folder of a path relative to the source root ('' for a top-level file)."""
    parts = relative_path.split("/")
    return parts[0] if len(parts) > 1 else ""


def describe(folder):
    return folder + "/" if folder else TOP_LEVEL


def check_tree(source_root, levels):
    """The violations under source_root, as 'path:line: what' strings."""
    violations = []
    unmapped = set()
    project_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(source_root))))
    for directory, subdirs, files in os.walk(source_root):
        subdirs.sort()
        for name in sorted(files):
            if not name.endswith((".hpp", ".cpp", ".h")):
                continue
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, source_root).replace(os.sep, "/")
            shown = os.path.relpath(path, project_root).replace(os.sep, "/")
            folder = folder_of(relative)
            if folder not in levels:
                if folder not in unmapped:  # once per folder, at its first file
                    unmapped.add(folder)
                    violations.append(f"{shown}:1: {describe(folder)} is not on the map ({MAP_DOC})")
                continue
            with open(path, encoding="utf-8", errors="replace") as source:
                for number, line in enumerate(source, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    included = match.group(1)
                    problem = judge_include(relative, included, levels)
                    if problem:
                        violations.append(f'{shown}:{number}: #include "{included}": {problem}')
    return violations


def judge_include(relative, included, levels):
    """Why `relative` may not include `included` (None when it may)."""
    folder = folder_of(relative)
    if included.startswith("llm/"):  # generated dispatch headers, found through the build folder
        target = included[len("llm/"):]
    else:
        target = os.path.normpath(os.path.join(os.path.dirname(relative), included)).replace(os.sep, "/")
    if target.startswith("../"):  # OpenCV's own dnn sources
        if os.path.basename(target) == "net_impl.hpp" and folder != NET_IMPL_FOLDER:
            return f"only {NET_IMPL_FOLDER}/ reaches into Net::Impl"
        return None
    target_folder = folder_of(target)
    if target_folder == folder:
        return None
    if target_folder not in levels:
        return f"{describe(target_folder)} is not on the map"
    if levels[target_folder] >= levels[folder]:
        return f"{describe(folder)} may not include {describe(target_folder)} (not above it on the map in {MAP_DOC})"
    return None


def self_check():
    """Runs the checker on a made-up tree whose every kind of violation it must report."""
    levels = {"low": 0, "mid": 1, "peer": 1, "high": 2}
    sources = {
        "low/a.hpp": '#include "../high/c.hpp"\n',              # upward
        "mid/b.cpp": '#include "../low/a.hpp"\n#include "../peer/p.hpp"\n',  # fine, then a peer
        "high/c.hpp": '#include "../mid/b.hpp"\n#include "../../net_impl.hpp"\n',
        "stray/d.cpp": "\n",
    }
    expected = {"low/a.hpp:1", "mid/b.cpp:2", "high/c.hpp:2", "stray/d.cpp:1"}
    with tempfile.TemporaryDirectory() as project:
        root = os.path.join(project, SOURCE_ROOT)
        for relative, text in sources.items():
            os.makedirs(os.path.join(root, os.path.dirname(relative)), exist_ok=True)
            with open(os.path.join(root, relative), "w", encoding="utf-8") as f:
                f.write(text)
        found = {v.split(":")[0].split("/llm/")[1] + ":" + v.split(":")[1] for v in check_tree(root, levels)}
    if found != expected:
        raise AssertionError(f"self-check: reported {sorted(found)}, expected {sorted(expected)}")


def main():
    project_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    self_check()
    levels = read_map(os.path.join(project_root, MAP_DOC))
    rows = [[describe(f) for f in levels if levels[f] == level] for level in sorted(set(levels.values()))]
    print("map, lowest first: " + " < ".join(" ".join(row) for row in rows))
    violations = check_tree(os.path.join(project_root, SOURCE_ROOT), levels)
    for violation in violations:
        print(violation)
    print(f"{len(violations)} violation(s) of the map")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
