#!/usr/bin/python3
"""The repository's Python tools say what they are in --help in whole
sentences: a description taken from the module's docstring is its whole
first paragraph (or more), never its first line cut mid-sentence
(`tools/plot_replay.py --help` printed "Draws a gwlb-replay run: traffic per
appliance over capture time, every event").

  tool_help.py SRCROOT

Runs `/usr/bin/python3 FILE --help` for every tracked .py file that builds
an argparse parser and has a module docstring, and checks that it exits 0
and that its description, when it comes from the docstring, ends where a
paragraph of the docstring ends.
"""
import ast
import os
import subprocess
import sys

src = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(src, "tests/setup"))
import tree_files  # noqa: E402

failures = []


def words(text):
    return " ".join(text.split())


def description(help_out):
    """The paragraph argparse prints between the usage lines and the first
    argument section ("" when the parser has none)."""
    paras = [p for p in help_out.split("\n\n") if p.strip()]
    if len(paras) < 2:
        return ""
    first = paras[1]
    if first.rstrip().endswith(":") and "\n  " in first:  # an argument section, no description
        return ""
    if first.split("\n", 1)[0].rstrip().endswith(("arguments:", "options:")):
        return ""
    return words(first)


checked = 0
for rel in tree_files.source_files(src):
    if not rel.endswith(".py"):
        continue
    path = os.path.join(src, rel)
    text = open(path, encoding="utf-8").read()
    tree = ast.parse(text)
    imports = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
               for a in n.names} | {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    if "argparse" not in imports:
        continue
    doc = ast.get_docstring(tree, clean=False)
    if not doc:
        continue
    r = subprocess.run(["/usr/bin/python3", path, "--help"], capture_output=True, text=True,
                       timeout=120, cwd=src)
    checked += 1
    if r.returncode != 0:
        failures.append(f"{rel} --help: exit {r.returncode}: {r.stderr.strip()[-300:]}")
        continue
    desc = description(r.stdout)
    paras = [p for p in doc.split("\n\n")]
    whole = {words("\n\n".join(paras[:k])) for k in range(1, len(paras) + 1)}
    if desc and words(doc).startswith(desc) and desc not in whole:
        failures.append(f"{rel} --help: the description stops inside a paragraph of the "
                        f"docstring: ...{desc[-70:]!r}")
    else:
        print(f"ok   {rel} --help")

for f in failures:
    print("FAIL " + f)
print(f"tool_help: {checked} tools, {len(failures)} failure(s)")
sys.exit(1 if failures or checked < 10 else 0)
