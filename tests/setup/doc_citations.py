#!/usr/bin/python3
"""Docs and code cite only what the repository holds (issue 18 item 13).

  doc_citations.py SRCROOT

Fails, naming file and line, on:
  - a citation of DOMAIN.md (a rule book outside the repository: its rules
    are written in docs/product-rules.md);
  - "product-rules.md section N" where docs/product-rules.md has no "## N." heading;
  - a Markdown link to product-rules.md#ANCHOR that matches no heading there;
  - a page under docs/ that README.md's list of documents does not link (an
    operator reading the README never finds it);
  - docs/PAGE.md "Section" (in a message, a comment or a page; the quotes
    may be escaped, as in a C++ string) where PAGE has no heading that starts
    with Section (backquotes aside): an error message once sent operators to
    deploy.md "Hugepages", a section that does not exist (issue 24 item 14).
Reads the repository's files only (tree_files.py: git's tracked files), never
out/ or a build directory (issue 24 item 16).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs

root = sys.argv[1]
rules_path = os.path.join(root, "docs/product-rules.md")
headings = [l[3:].strip() for l in open(rules_path, encoding="utf-8") if l.startswith("## ")]
numbers = {h.split(".")[0] for h in headings if h.split(".")[0].isdigit()}


def anchor(h):  # GitHub's heading anchors
    return re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")


# Links may name a heading of any level.
anchors = {anchor(l.lstrip("#").strip()) for l in open(rules_path, encoding="utf-8") if re.match(r"#{1,6} ", l)}
SECTION_REF = re.compile(r'docs/([A-Za-z0-9_.-]+\.md) \\?"([^"\\\n]+)\\?"')
page_headings = {}


def page_has(page, section):
    if page not in page_headings:
        path = os.path.join(root, "docs", page)
        page_headings[page] = None
        if os.path.isfile(path):
            page_headings[page] = [l.lstrip("#").strip().replace("`", "")
                                   for l in open(path, encoding="utf-8") if l.startswith("#")]
    heads = page_headings[page]
    if heads is None:
        return f"docs/{page} does not exist"
    want = section.replace("`", "")
    if any(h.startswith(want) for h in heads):
        return None
    return f'docs/{page} has no section "{section}"'


bad = []
files = tree_files.source_files(root)
for rel in files:
    if rel in ("tests/setup/doc_citations.py", "tests/setup/tree_scan.py"):  # their own examples
        continue
    try:
        text = open(os.path.join(root, rel), encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    for no, line in enumerate(text.splitlines(), 1):
        if "DOMAIN.md" in line:
            bad.append(f"{rel}:{no}: cites DOMAIN.md, which is not in the repository "
                       "(cite docs/product-rules.md)")
        for n in re.findall(r"product-rules\.md section (\d+)", line):
            if n not in numbers:
                bad.append(f"{rel}:{no}: product-rules.md has no section {n}")
        for a in re.findall(r"product-rules\.md#([\w\-]+)", line):
            if a not in anchors:
                bad.append(f"{rel}:{no}: product-rules.md has no heading #{a}")
        for page, section in SECTION_REF.findall(line):
            why = page_has(page, section)
            if why:
                bad.append(f"{rel}:{no}: {why}")
readme = open(os.path.join(root, "README.md"), encoding="utf-8").read() if "README.md" in files else None
for rel in files if readme is not None else ():
    if rel.startswith("docs/") and rel.endswith(".md") and rel.count("/") == 1 \
            and f"]({rel})" not in readme:
        bad.append(f"README.md: the list of documents does not link {rel}")
for b in bad:
    print(b)
print(f"doc_citations: {len(files)} files, {len(bad)} bad citation(s); product-rules.md sections {sorted(numbers)}")
sys.exit(1 if bad else 0)
