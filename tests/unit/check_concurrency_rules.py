#!/usr/bin/env python3
"""Checks that the flow-entry concurrency rules and the code agree.

docs/architecture.md, section "Flow entries: concurrency rules", states each
rule once as a bold heading "**Rn — name** (`symbol`, `path/file.cc`)". Code
that relies on a rule says so in a comment:

    // Concurrency rule R2 (docs/architecture.md "Flow entries: concurrency rules"):

This test fails when a comment cites a rule (or section) the document does not
have, when a rule is cited nowhere, or when a file a rule's heading names does
not exist or does not cite that rule.

Usage: check_concurrency_rules.py SOURCE_ROOT
"""
import os
import pathlib
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'setup'))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs

SECTION = "Flow entries: concurrency rules"
DOC = "docs/architecture.md"
CODE_DIRS = ["common", "dataplane", "control", "tools", "cli", "probes", "bench"]
# "Concurrency rule R2 (" or "Concurrency rules R1, R4 and R5 ("
CITE = re.compile(r'Concurrency rules? (R\d+(?:(?:, | and )R\d+)*) \(([^)]*)\)')
RULE = re.compile(r'^\*\*(R\d+) — [^*]+\*\*(.*)$')
FILE = re.compile(r'`((?:common|dataplane|control|tools)/[a-z_]+\.(?:h|cc))`')


def rules_in_doc(root, errors):
    text = (root / DOC).read_text()
    m = re.search(r'^## ' + re.escape(SECTION) + r'\n(.*?)(?=^## )', text, re.S | re.M)
    if not m:
        errors.append(f'{DOC}: no section "## {SECTION}"')
        return {}
    rules = {}
    lines = m.group(1).split('\n')
    for i, line in enumerate(lines):
        r = RULE.match(line)
        if not r:
            continue
        # The heading's parenthesis (symbol, file) may run onto the next line.
        head = r.group(2) + ' ' + (lines[i + 1] if i + 1 < len(lines) else '')
        head = head.split(').', 1)[0]
        if r.group(1) in rules:
            errors.append(f'{DOC}: {r.group(1)} is stated twice')
        rules[r.group(1)] = FILE.findall(head)
    if not rules:
        errors.append(f'{DOC}: section "{SECTION}" states no rule (**Rn — name**)')
    return rules


def citations(root, errors):
    cited = {}  # rule -> set of files citing it
    for rel in tree_files.source_files(str(root), CODE_DIRS):
        p = root / rel
        if p.suffix not in ('.h', '.cc'):
            continue
        for n, line in enumerate(p.read_text().split('\n'), 1):
            for m in CITE.finditer(line):
                if m.group(2) != f'{DOC} "{SECTION}"':
                    errors.append(f'{rel}:{n}: cites "{m.group(2)}", not {DOC} "{SECTION}"')
                for rule in re.findall(r'R\d+', m.group(1)):
                    cited.setdefault(rule, set()).add(rel)
    return cited


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '.')
    errors = []
    rules = rules_in_doc(root, errors)
    cited = citations(root, errors)
    for rule in sorted(set(cited) - set(rules)):
        errors.append(f'{", ".join(sorted(cited[rule]))}: cites {rule}, which {DOC} does not state')
    for rule, files in sorted(rules.items()):
        if rule not in cited:
            errors.append(f'{rule}: stated in {DOC} but cited by no code')
        for f in files:
            if not (root / f).exists():
                errors.append(f'{rule}: {DOC} names {f}, which does not exist')
            elif f not in cited.get(rule, set()):
                errors.append(f'{rule}: {DOC} names {f}, which does not cite it')
    for e in errors:
        print(e)
    n_sites = sum(len(v) for v in cited.values())
    print(f'{len(rules)} rules, cited from {n_sites} (rule, file) pairs; {len(errors)} error(s)')
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
