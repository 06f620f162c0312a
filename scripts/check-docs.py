#!/usr/bin/env python3
"""The docs test (ctest lint.docs): the documentation says what the binary does.

  scripts/check-docs.py PILOT_BINARY

Fails (exit 1, listing every problem) when
  - a Markdown file of the project links to a file that is not there, or to an anchor that
    no heading of the target makes (GitHub's rule: lower case, punctuation dropped, spaces to
    '-', a repeat numbered -1, -2, ...);
  - a command that `pilot --help` lists is missing from the README's command table, or an
    option that `pilot CMD --help` lists is named nowhere on the command's page in docs/;
  - a hint in the source (src/, include/) sends the reader to a page of docs/ that is not
    there, or to a section ("docs/models.md, 'Models as .pt2 packages'") no heading begins with.
The quickstart's shell block is run as written by tests/e2e/test_quickstart.sh.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The page that documents each command's options (docs/<page>.md).
PAGES = {
    "run": ["running", "shards", "sweep"], "resume": ["running"], "status": ["running"], "doctor": ["running"],
    "verify": ["running"], "manifest": ["running"], "sweep": ["sweep"], "merge": ["shards"], "export": ["shards"],
    "compare": ["ending"], "plan": ["ending", "first-hour", "load"], "decide": ["ending", "load"], "adapt": ["adapt"],
    "calibrate": ["first-hour"], "load": ["load"],
}
# Options every command takes, documented once, in docs/running.md.
COMMON = {"--help", "--json", "--quiet", "--version"}


def markdown_files():
    out = [os.path.join(ROOT, f) for f in ("README.md", "ARCHITECTURE.md")]
    for folder in ("docs", "bench", "tests", "data", "tools"):
        for base, dirs, files in os.walk(os.path.join(ROOT, folder)):
            dirs[:] = [d for d in dirs if d not in ("corpus", "golden", "__pycache__")]
            out += [os.path.join(base, f) for f in files if f.endswith(".md")]
    return sorted(out)


def strip_code(text):
    """The text outside fenced code blocks and inline code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path):
    found, seen = set(), {}
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def check_links(problems):
    for md in markdown_files():
        rel_md = os.path.relpath(md, ROOT)
        for m in re.finditer(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)",
                             strip_code(open(md, encoding="utf-8").read())):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            dest = md if not path else os.path.normpath(os.path.join(os.path.dirname(md), path))
            if not os.path.exists(dest):
                problems.append(f"{rel_md}: links to {target}, which is not there")
                continue
            if anchor and dest.endswith(".md") and anchor not in anchors(dest):
                problems.append(f"{rel_md}: links to {target}, but {os.path.relpath(dest, ROOT)} has no heading "
                                f"that makes #{anchor}")


def headings(path):
    text = re.sub(r"^```.*?^```", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    return {m.group(1).replace("`", "").strip().lower() for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, re.M)}


def check_source_hints(problems):
    """Messages name a page, or a page and a section: each must exist."""
    for folder in ("src", "include"):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                path = os.path.join(base, f)
                rel = os.path.relpath(path, ROOT)
                # Adjacent string literals ("...as "\n  ".pt2...") read as one.
                text = re.sub(r'"\s*\n\s*"', "", open(path, encoding="utf-8").read())
                for m in re.finditer(r"(docs/[\w-]+\.md|README\.md|ARCHITECTURE\.md)(?:,? '([^']+)')?", text):
                    page, section = m.group(1), m.group(2)
                    dest = os.path.join(ROOT, page)
                    if not os.path.isfile(dest):
                        problems.append(f"{rel}: names {page}, which is not there")
                    elif section and not any(h.startswith(section.replace("`", "").strip().lower())
                                             for h in headings(dest)):
                        problems.append(f"{rel}: names the section '{section}' of {page}, which no heading there begins with")
                if re.search(r"\bthe README\b|README, '|README's ", text):
                    problems.append(f"{rel}: sends the reader to the README; name the page of docs/ instead")


def help_text(pilot, *args):
    return subprocess.run([pilot, *args, "--help"], capture_output=True, text=True, timeout=30).stdout


def check_help(pilot, problems):
    top = help_text(pilot)
    commands = re.findall(r"^  ([a-z]+) {2,}", top.split("Subcommands:")[1], re.M)
    if len(commands) < 13:
        problems.append(f"pilot --help lists {len(commands)} commands; expected at least 13")
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for cmd in commands:
        if f"| `pilot {cmd}` |" not in readme:
            problems.append(f"README.md: the command table has no row for `pilot {cmd}`")
        pages = PAGES.get(cmd)
        if not pages:
            problems.append(f"scripts/check-docs.py: no page is named for the command `{cmd}` (PAGES)")
            continue
        text = "".join(open(os.path.join(ROOT, "docs", p + ".md"), encoding="utf-8").read() for p in pages)
        for option in re.findall(r"^  (?:-\w,)?(--[a-z0-9-]+)", help_text(pilot, cmd), re.M):
            if option in COMMON:
                continue
            if not re.search(re.escape(option) + r"(?![a-z0-9-])", text):
                problems.append(f"docs/{pages[0]}.md: `pilot {cmd} {option}` (in its --help) is documented nowhere "
                                f"on {', '.join('docs/' + p + '.md' for p in pages)}")


def check_common(problems):
    running = open(os.path.join(ROOT, "docs", "running.md"), encoding="utf-8").read()
    for option in sorted(COMMON - {"--help", "--version"}):
        if not re.search(re.escape(option) + r"(?![a-z0-9-])", running):
            problems.append(f"docs/running.md: the option {option}, which every command takes, is documented nowhere")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = []
    check_links(problems)
    check_help(sys.argv[1], problems)
    check_common(problems)
    check_source_hints(problems)
    for p in problems:
        print("docs: " + p)
    print(f"docs: {len(markdown_files())} Markdown files checked; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
