#!/usr/bin/env python3
"""Checks that the library reaches files, time and processes only through its seams (ARCHITECTURE.md).

In the library's layers (platform, input, records, bag, engine) and its workflows (sweep,
fleet, verdict, adapt, load; ARCHITECTURE.md, "Workflows"), every file access goes
through FileSystem (include/pilot/fs.h), every timestamp through Clock and every child
process through Processes (include/pilot/process.h): only the seams' own implementations
(src/platform/fs.cpp, memory_fs.cpp, time_util.cpp, process.cpp) may call the OS.
The CLI and the torch stage module are outside the rule.

Every file of a pilot folder is named through include/pilot/folder_files.h (a run's) or a
workflow's include/pilot/<workflow>/*_files.h: a string literal in src/ that is one of their
names (or another "data/..." path) is a violation, so that a folder's files are spelled in
one place. Exits 1 listing each violation.
"""
import pathlib
import re
import sys

LIBRARY = ["platform", "input", "records", "bag", "engine", "sweep", "fleet", "verdict", "adapt", "load"]
SEAMS = {
    "src/platform/fs.cpp", "src/platform/memory_fs.cpp", "src/platform/time_util.cpp", "src/platform/process.cpp"
}
FILE_CALLS = re.compile(
    r"\b(?:fs|stdfs|std::filesystem)::(?:exists|create_director(?:y|ies)|remove(?:_all)?|rename|"
    r"(?:recursive_)?directory_iterator|file_size|is_directory|is_regular_file|is_symlink|is_empty|status|"
    r"symlink_status|canonical|weakly_canonical|current_path|read_symlink|equivalent|space|"
    r"last_write_time|copy_file|resize_file)\b"
    r"|::(?:lstat|stat|fstat|open|openat|pread|pwrite|read|write|unlink|mkdir|rmdir|statvfs|opendir|flock|"
    r"ftruncate|fsync)\s*\("
    r"|\bstd::[io]?fstream\b|\bfopen\s*\("
)
PROCESS_CALLS = re.compile(r"::(?:fork|vfork|execv|execve|execvp|posix_spawn|wait4|waitpid|kill|prctl)\s*\(")
CLOCK_CALLS = re.compile(r"\b(?:system_clock|steady_clock|high_resolution_clock)\b|\b(?:std::)?time\s*\(\s*(?:nullptr|NULL|0)\s*\)"
                         r"|\bgettimeofday\s*\(|\bclock_gettime\s*\(")


def violations(text):
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        for rx, what in ((FILE_CALLS, "file access outside FileSystem"), (CLOCK_CALLS, "time outside Clock"),
                         (PROCESS_CALLS, "a process outside Processes")):
            m = rx.search(code)
            if m:
                out.append((n, what, m.group(0)))
    return out


# The check must be able to fail: known violations are caught, the seam's own calls are not.
assert violations('auto ok = std::filesystem::exists(p);\nint fd = ::open(p, 0);\nstd::ifstream in(f);\n'
                  'auto t = std::chrono::system_clock::now();') != []
assert len(violations('int fd = ::open(p, 0);\nstd::ifstream in(f);')) == 2
assert len(violations('pid_t p = ::fork();\n::kill(p, SIGTERM);')) == 2
assert violations('auto st = fs.LinkStat(p);  // not ::lstat(p) in a comment\nfs::path q = p / "x";') == []

root = pathlib.Path(__file__).resolve().parent.parent
# The file names of folder_files.h (those with a '.' or '/': the kinds are words, not files).
FILES_HEADERS = [root / "include/pilot/folder_files.h"] + sorted((root / "include/pilot").glob("*/*_files.h"))
NAMES = {v for h in FILES_HEADERS for v in re.findall(r'= "([^"]+)";', h.read_text()) if "." in v or "/" in v}
# Paths inside a .pt2 package, not a pilot folder.
NOT_A_FOLDER_FILE = {"data/aotinductor/model"}
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def named_files(text):
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        code = line.split("//", 1)[0]
        for lit in LITERAL.findall(code):
            if lit in NOT_A_FOLDER_FILE:
                continue
            if lit in NAMES or re.fullmatch(r"data/[A-Za-z0-9_.\-/]+", lit):
                out.append((n, "a folder's file named outside folder_files.h", '"' + lit + '"'))
    return out


assert NAMES and "data/run.json" in NAMES and "tagmanifest-sha256.txt" in NAMES
assert {"data/sweep.json", "decisions.jsonl", "data/metrics.jsonl"} <= NAMES
assert named_files('auto t = dir / "data/run.json";\nauto u = dir / "data/new.json";') != []
assert named_files('auto t = dir / kRunRecord;  // "data/run.json"\nAdd("run", x);') == []

bad = []
checked = 0
for layer in LIBRARY:
    for path in sorted((root / "src" / layer).glob("*.[ch]*")):
        rel = str(path.relative_to(root))
        if rel in SEAMS:
            continue
        checked += 1
        for n, what, hit in violations(path.read_text()):
            bad.append(f"{rel}:{n}: {what}: {hit}")
for path in sorted((root / "src").glob("*/*.[ch]*")) + sorted((root / "src").glob("*.cpp")):
    for n, what, hit in named_files(path.read_text()):
        bad.append(f"{path.relative_to(root)}:{n}: {what}: {hit}")
missing = [layer for layer in LIBRARY if not (root / "src" / layer).is_dir()]
for layer in missing:
    bad.append(f"src/{layer}/: a folder LIBRARY names is missing (moved? update the list)")
# Every folder of src/ is a library folder here, or one outside the rule (the CLI, the torch
# module): a new workflow missing from LIBRARY would otherwise go unchecked.
for folder in sorted(p for p in (root / "src").iterdir() if p.is_dir()):
    if folder.name not in LIBRARY + ["cli", "stage"]:
        bad.append(f"src/{folder.name}/: not in LIBRARY (a new workflow? add it)")
for line in bad:
    print(line)
print(f"seams: {checked} library files checked, {len(bad)} violations")
sys.exit(1 if bad else 0)
