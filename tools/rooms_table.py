"""The rooms table of docs/architecture.md ("Rooms and who may use whom"), read
once for the two that need it: tests/unit/check_rooms.py (includes, meson
dependencies, the doc) and tools/gen_rooms_svg.py (docs/rooms.svg).

  read(root) -> [Room] in the table's order; raises TableError saying what is wrong
"""
import re
from dataclasses import dataclass, field

DOC = "docs/architecture.md"
SECTION = "Rooms and who may use whom"
COLUMNS = ["room", "folder", "libraries", "programs", "owns", "may use"]
# A library marked so has no DPDK on its include path although its room may
# use the dataplane (gwlb_engine_rules, gwlb_fleet_rules).
NO_DPDK = "(no DPDK)"


class TableError(Exception):
    pass


@dataclass(eq=False)
class Room:
    name: str
    folder: str                                     # "control/config", no slash at the end
    libraries: dict = field(default_factory=dict)   # name -> True when marked (no DPDK)
    programs: list = field(default_factory=list)
    owns: str = ""
    may_use: list = field(default_factory=list)
    line: int = 0                                   # line of its row in the doc


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _none(cell):
    return cell in ("", "—", "-")


def parse(text):
    """The rooms of the section's first markdown table, in its order."""
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.strip() == "## " + SECTION), None)
    if start is None:
        raise TableError(f'{DOC}: no section "## {SECTION}"')
    i = start + 1
    while i < len(lines) and not lines[i].startswith("|"):
        if lines[i].startswith("## "):
            raise TableError(f'{DOC}: section "{SECTION}" has no table')
        i += 1
    if i == len(lines):
        raise TableError(f'{DOC}: section "{SECTION}" has no table')
    head = _cells(lines[i])
    if head != COLUMNS:
        raise TableError(f"{DOC}:{i + 1}: the rooms table's columns must be {COLUMNS}, not {head}")
    rooms = []
    for j in range(i + 2, len(lines)):
        if not lines[j].startswith("|"):
            break
        c = _cells(lines[j])
        where = f"{DOC}:{j + 1}"
        if len(c) != len(COLUMNS):
            raise TableError(f"{where}: {len(c)} cells, not {len(COLUMNS)}")
        folder = re.fullmatch(r"`([a-z_/]+?)/?`", c[1])
        if not re.fullmatch(r"[a-z_]+", c[0]) or not folder:
            raise TableError(f"{where}: a row starts with the room's name and its folder in backquotes")
        room = Room(name=c[0], folder=folder.group(1), owns=c[4], line=j + 1)
        if not _none(c[2]):
            for lib, mark in re.findall(r"`([\w-]+)`(\s*\(no DPDK\))?", c[2]):
                room.libraries[lib] = bool(mark)
        if not _none(c[3]):
            room.programs = re.findall(r"`([\w-]+)`", c[3])
        if not _none(c[5]):
            room.may_use = [u.strip() for u in c[5].split(",")]
        rooms.append(room)
    names = [r.name for r in rooms]
    for r in rooms:
        if names.count(r.name) > 1:
            raise TableError(f"{DOC}:{r.line}: room {r.name} has two rows")
        for u in r.may_use:
            if u not in names:
                raise TableError(f"{DOC}:{r.line}: room {r.name} may use {u!r}, which is no room of the table")
            if u == r.name:
                raise TableError(f"{DOC}:{r.line}: room {r.name} lists itself under may use")
    loop = cycle(rooms)
    if loop:
        raise TableError(f"{DOC}: the arrows make a cycle: {' -> '.join(loop)} (arrows go one way only)")
    return rooms


def read(root):
    with open(f"{root}/{DOC}", encoding="utf-8") as f:
        return parse(f.read())


def cycle(rooms):
    """A list of room names closing a cycle of may-use arrows, or [] when there is none."""
    uses = {r.name: r.may_use for r in rooms}
    state = {}  # name -> 1 on the path, 2 done
    path = []

    def visit(n):
        state[n] = 1
        path.append(n)
        for u in uses.get(n, []):
            if state.get(u) == 1:
                return path[path.index(u):] + [u]
            if u not in state:
                found = visit(u)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return []

    for r in rooms:
        if r.name not in state:
            found = visit(r.name)
            if found:
                return found
    return []


def room_of(path, rooms):
    """The room whose folder is the longest prefix of path (repository-relative), or None."""
    best = None
    for r in rooms:
        if path.startswith(r.folder + "/") and (best is None or len(r.folder) > len(best.folder)):
            best = r
    return best
