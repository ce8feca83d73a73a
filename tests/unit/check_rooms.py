#!/usr/bin/env python3
"""Checks the product tree against docs/architecture.md "Rooms and who may use
whom" (the table, read by tools/rooms_table.py):

- every `#include "…"` in a room's files names its own room or one its row
  may use (never tests/, bench/ or a file outside the rooms); `<rte_*.h>` only
  in rooms that may use the dataplane, never in a source of a "(no DPDK)"
  library;
- every control/ folder is a row, every row's folder exists;
- the meson.build files agree: each library or program depends only on rooms
  its row lists, reaches every room its row lists, is named in its row, and
  has DPDK exactly where its row says;
- README.md's layout section names every room;
- no product source file (a room's, or bench/'s: C++, Python, shell) is over
  700 lines: no exception, not even for a table. Data a program writes (the
  instruction budgets' JSON) is not source.

Each failure names the file (and line), what it includes or depends on, and
the rule it breaks.

Usage: check_rooms.py SOURCE_ROOT          check the tree
       check_rooms.py --self-test SOURCE_ROOT
           build a small tree with wrong-way includes and dependencies and
           show each rejected with the expected message, a right-way one
           accepted (the real table, a copy of the real meson.build files)
"""
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'setup'))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs
import rooms_table  # noqa: E402  the table itself

RULE = f'{rooms_table.DOC} "{rooms_table.SECTION}"'
MAX_LINES = 700
# Headers the build writes (meson.build: configure_file, vcs_tag).
GENERATED = {"version.h", "gwlb_version.h"}
CODE = (".h", ".cc", ".hpp", ".cpp", ".def", ".in")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def uses_text(room):
    return ", ".join(room.may_use) if room.may_use else "no other room"


def may_have_dpdk(room):
    return room.name == "dataplane" or "dataplane" in room.may_use


# ---- the tree against the table ----------------------------------------------

def check_folders(root, rooms, files):
    errors = []
    folders = {r.folder for r in rooms}
    told = set()
    for f in files:
        parts = f.split("/")
        if parts[0] != "control" or len(parts) < 2:
            continue
        if len(parts) == 2:
            if f.endswith(CODE):
                errors.append(f"{f}: code directly in control/; control/ holds rooms only ({RULE})")
            continue
        if "control/" + parts[1] not in folders and parts[1] not in told:
            told.add(parts[1])
            errors.append(f"{f}: control/{parts[1]}/ is no room of the table ({RULE}): "
                          f"add a row for it or move its files into a room")
    for r in rooms:
        if not any(f.startswith(r.folder + "/") for f in files):
            errors.append(f"{rooms_table.DOC}:{r.line}: room {r.name}'s folder {r.folder}/ "
                          f"holds no file")
    return errors


def check_includes(root, rooms, files, no_dpdk_sources=()):
    errors = []
    for f in files:
        room = rooms_table.room_of(f, rooms)
        if room is None or not f.endswith(CODE):
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, inc = m.groups()
            where = f"{f}:{n}: #include {kind}{inc}{'>' if kind == '<' else kind}"
            if kind == "<":
                if not os.path.basename(inc).startswith("rte_"):
                    continue
                if not may_have_dpdk(room):
                    errors.append(f"{where}: a DPDK header in room {room.name}, which may not use "
                                  f"the dataplane (may use: {uses_text(room)}; {RULE})")
                elif f in no_dpdk_sources:
                    errors.append(f"{where}: a DPDK header in {f}, a source of "
                                  f"{no_dpdk_sources[f]}, which is marked (no DPDK) ({RULE})")
                continue
            if inc in GENERATED:
                continue
            target = rooms_table.room_of(inc, rooms)
            if target is None:
                if os.path.isfile(os.path.join(root, inc)):
                    errors.append(f"{where}: product code may include only the rooms' files, "
                                  f"not {inc.split('/')[0]}/ ({RULE})")
                else:
                    errors.append(f"{where}: no such file; includes are written from the "
                                  f"repository root (\"control/fleet/fleet_sync.h\")")
                continue
            if target is room or target.name in room.may_use:
                continue
            errors.append(f"{where}: room {room.name} ({room.folder}/) may not use room "
                          f"{target.name} ({target.folder}/); {room.name} may use: "
                          f"{uses_text(room)} ({RULE})")
    return errors


# Product folders outside the rooms whose files the size limit covers too.
SIZED_OUTSIDE_ROOMS = ("bench/",)
# What the size limit covers: source, not data a program writes and reads
# (bench/instruction_budget.json grows a case at a time, by its checker).
SIZED = CODE + (".py", ".sh")


def check_sizes(root, rooms, files):
    errors = []
    for f in files:
        outside = rooms_table.room_of(f, rooms) is None and not f.startswith("control/") \
            and not f.startswith(SIZED_OUTSIDE_ROOMS)
        if outside or not f.endswith(SIZED):
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        n = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if n > MAX_LINES:
            errors.append(f"{f}: {n} lines, over {MAX_LINES}: split it along its seams, into "
                          f"parts a name explains ({RULE})")
    return errors


def check_readme(root, rooms):
    path = os.path.join(root, "README.md")
    text = open(path, encoding="utf-8").read() if os.path.isfile(path) else ""
    m = re.search(r"^## Layout\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not m:
        return ['README.md: no section "## Layout" (one line per room)']
    return [f"README.md: the layout section does not name room {r.name} (`{r.folder}/`)"
            for r in rooms if f"`{r.folder}/`" not in m.group(1)]


# ---- meson.build -------------------------------------------------------------

def strip_comments(text):
    """Meson text with # comments blanked (strings kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("'''", i):
            j = text.find("'''", i + 3)
            j = n if j < 0 else j + 3
            out.append(text[i:j])
            i = j
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_top(args):
    """Top-level comma-separated parts of a call's argument text."""
    parts, depth, cur, quote = [], 0, [], False
    for c in args:
        if c == "'":
            quote = not quote
        elif not quote and c in "([{":
            depth += 1
        elif not quote and c in ")]}":
            depth -= 1
        if c == "," and depth == 0 and not quote:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def call_args(text, start):
    """The text between the parenthesis at `start` and its match."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        c = text[i]
        if c == "'":
            quote = not quote
        elif not quote and c == "(":
            depth += 1
        elif not quote and c == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return text[start + 1:]


CALL = re.compile(r"(?:\b(\w+)\s*=\s*)?\b(static_library|shared_library|library|executable|"
                  r"declare_dependency|dependency)\s*\(")


class Meson:
    """Targets and dependencies declared in the product's meson.build files."""

    def __init__(self, root, rooms, files):
        self.targets = []   # dicts: kind, name, var, file, sources, deps, room
        self.deps = {}      # var -> {libs, deps, file}
        self.dpdk_vars = set()
        self.errors = []
        self.rooms = rooms
        for mf in files:
            if not mf.endswith("meson.build"):
                continue
            if mf != "meson.build" and not mf.startswith("control/") \
                    and rooms_table.room_of(mf, rooms) is None:
                continue
            self._read(root, mf)
        self.lib_by_var = {t["var"]: t for t in self.targets if t["var"]}

    def _read(self, root, mf):
        text = strip_comments(open(os.path.join(root, mf), encoding="utf-8").read())
        base = os.path.dirname(mf)
        # Lists of file names set once in the file (name = ['a.cc', ...]) and
        # passed to a target by name count as its sources.
        lists = {v: re.findall(r"'([^']*)'", body)
                 for v, body in re.findall(r"^(\w+)\s*=\s*\[([^\[\]]*)\]", text, re.M)}
        for m in CALL.finditer(text):
            var, kind = m.group(1), m.group(2)
            args = split_top(call_args(text, m.end() - 1))
            pos = [a for a in args if not re.match(r"\w+\s*:", a)]
            kw = {}
            for a in args:
                k = re.match(r"(\w+)\s*:\s*(.*)", a, re.S)
                if k:
                    kw[k.group(1)] = k.group(2)
            if kind == "dependency":
                if var and pos and pos[0].strip("'") == "libdpdk":
                    self.dpdk_vars.add(var)
                continue
            deps = self._dep_list(kw.get("dependencies", ""))
            if kind == "declare_dependency":
                if var:
                    libs = re.findall(r"\w+", kw.get("link_with", ""))
                    self.deps[var] = {"libs": libs, "deps": deps, "file": mf}
                continue
            strings = []
            for a in pos:
                strings += lists.get(a.strip(), []) if a.strip() in lists else re.findall(r"'([^']*)'", a)
            if not strings:
                continue
            sources = [os.path.normpath(os.path.join(base, s)) for s in strings[1:]]
            src_rooms = {rooms_table.room_of(s, self.rooms) for s in sources} - {None}
            room = None
            if len(src_rooms) > 1:
                self.errors.append(f"{mf}: {strings[0]} builds files of rooms "
                                   f"{', '.join(sorted(r.name for r in src_rooms))}: "
                                   f"one library, one room ({RULE})")
            elif src_rooms:
                room = src_rooms.pop()
            self.targets.append({"kind": "library" if "library" in kind else "program",
                                 "name": strings[0], "var": var, "file": mf,
                                 "sources": sources, "deps": deps, "room": room})

    @staticmethod
    def _dep_list(text):
        text = text.strip()
        if text.startswith("["):
            text = text[1:-1]
        out = []
        for a in split_top(text):
            if re.fullmatch(r"\w+", a):
                out.append(a)
            elif re.search(r"find_library\(\s*'rte_|dependency\(\s*'libdpdk'", a):
                out.append("<dpdk>")
        return out

    def dep_room(self, dep):
        """The room of a declared dependency (its library's room), or None (external)."""
        d = self.deps.get(dep)
        if not d:
            return None
        for lib in d["libs"]:
            t = self.lib_by_var.get(lib)
            if t and t["room"]:
                return t["room"]
        return None

    def reach(self, deps, seen=None):
        """(rooms, has DPDK) reached through a dependency list."""
        seen = set() if seen is None else seen
        rooms, dpdk = set(), False
        for d in deps:
            if d in seen:
                continue
            seen.add(d)
            if d == "<dpdk>" or d in self.dpdk_vars:
                dpdk = True
                continue
            if d in self.deps:
                r = self.dep_room(d)
                if r:
                    rooms.add(r.name)
                sub, sub_dpdk = self.reach(self.deps[d]["deps"], seen)
                rooms |= sub
                dpdk = dpdk or sub_dpdk
        return rooms, dpdk

    def no_dpdk_sources(self):
        """source path -> library name, for the libraries marked (no DPDK)."""
        out = {}
        for t in self.targets:
            room = t["room"]
            if t["kind"] == "library" and room and room.libraries.get(t["name"]):
                for s in t["sources"]:
                    out[s] = t["name"]
        return out


def check_meson(root, rooms, files, meson=None):
    meson = meson or Meson(root, rooms, files)
    errors = list(meson.errors)
    for t in meson.targets:
        room = t["room"]
        if room is None:
            continue
        what = f"{t['file']}: {t['name']}"
        for d in t["deps"]:
            if d.endswith("_dep") and d not in meson.deps:
                errors.append(f"{what} depends on {d}, which no product meson.build declares")
            r = meson.dep_room(d)
            if r and r is not room and r.name not in room.may_use:
                errors.append(f"{what} depends on {d} (room {r.name}), which room {room.name} "
                              f"may not use; {room.name} may use: {uses_text(room)} ({RULE})")
        if t["kind"] == "library":
            _, dpdk = meson.reach(t["deps"])
            marked = room.libraries.get(t["name"], False)
            want = may_have_dpdk(room) and not marked
            if dpdk and not want:
                why = "is marked (no DPDK)" if marked else \
                      f"is in room {room.name}, which may not use the dataplane"
                errors.append(f"{what} has DPDK (dataplane_dep or libdpdk among its dependencies) "
                              f"but {why} ({RULE})")
            elif want and not dpdk:
                errors.append(f"{what} has no DPDK although room {room.name} may use the "
                              f"dataplane: mark it (no DPDK) in the table ({RULE})")
    for room in rooms:
        mine = [t for t in meson.targets if t["room"] is room]
        reached = set()
        for t in mine:
            reached |= meson.reach(t["deps"])[0]
        for u in room.may_use:
            if u not in reached:
                errors.append(f"{rooms_table.DOC}:{room.line}: room {room.name} may use {u}, but "
                              f"no library or program of {room.folder}/ depends on it (directly "
                              f"or through another): drop the arrow or add the dependency")
        libs = {t["name"] for t in mine if t["kind"] == "library"}
        progs = {t["name"] for t in mine if t["kind"] == "program"}
        for name in sorted(libs ^ set(room.libraries)):
            errors.append(f"{rooms_table.DOC}:{room.line}: library {name}: "
                          + ("built from " + room.folder + "/ but not named in its row"
                             if name in libs else f"named in the row but not built from {room.folder}/"))
        for name in sorted(progs ^ set(room.programs)):
            errors.append(f"{rooms_table.DOC}:{room.line}: program {name}: "
                          + ("built from " + room.folder + "/ but not named in its row"
                             if name in progs else f"named in the row but not built from {room.folder}/"))
    return errors


def check(root):
    try:
        rooms = rooms_table.read(root)
    except rooms_table.TableError as e:
        return [str(e)], None
    files = tree_files.source_files(root)
    meson = Meson(root, rooms, files)
    errors = check_folders(root, rooms, files)
    errors += check_includes(root, rooms, files, meson.no_dpdk_sources())
    errors += check_meson(root, rooms, files, meson)
    errors += check_readme(root, rooms)
    errors += check_sizes(root, rooms, files)
    return errors, rooms


# ---- --self-test: a wrong-way include and dependency, rejected ----------------

def self_test(root):
    rooms = rooms_table.read(root)
    failures = []
    tmp = tempfile.mkdtemp(prefix="check_rooms_")
    try:
        def put(path, text):
            p = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)

        put("control/engine/engine.h", "#pragma once\n")
        put("control/config/config.h", "#pragma once\n")
        put("tests/unit/helper.h", "#pragma once\n")
        put("control/config/x.cc", '// wrong way: config may not use engine\n'
                                   '#include "control/engine/engine.h"\n')
        put("dataplane/y.cc", '#include <cstdint>\n\n#include "control/config/config.h"\n')
        put("control/engine/z.cc", '// right way: engine may use config\n'
                                   '#include "control/config/config.h"\n')
        put("control/config/w.cc", "#include <rte_mbuf.h>\n")
        put("control/engine/rules.cc", "#include <rte_ring.h>\n")
        put("control/engine/ok_dpdk.cc", "#include <rte_ring.h>\n")
        put("control/api/t.cc", '#include "tests/unit/helper.h"\n')
        put("tests/unit/anything.cc", '#include "control/daemon/daemon.h"\n')
        put("dataplane/big.cc", "// logic\n" + "int x;\n" * MAX_LINES)
        put("control/config/keys.cc", "// The key table: a declarative table, one entry a key.\n"
            + "int k;\n" * MAX_LINES)
        put("bench/big_bench.cc", "// a benchmark\n" + "int b;\n" * MAX_LINES)
        put("bench/small_bench.cc", "// a benchmark\n" + "int b;\n" * (MAX_LINES - 1))
        files = tree_files.source_files(tmp)
        got = check_includes(tmp, rooms, files, {"control/engine/rules.cc": "gwlb_engine_rules"})
        got += check_sizes(tmp, rooms, files)
        expected = {
            "control/config/x.cc": 'control/config/x.cc:2: #include "control/engine/engine.h": '
                                   'room config (control/config/) may not use room engine '
                                   '(control/engine/); config may use: common',
            "dataplane/y.cc": 'dataplane/y.cc:3: #include "control/config/config.h": room dataplane '
                              '(dataplane/) may not use room config (control/config/); '
                              'dataplane may use: common',
            "control/config/w.cc": "control/config/w.cc:1: #include <rte_mbuf.h>: a DPDK header in "
                                   "room config, which may not use the dataplane",
            "control/engine/rules.cc": "control/engine/rules.cc:1: #include <rte_ring.h>: a DPDK "
                                       "header in control/engine/rules.cc, a source of "
                                       "gwlb_engine_rules, which is marked (no DPDK)",
            "control/api/t.cc": 'control/api/t.cc:1: #include "tests/unit/helper.h": product code '
                                'may include only the rooms\' files, not tests/',
            "dataplane/big.cc": "dataplane/big.cc: 701 lines, over 700",
            "control/config/keys.cc": "control/config/keys.cc: 701 lines, over 700",
            "bench/big_bench.cc": "bench/big_bench.cc: 701 lines, over 700",
        }
        for f, want in expected.items():
            mine = [e for e in got if e.startswith(f + ":")]
            if not any(e.startswith(want) for e in mine):
                failures.append(f"expected {f} rejected with\n    {want}...\n  got {mine or 'nothing'}")
        for e in got:
            if not any(e.startswith(f + ":") for f in expected):
                failures.append(f"accepted file rejected: {e}")
        for e in got:
            print("rejected as expected:", e)

        # meson: a copy of the real meson.build files, then config made to link the engine.
        real = tree_files.source_files(root)
        for mf in real:
            if mf.endswith("meson.build") and (mf == "meson.build" or mf.startswith("control/")
                                               or rooms_table.room_of(mf, rooms)):
                dst = os.path.join(tmp, mf)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(os.path.join(root, mf), dst)
        files = tree_files.source_files(tmp)
        before = set(check_meson(tmp, rooms, files))
        cfg = os.path.join(tmp, "control/config/meson.build")
        text = open(cfg, encoding="utf-8").read()
        wrong = text.replace("dependencies: [common_dep", "dependencies: [engine_rules_dep, common_dep", 1)
        if wrong == text:
            failures.append("control/config/meson.build: no 'dependencies: [common_dep' to make wrong")
        open(cfg, "w", encoding="utf-8").write(wrong)
        new = sorted(set(check_meson(tmp, rooms, files)) - before)
        want = ("control/config/meson.build: gwlb_config depends on engine_rules_dep (room engine), "
                "which room config may not use; config may use: common")
        if not any(e.startswith(want) for e in new):
            failures.append(f"expected the wrong-way meson dependency rejected with\n    {want}...\n"
                            f"  got {new or 'nothing'}")
        for e in new:
            print("rejected as expected:", e)

        # The table itself: a cycle is refused.
        text = open(os.path.join(root, rooms_table.DOC), encoding="utf-8").read()
        looped = re.sub(r"^(\| common \|.*\| )— \|$", r"\1daemon |", text, count=1, flags=re.M)
        try:
            rooms_table.parse(looped)
            failures.append("a table where common may use daemon was accepted (a cycle)")
        except rooms_table.TableError as e:
            if "cycle" not in str(e):
                failures.append(f"a cyclic table was refused for another reason: {e}")
            else:
                print("rejected as expected:", e)
    finally:
        shutil.rmtree(tmp)
    return failures


def main(argv):
    if len(argv) == 3 and argv[1] == "--self-test":
        failures = self_test(argv[2])
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        if not failures:
            print("check_rooms self-test: wrong-way includes, a DPDK header, a file outside the "
                  "rooms, oversized files (a room's, a declarative table, a benchmark), a wrong-way "
                  "meson dependency and a cycle rejected; right-way includes and a 700-line "
                  "benchmark accepted")
        return 1 if failures else 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors, rooms = check(argv[1])
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"\n{len(errors)} problem(s) against {RULE}", file=sys.stderr)
        return 1
    print(f"rooms: {len(rooms)} rooms; every include, meson dependency and file size agrees "
          f"with {RULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
