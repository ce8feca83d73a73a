#!/usr/bin/env python3
"""Man pages from each binary's --help (help2man-like: the help is the one
source, so the pages never drift from it).

  gen_man.py --bin PATH --name NAME --section N --summary TEXT --out FILE
             [--commands]   (gwlbctl: one subsection per command, from
                             `gwlbctl COMMAND --help`)

The help text is read as: "usage:" lines (SYNOPSIS); plain paragraphs
(DESCRIPTION); a line "title:" opens a section whose indented lines
"  OPTION ARG   text" become tagged paragraphs (continuation lines, indented
deeper, join the text); a paragraph "title: text" (signals:, exit status:,
environment:, HTTP:) becomes a section of that title. Option lines before
any title go to OPTIONS. tests/setup/check_man_completion.py checks the
pages against --help.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys


def help_text(binary, *args):
    r = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=60)
    return r.stdout if r.stdout.strip() else r.stderr


def version(binary):
    r = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    return r.stdout.strip()


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + s if s[:1] in (".", "'") else s


SECTIONS = ("exit status", "signals", "environment", "files")
ITEM = re.compile(r"^ {1,4}(\S.*?)(?: {2,}(\S.*))?$")


def parse(text):
    """(usage lines, [(section title or None, kind, payload)])
    kind "para": payload = text; kind "items": payload = [(tag, text)]."""
    lines = text.rstrip("\n").split("\n")
    usage, i = [], 0
    while i < len(lines) and (lines[i].startswith("usage:") or lines[i].lstrip().startswith("or:")
                              or (usage and lines[i].startswith("  ") and lines[i].strip().startswith(("gwlb", "[")))):
        usage.append(re.sub(r"^\s*(usage:|or:)\s*", "", lines[i]).strip())
        i += 1
    blocks, title, para, items = [], None, [], None

    def flush_para():
        nonlocal para
        if para:
            blocks.append((title, "para", " ".join(p.strip() for p in para)))
            para = []

    for line in lines[i:]:
        if not line.strip():
            flush_para()
            items = None
            continue
        m_title = re.match(r"^([A-Za-z][A-Za-z ()]*):$", line)
        m_inline = re.match(r"^([A-Za-z][A-Za-z ]{0,20}):\s+(\S.*)$", line)
        if not m_inline:  # an indented "exit status: ..." paragraph
            m_inline = re.match(r"^ {1,2}(exit status|signals|environment|files):\s+(\S.*)$", line)
        if m_title:
            flush_para()
            title, items = m_title.group(1), None
            continue
        if m_inline and (not line.startswith(" ") or m_inline.group(1) in SECTIONS):
            flush_para()
            title, items = m_inline.group(1), None
            para = [m_inline.group(2)]
            continue
        m = ITEM.match(line)
        if items is not None and line.startswith("      "):
            items[-1][1] = (items[-1][1] + " " + line.strip()).strip()
            continue
        if m and line.startswith(" ") and (m.group(1).startswith("-") or (title and not para)):
            flush_para()
            if items is None:
                items = []
                blocks.append((title if title else "options", "items", items))
            items.append([m.group(1).strip(), (m.group(2) or "").strip()])
            continue
        para.append(line)
    flush_para()
    return usage, blocks


def render_blocks(blocks, top_title="DESCRIPTION", level="SH"):
    out, current = [], None
    for title, kind, payload in blocks:
        t = (title or top_title).upper() if level == "SH" else (title or "")
        if t and t != current:
            out.append(f".{level} {esc(t)}" if level == "SH" else f".PP\n\\fI{esc(t)}:\\fR")
            current = t
        if kind == "para":
            out.append(".PP\n" + esc(payload))
        else:
            for tag, text in payload:
                out.append(f".TP\n\\fB{esc(tag)}\\fR\n{esc(text)}")
    return out


def command_names(top_help):
    """Command names from gwlbctl's top-level help ("commands:" section)."""
    _, blocks = parse(top_help)
    names = []
    for title, kind, payload in blocks:
        if kind == "items" and title == "commands":
            for tag, _ in payload:
                words = []
                for w in tag.split():
                    if not re.match(r"^[a-z][a-z-]*$", w):
                        break
                    words.append(w)
                names.append(" ".join(words))
    return names


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--section", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commands", action="store_true")
    a = ap.parse_args()
    text = help_text(a.bin)
    usage, blocks = parse(text)
    date = datetime.datetime.utcfromtimestamp(
        int(os.environ.get("SOURCE_DATE_EPOCH", "0")) or datetime.datetime.utcnow().timestamp()
    ).strftime("%Y-%m-%d")
    ver = version(a.bin)
    out = [f'.\\" Generated by tools/gen_man.py from `{a.name} --help`: do not edit.',
           f'.TH {a.name.upper()} {a.section} "{date}" "{esc(ver)}" "gwlb manual"',
           ".SH NAME", f"{esc(a.name)} \\- {esc(a.summary)}", ".SH SYNOPSIS"]
    for u in usage:
        out.append(".nf\n" + esc(u) + "\n.fi")
    out += render_blocks(blocks)
    if a.commands:
        out.append(".SH COMMAND DETAILS")
        for name in command_names(text):
            if name == "help":
                continue
            sub = help_text(a.bin, *name.split())
            susage, sblocks = parse(sub)
            out.append(f".SS {esc(name)}")
            for u in susage:
                out.append(".nf\n" + esc(u) + "\n.fi")
            out += render_blocks(sblocks, top_title="", level="PP")
    out += [".SH SEE ALSO",
            ", ".join(f"\\fB{n}\\fR({s})" for n, s in
                      [("gwlbd", "8"), ("gwlbctl", "8"), ("gwlb-replay", "1"), ("gwlb-appliance", "1"),
                       ("gwlb-probe", "1")]
                      if n != a.name) + "; /usr/share/doc/gwlb/"]
    with open(a.out, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    sys.exit(main())
