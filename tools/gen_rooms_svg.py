#!/usr/bin/python3
"""Draws docs/rooms.svg from the rooms table of docs/architecture.md ("Rooms and
who may use whom"): one box per room, layered by how deep its arrows go (a room
above every room it may use), one arrow per "may use", coloured as the room it
leaves. Pure Python, no Graphviz: a small layered layout (long arrows pass
between the boxes of the layers they cross; orders within a layer chosen to
cross less; positions pulled towards their neighbours).

usage: gen_rooms_svg.py [--check] [--png FILE]
  --check     exit 1 if docs/rooms.svg is not what the table draws (unit test rooms_svg)
  --png FILE  also draw the same picture to a PNG with Pillow, to look at it
"""
import os
import sys

import rooms_table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = "docs/rooms.svg"

BOX_W, BOX_H = 170, 50
DUMMY_W = 8
GAP_BOX, GAP_DUMMY = 30, 7
LAYER_GAP = 96          # vertical space between two layers' boxes
MARGIN, TITLE_H = 24, 66
PALETTE = ["#4e79a7", "#e15759", "#59a14f", "#b07aa1", "#f28e2b", "#76b7b2",
           "#9c755f", "#d37295", "#8c8c00", "#2f4b7c", "#a05195", "#665191"]
GREY = "#8a8a8a"


class Node:
    def __init__(self, name, layer, room=None):
        self.name, self.layer, self.room = name, layer, room
        self.width = BOX_W if room else DUMMY_W
        self.up, self.down = [], []   # neighbours in the layer above / below
        self.x = 0.0


def foundations(rooms):
    """Rooms nearly everything uses (all but at most two others, using none themselves):
    drawn as a bar under the rest, their arrows not drawn but said in words."""
    out = []
    for r in rooms:
        users = [o.name for o in rooms if r.name in o.may_use]
        if not r.may_use and len(rooms) - 1 - len(users) <= 2:
            out.append((r, [o.name for o in rooms if o is not r and o.name not in users]))
    return out


def layout(rooms):
    skip = {r.name for r, _ in foundations(rooms)}
    rooms = [r for r in rooms if r.name not in skip]
    by_name = {r.name: r for r in rooms}
    depth = {}

    def d(n):
        if n not in depth:
            depth[n] = 1 + max((d(u) for u in by_name[n].may_use if u not in skip), default=-1)
        return depth[n]

    for r in rooms:
        d(r.name)
    top = max(depth.values())
    layers = [[] for _ in range(top + 1)]   # layers[0] is drawn on top
    nodes = {}
    for r in rooms:
        n = Node(r.name, top - depth[r.name], r)
        nodes[r.name] = n
        layers[n.layer].append(n)
    edges = []   # (source room, target room, [nodes from source to target])
    for r in rooms:
        for u in r.may_use:
            if u in skip:
                continue
            chain = [nodes[r.name]]
            for layer in range(nodes[r.name].layer + 1, nodes[u].layer):
                dummy = Node(f"{r.name}>{u}@{layer}", layer)
                layers[layer].append(dummy)
                chain.append(dummy)
            chain.append(nodes[u])
            for a, b in zip(chain, chain[1:]):
                a.down.append(b)
                b.up.append(a)
            edges.append((r.name, u, chain))

    # Orders: barycentre sweeps, down then up, keeping the order with fewest crossings.
    def crossings():
        total = 0
        for layer in layers[:-1]:
            pos = {id(n): i for i, n in enumerate(layers[layer[0].layer + 1])} if layer else {}
            segs = [(i, pos[id(b)]) for i, a in enumerate(layer) for b in a.down]
            total += sum(1 for s in segs for t in segs if s[0] < t[0] and s[1] > t[1])
        return total

    def sweep(order, side):
        for layer in order:
            index = {}
            for lay in layers:
                for i, n in enumerate(lay):
                    index[id(n)] = i
            def key(item):
                i, n = item
                nb = getattr(n, side)
                return (sum(index[id(m)] for m in nb) / len(nb)) if nb else i
            layers[layer][:] = [n for _, n in sorted(enumerate(layers[layer]), key=key)]

    best = (crossings(), [list(l) for l in layers])
    for _ in range(12):
        sweep(range(1, len(layers)), "up")
        sweep(range(len(layers) - 2, -1, -1), "down")
        c = crossings()
        if c < best[0]:
            best = (c, [list(l) for l in layers])
    layers[:] = best[1]

    # Positions: each node pulled to its neighbours' mean, the order kept, nothing overlapping.
    def sep(a, b):
        gap = GAP_BOX if (a.room and b.room) else GAP_DUMMY if not (a.room or b.room) \
            else (GAP_BOX + GAP_DUMMY) / 2
        return (a.width + b.width) / 2 + gap

    def place(layer, want):
        # Isotonic regression (pool adjacent violators) on x minus the packed offsets.
        offs = [0.0]
        for a, b in zip(layer, layer[1:]):
            offs.append(offs[-1] + sep(a, b))
        blocks = []   # [mean, count]
        for w, o in zip(want, offs):
            blocks.append([w - o, 1])
            while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
                m2, c2 = blocks.pop()
                m1, c1 = blocks.pop()
                blocks.append([(m1 * c1 + m2 * c2) / (c1 + c2), c1 + c2])
        ys = [m for m, c in blocks for _ in range(c)]
        for n, y, o in zip(layer, ys, offs):
            n.x = y + o

    for layer in layers:
        place(layer, [0.0] * len(layer))
        mid = (layer[0].x + layer[-1].x) / 2
        for n in layer:
            n.x -= mid
    for _ in range(40):
        for layer in layers[1:] + layers[::-1]:
            want = []
            for n in layer:
                nb = n.up + n.down
                want.append(sum(m.x for m in nb) / len(nb) if nb else n.x)
            place(layer, want)
    left = min(n.x - n.width / 2 for lay in layers for n in lay)
    for lay in layers:
        for n in lay:
            n.x += MARGIN - left
    return layers, edges


def fmt(v):
    return f"{v:.1f}".rstrip("0").rstrip(".")


def draw(rooms):
    layers, edges = layout(rooms)
    colour, used = {}, 0
    for r in rooms:   # a colour for each room with an arrow drawn; grey for the others
        colour[r.name] = GREY
        if any(src == r.name for src, _, _ in edges):
            colour[r.name] = PALETTE[used % len(PALETTE)]
            used += 1
    width = max(n.x + n.width / 2 for lay in layers for n in lay) + MARGIN
    width = max(width, 640)

    def ytop(layer):
        return TITLE_H + MARGIN + layer * (BOX_H + LAYER_GAP)

    bars = foundations(rooms)
    bar_top = ytop(len(layers) - 1) + BOX_H + 30
    height = bar_top + len(bars) * (BOX_H + 14) + MARGIN + 12

    # Ports: a box's arrows leave its bottom and reach its top spread in the order of their far ends.
    out_ports, in_ports = {}, {}
    for src, dst, chain in edges:
        out_ports.setdefault(src, []).append((chain[1].x, chain[-1].x, dst))
        in_ports.setdefault(dst, []).append((chain[-2].x, chain[0].x, src))

    def port(box, ends, other):
        ends = sorted(ends)
        k = [e[2] for e in ends].index(other)
        span = min(BOX_W - 24, 14 * (len(ends) - 1))
        return box.x - span / 2 + (span * k / (len(ends) - 1) if len(ends) > 1 else span / 2)

    paths = []   # (colour, [points], kinds) in drawing order
    for src, dst, chain in edges:
        a, b = chain[0], chain[-1]
        pts = [(port(a, out_ports[src], dst), ytop(a.layer) + BOX_H)]
        for dmy in chain[1:-1]:
            pts += [(dmy.x, ytop(dmy.layer)), (dmy.x, ytop(dmy.layer) + BOX_H)]
        pts.append((port(b, in_ports[dst], src), ytop(b.layer) - 10))
        paths.append((colour[src], pts, src, dst))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{fmt(width)}" height="{fmt(height)}" '
           f'viewBox="0 0 {fmt(width)} {fmt(height)}" font-family="DejaVu Sans, Helvetica, Arial, '
           f'sans-serif">',
           "<!-- Generated from docs/architecture.md (\"Rooms and who may use whom\") by "
           "tools/gen_rooms_svg.py; do not edit. -->",
           "<defs>"]
    for name, c in colour.items():
        if c != GREY:
            out.append(f'<marker id="arrow-{name}" viewBox="0 0 10 10" refX="1" refY="5" '
                       f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                       f'<path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>')
    out.append("</defs>")
    out.append('<rect width="100%" height="100%" fill="#ffffff"/>')
    out.append(f'<text x="{MARGIN}" y="{MARGIN + 8}" font-size="17" font-weight="bold" '
               f'fill="#222">Rooms and who may use whom</text>')
    out.append(f'<text x="{MARGIN}" y="{MARGIN + 28}" font-size="12" fill="#555">An arrow from '
               f'X to Y: X may use Y (include its headers, link its library); each arrow has the '
               f'colour of the room it leaves.</text>')
    out.append(f'<text x="{MARGIN}" y="{MARGIN + 44}" font-size="12" fill="#555">Arrows go one '
               f'way only. tests/ and bench/ are not rooms: they may use any room.</text>')
    for c, pts, src, dst in paths:
        d = [f"M{fmt(pts[0][0])},{fmt(pts[0][1])}"]
        for i in range(1, len(pts)):
            (x0, y0), (x1, y1) = pts[i - 1], pts[i]
            if x0 == x1 and i % 2 == 0 and i < len(pts) - 1:
                d.append(f"L{fmt(x1)},{fmt(y1)}")    # straight down between two boxes of a layer
            else:
                my = (y1 - y0) / 2
                d.append(f"C{fmt(x0)},{fmt(y0 + my)} {fmt(x1)},{fmt(y1 - my)} {fmt(x1)},{fmt(y1)}")
        out.append(f'<path d="{" ".join(d)}" fill="none" stroke="{c}" stroke-width="1.6" '
                   f'stroke-opacity="0.85" marker-end="url(#arrow-{src})">'
                   f'<title>{src} may use {dst}</title></path>')
    for lay in layers:
        for n in lay:
            if not n.room:
                continue
            x, y = n.x - BOX_W / 2, ytop(n.layer)
            c = colour[n.name]
            out.append(f'<g><title>{n.room.folder}/: {n.room.owns}</title>'
                       f'<rect x="{fmt(x)}" y="{fmt(y)}" width="{BOX_W}" height="{BOX_H}" rx="6" '
                       f'fill="#f7f7f7" stroke="{c}" stroke-width="2.2"/>'
                       f'<text x="{fmt(n.x)}" y="{fmt(y + 21)}" font-size="15" font-weight="bold" '
                       f'text-anchor="middle" fill="#222">{n.name}</text>'
                       f'<text x="{fmt(n.x)}" y="{fmt(y + 39)}" font-size="11" '
                       f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" '
                       f'text-anchor="middle" fill="#555">{n.room.folder}/</text></g>')
    for i, (r, others) in enumerate(bars):
        y = bar_top + i * (BOX_H + 14)
        who = "every room" + (" but " + " and ".join(others) if others else "")
        out.append(f'<g><title>{r.folder}/: {r.owns}</title>'
                   f'<rect x="{MARGIN}" y="{fmt(y)}" width="{fmt(width - 2 * MARGIN)}" '
                   f'height="{BOX_H}" rx="6" fill="#f7f7f7" stroke="{GREY}" stroke-width="2.2"/>'
                   f'<text x="{fmt(width / 2)}" y="{fmt(y + 21)}" font-size="15" font-weight="bold" '
                   f'text-anchor="middle" fill="#222">{r.name}</text>'
                   f'<text x="{fmt(width / 2)}" y="{fmt(y + 39)}" font-size="11" '
                   f'text-anchor="middle" fill="#555"><tspan font-family="DejaVu Sans Mono, Menlo, '
                   f'Consolas, monospace">{r.folder}/</tspan>: {who} may use it (those arrows are '
                   f'not drawn)</text></g>')
    out.append(f'<text x="{MARGIN}" y="{fmt(height - MARGIN + 10)}" font-size="11" fill="#777">'
               f'Generated from docs/architecture.md by tools/gen_rooms_svg.py.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n", (width, height, layers, paths, colour, ytop, bars, bar_top)


def png(picture, path):
    """The same boxes and arrows drawn with Pillow (Béziers as polylines), to look at."""
    from PIL import Image, ImageDraw, ImageFont
    width, height, layers, paths, colour, ytop, bars, bar_top = picture
    s = 2
    img = Image.new("RGB", (int(width * s), int(height * s)), "white")
    g = ImageDraw.Draw(img)

    def font(size, bold=False, mono=False):
        name = "DejaVuSansMono" if mono else "DejaVuSans-Bold" if bold else "DejaVuSans"
        try:
            return ImageFont.truetype(f"/usr/share/fonts/truetype/dejavu/{name}.ttf", size * s)
        except OSError:
            return ImageFont.load_default()

    g.text((MARGIN * s, (MARGIN - 8) * s), "Rooms and who may use whom", fill="#222",
           font=font(17, bold=True))
    for c, pts, src, dst in paths:
        line = [pts[0]]
        for i in range(1, len(pts)):
            (x0, y0), (x1, y1) = pts[i - 1], pts[i]
            my = (y1 - y0) / 2
            for k in range(1, 17):
                t = k / 16
                u = 1 - t
                bx = u ** 3 * x0 + 3 * u * u * t * x0 + 3 * u * t * t * x1 + t ** 3 * x1
                by = u ** 3 * y0 + 3 * u * u * t * (y0 + my) + 3 * u * t * t * (y1 - my) + t ** 3 * y1
                line.append((bx, by))
        g.line([(x * s, y * s) for x, y in line], fill=c, width=int(1.6 * s))
        x, y = pts[-1]
        g.polygon([(x * s - 5 * s, y * s), (x * s + 5 * s, y * s), (x * s, (y + 10) * s)], fill=c)
    for lay in layers:
        for n in lay:
            if n.room:
                x, y = n.x - BOX_W / 2, ytop(n.layer)
                g.rounded_rectangle([x * s, y * s, (x + BOX_W) * s, (y + BOX_H) * s], radius=6 * s,
                                    fill="#f7f7f7", outline=colour[n.name], width=int(2.2 * s))
                g.text((n.x * s, (y + 16) * s), n.name, fill="#222", font=font(15, bold=True),
                       anchor="mm")
                g.text((n.x * s, (y + 35) * s), n.room.folder + "/", fill="#555",
                       font=font(11, mono=True), anchor="mm")
    g.text((MARGIN * s, (MARGIN + 17) * s), "An arrow from X to Y: X may use Y (include its "
           "headers, link its library); each arrow has the colour of the room it leaves.",
           fill="#555", font=font(12))
    g.text((MARGIN * s, (MARGIN + 33) * s), "Arrows go one way only. tests/ and bench/ are not "
           "rooms: they may use any room.", fill="#555", font=font(12))
    for i, (r, others) in enumerate(bars):
        y = bar_top + i * (BOX_H + 14)
        g.rounded_rectangle([MARGIN * s, y * s, (width - MARGIN) * s, (y + BOX_H) * s],
                            radius=6 * s, fill="#f7f7f7", outline=GREY, width=int(2.2 * s))
        g.text((width / 2 * s, (y + 16) * s), r.name, fill="#222", font=font(15, bold=True),
               anchor="mm")
        who = "every room" + (" but " + " and ".join(others) if others else "")
        g.text((width / 2 * s, (y + 35) * s), f"{r.folder}/: {who} may use it (not drawn)",
               fill="#555", font=font(11), anchor="mm")
    img.save(path)


def main(argv):
    rooms = rooms_table.read(ROOT)
    svg, picture = draw(rooms)
    path = os.path.join(ROOT, OUT)
    if "--png" in argv:
        png(picture, argv[argv.index("--png") + 1])
    if "--check" in argv:
        have = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
        if have != svg:
            print(f"{OUT} is stale: run tools/gen_rooms_svg.py", file=sys.stderr)
            return 1
        print(f"{OUT} matches the rooms table ({len(rooms)} rooms)")
        return 0
    with open(path, "w", encoding="utf-8") as f:
        f.write(svg)
    print(f"wrote {OUT} ({len(rooms)} rooms)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
