#!/usr/bin/env python3
"""Product code says why, never which issue asked for it: no "issue 27" (or
"issues 17", "issue #14") in the files of control/, dataplane/, common/,
cli/, tools/, probes/, and the benches and scripts (bench/, scripts/). History belongs in the commits; a comment that
cites an issue number tells a reader nothing the code's reason would not.

An upstream project's tracker may be cited by name ("yaml-cpp issue 1040"):
that names a bug outside the product, which the comment works around.

Usage: check_issue_citations.py SOURCE_ROOT     check the tree
       check_issue_citations.py --self-test     the scanner on a fixture
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'setup'))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs

DIRS = ["control", "dataplane", "common", "cli", "tools", "probes", "bench", "scripts"]
CITATION = re.compile(r"\bissues?\s+#?\d+", re.I)
# "<project> issue N": another project's tracker, named.
UPSTREAM = re.compile(r"\b(yaml-cpp|dpdk|boost|asio|spdlog|nlohmann|openssl|bird|frr|scapy|meson)\s+$", re.I)


def scan(root, files):
    errors = []
    for f in files:
        try:
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                lines = fh.read().split("\n")
        except (UnicodeDecodeError, OSError):
            continue  # binary files (pcaps, images)
        for n, line in enumerate(lines, 1):
            for m in CITATION.finditer(line):
                if UPSTREAM.search(line[:m.start()]):
                    continue
                errors.append(f"{f}:{n}: cites '{m.group(0)}': say the reason instead (the "
                              f"commit message keeps which issue asked)")
    return errors


def self_test():
    fixture = {
        "control/x/a.cc": "// Traffic classes (issue 27): first match wins.\nint a;\n",
        "dataplane/b.h": "// bounded (Issues 17 and 24)\n",
        "tools/c.py": '"""Generated (issue #18 item 10)."""\n',
        "control/x/ok.cc": "// yaml-cpp issue 1040: a bad anchor aborts; checked first.\n"
                           "// no issue here, and tissue 5 is not a citation\n",
    }
    want = ["control/x/a.cc:1: cites 'issue 27'", "dataplane/b.h:1: cites 'Issues 17'",
            "tools/c.py:1: cites 'issue #18'"]
    with tempfile.TemporaryDirectory(prefix="check_issue_citations_") as tmp:
        for path, text in fixture.items():
            p = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)
        got = scan(tmp, sorted(fixture))
    failures = [f"expected an error starting {w!r}" for w in want
                if not any(e.startswith(w) for e in got)]
    failures += [f"unexpected error: {e}" for e in got if not any(e.startswith(w) for w in want)]
    for e in got:
        print("rejected as expected:", e)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    errors = scan(root, tree_files.source_files(root, DIRS))
    for e in errors:
        print(e)
    if not errors:
        print(f"no issue number cited in {', '.join(d + '/' for d in DIRS)}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
