#!/usr/bin/env python3
"""The help texts and program output that README.md and docs/*.md quote, against what
trident prints now.

    docs_match_program.py TRIDENT ROOT

A fenced code block is checked when a marker comment stands on the line before it:

    <!-- trident-check: help SUB [SUB ...] -->   the block quotes `trident SUB --help`
    <!-- trident-check: output -->              the block shows `$ trident ARGS` (lines
        ending in a backslash continue it) and then what it prints (stdout and stderr);
        the command runs with TRIDENT as the program in a scratch copy of ROOT (its data/
        copied, the rest linked), so that what it writes lands there
    <!-- trident-check: none: WHY -->           not checked, and why (a run of minutes)

In the quoted text a line "..." stands for any number of lines, and "..." inside a line for
any text; an output block matches from its first line to its last unless it begins or ends
with a "..." line, a help quote anywhere in the help. Blocks that look like a quote of
trident (a session beginning with `$ trident` that shows output, or a synopsis beginning
`trident SUB`, `mpirun -np N trident SUB` or `[mpirun -np N] trident SUB`) must carry a
marker, so that a new one cannot go unchecked. Every subcommand that `trident --help`
lists must have a row in README.md's table. Exit 1 with every mismatch listed.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*trident-check:\s*(.*?)\s*-->\s*$")
SYNOPSIS = re.compile(r"^(\[mpirun -np N\] |mpirun -np N )?trident [a-z-]+")


def code_blocks(path):
    """(line number, marker or None, lines) of every fenced block of a Markdown file."""
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            indent = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            before = lines[i - 1].strip() if i > 0 else ""
            m = MARKER.match(before)
            yield i + 1, (m.group(1) if m else None), [l[indent:] for l in lines[i + 1:j]]
            i = j + 1
        else:
            i += 1


def line_matches(want, got):
    if "..." not in want:
        return want == got
    pattern = ".*".join(re.escape(part) for part in want.split("..."))
    return re.fullmatch(pattern, got) is not None


def segment_at(segment, got, at):
    return at + len(segment) <= len(got) and all(
        line_matches(w, g) for w, g in zip(segment, got[at:at + len(segment)]))


def find(segment, got, start, last=False):
    places = range(start, len(got) - len(segment) + 1)
    for at in (reversed(places) if last else places):
        if segment_at(segment, got, at):
            return at
    return None


def quote_matches(want, got, anchored):
    """Whether the quoted lines `want` (with "..." lines as gaps) match the lines `got`."""
    want = [l.rstrip() for l in want]
    got = [l.rstrip() for l in got]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()
    segments, current = [], []
    for line in want:
        if line.strip() == "...":
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    # segments[0] empty: a leading gap; segments[-1] empty: a trailing one.
    open_start = not anchored or (len(segments) > 1 and not segments[0])
    open_end = not anchored or (len(segments) > 1 and not segments[-1])
    parts = [s for s in segments if s]
    pos = 0
    for k, seg in enumerate(parts):
        is_last = k == len(parts) - 1
        if k == 0 and not open_start:
            if not segment_at(seg, got, 0):
                return False
            at = 0
        elif is_last and not open_end:
            at = len(got) - len(seg)
            if at < pos or not segment_at(seg, got, at):
                return False
        else:
            at = find(seg, got, pos)
            if at is None:
                return False
        pos = at + len(seg)
    return open_end or pos == len(got) or not parts


def run(trident, root, args):
    p = subprocess.run([trident] + args, cwd=root, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    return p.stdout.split("\n")


def session(lines):
    """(argument list, output lines) of a block that begins with `$ trident ...`."""
    command, k = [], 0
    while k < len(lines):
        line = lines[k][2:] if k == 0 else lines[k]
        k += 1
        if line.rstrip().endswith("\\"):
            command.append(line.rstrip()[:-1])
        else:
            command.append(line)
            break
    words = shlex.split(" ".join(command))
    if not words or os.path.basename(words[0]) != "trident":
        return None, lines[k:]
    return words[1:], lines[k:]


def looks_like_a_quote(lines):
    if not lines:
        return False
    first = lines[0]
    if SYNOPSIS.match(first):
        return True
    shows_output = any(not l.startswith("$ ") and not l.startswith("  ") for l in lines[1:])
    return bool(re.match(r"^\$ (build/)?trident ", first)) and shows_output


def scratch_copy(root, into):
    for entry in os.listdir(root):
        if entry == "data":
            shutil.copytree(os.path.join(root, entry), os.path.join(into, entry))
        else:
            os.symlink(os.path.join(root, entry), os.path.join(into, entry))
    return into


def main():
    trident, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        return check(trident, root, scratch_copy(root, tmp))


def check(trident, root, scratch):
    problems, checked = [], 0
    helps = {}

    def help_of(sub):
        if sub not in helps:
            helps[sub] = run(trident, root, [sub, "--help"])
        return helps[sub]

    docs = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    for path in docs:
        name = os.path.relpath(path, root)
        for line, marker, lines in code_blocks(path):
            where = f"{name}:{line}"
            if marker is None:
                if looks_like_a_quote(lines):
                    problems.append(f"{where}: a quote of trident without a marker "
                                    "(<!-- trident-check: help SUB | output | none: WHY -->)")
                continue
            kind, _, rest = marker.partition(" ")
            if kind == "none:" or kind == "none":
                if not rest.strip():
                    problems.append(f"{where}: 'none' needs its reason")
                continue
            if kind == "help":
                subs = rest.split()
                got = sum((help_of(s) for s in subs), [])
                if not subs or not quote_matches(lines, got, anchored=False):
                    problems.append(f"{where}: not what `trident {' / '.join(subs)} --help` prints "
                                    "now:\n" + "\n".join(got))
            elif kind == "output":
                if not lines or not lines[0].startswith("$ "):
                    problems.append(f"{where}: an output block begins with `$ trident ...`")
                    continue
                args, want = session(lines)
                if args is None:
                    problems.append(f"{where}: the command is not trident's: {lines[0]}")
                    continue
                got = run(trident, scratch, args)
                if not quote_matches(want, got, anchored=True):
                    problems.append(f"{where}: not what `trident {' '.join(args)}` prints now:\n"
                                    + "\n".join(got))
            else:
                problems.append(f"{where}: unknown marker '{marker}'")
                continue
            checked += 1

    # Every subcommand in README's table.
    readme = open(os.path.join(root, "README.md")).read()
    for line in run(trident, root, ["--help"]):
        m = re.match(r"^  ([a-z][a-z-]*)\s{2,}", line)
        if m and f"`{m.group(1)}" not in readme:
            problems.append(f"README.md: no row for the subcommand {m.group(1)}")

    for p in problems:
        print(f"FAIL: {p}\n")
    print(f"{checked} quoted blocks checked, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
