#!/usr/bin/python3
"""The tests that scan the source tree read the repository's files, never
what a run left in it (issue 24 item 16).

  tree_scan.py SRCROOT

`scripts/fuzz.sh` writes its grown corpus to out/fuzz/corpus/, and a
generated config input there once cited "product-rules.md section 4": the
next `scripts/test.sh` failed doc_citations. This builds a small tree in a
temporary directory, as git and as a plain copy, with such leftovers in out/,
in a build directory and in a meson build directory named otherwise, and
checks that tests/setup/tree_files.py lists only the repository's files and
that doc_citations.py and check_concurrency_rules.py pass on it; then that
they still fail on a bad citation in a tracked file.
"""
import os
import shutil
import subprocess
import sys
import tempfile

src = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(src, "tests/setup"))
import tree_files  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def git(root, *args):
    subprocess.run(["git", "-C", root, "-c", "user.name=t", "-c", "user.email=t@example.org",
                    *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(script, root):
    r = subprocess.run([sys.executable, os.path.join(src, script), root],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


REPO = {
    "docs/product-rules.md": "# Rules\n\n## 1. One rule\n\nText.\n",
    "docs/architecture.md": ("# Architecture\n\n## Flow entries: concurrency rules\n\n"
                             "**R1 — one writer** (`dataplane/x.cc`).\n\n## Next\n"),
    "dataplane/x.cc": ('// Concurrency rule R1 (docs/architecture.md "Flow entries: '
                       'concurrency rules"): one writer.\n'),
    "README.md": "See product-rules.md section 1.\n",
}
# What runs leave behind: a fuzzer corpus entry, a build directory's copy, a
# meson build directory under another name, a file nobody added yet.
LEFTOVERS = {
    "out/fuzz/corpus/config/0a1b": "# product-rules.md section 4\n",
    "build-asan/meson-logs/x.txt": "product-rules.md section 7\n",
    "mybuild/meson-private/x.txt": "product-rules.md section 8\n",
    "mybuild/control/y.cc": '// Concurrency rule R9 (docs/architecture.md "Flow entries: concurrency rules")\n',
}

work = tempfile.mkdtemp(prefix="gwlb-tree-scan-")
try:
    tree = os.path.join(work, "repo")
    for rel, text in REPO.items():
        write(tree, rel, text)
    git(tree, "init", "-q")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "tree")
    for rel, text in LEFTOVERS.items():
        write(tree, rel, text)
    write(tree, "docs/untracked.md", "product-rules.md section 5\n")
    os.remove(os.path.join(tree, "README.md"))  # tracked, deleted in the work tree

    files = tree_files.source_files(tree)
    check(files == sorted(set(REPO) - {"README.md"}),
          f"git tree: the tracked files that exist, nothing else ({files})")
    check(tree_files.source_files(tree, ["docs"]) == ["docs/architecture.md", "docs/product-rules.md"],
          "git tree: limited to docs/")
    rc, out = run("tests/setup/doc_citations.py", tree)
    check(rc == 0, "doc_citations passes with bad citations only in untracked files:\n" + out)
    rc, out = run("tests/unit/check_concurrency_rules.py", tree)
    check(rc == 0, "check_concurrency_rules passes with a bad citation only in a build directory:\n" + out)

    # The same tree outside git (a release tarball): walked, leftovers skipped.
    plain = os.path.join(work, "plain")
    shutil.copytree(tree, plain, ignore=shutil.ignore_patterns(".git", "untracked.md"))
    files = tree_files.source_files(plain)
    check(files == sorted(set(REPO) - {"README.md"}),
          f"plain tree: walked past out/, build*/ and meson build directories ({files})")
    rc, out = run("tests/setup/doc_citations.py", plain)
    check(rc == 0, "doc_citations passes on the plain tree:\n" + out)

    # A bad citation the repository holds still fails.
    write(tree, "docs/bad.md", "See product-rules.md section 4.\n")
    git(tree, "add", "docs/bad.md")
    rc, out = run("tests/setup/doc_citations.py", tree)
    check(rc == 1 and "docs/bad.md:1: product-rules.md has no section 4" in out,
          "doc_citations fails on a tracked bad citation:\n" + out)
finally:
    shutil.rmtree(work, ignore_errors=True)

print(f"tree_scan: {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
