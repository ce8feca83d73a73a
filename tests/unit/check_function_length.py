#!/usr/bin/env python3
"""No function in control/ over 120 lines, but those on the allow-list below,
each with the reason it stays long.

A function is counted from the line of its name to the line of its closing
brace. The scanner blanks comments, string and character literals (raw
strings too) and preprocessor lines, then matches braces: at namespace or
class scope a `{` after a header with a parameter list opens a function body
(a constructor's member initialisers `a_{…}` are stepped over); namespace,
class, struct and union bodies are scanned inside; any other brace (an
initialiser, an enum, a lambda assigned at namespace scope) is skipped whole.
Lambdas and local classes count toward the function that holds them.

An allow-list entry whose function is no longer over the limit is reported
too, so the list never outlives its reason.

Usage: check_function_length.py SOURCE_ROOT           check control/
       check_function_length.py --list N SOURCE_ROOT  print the N longest
       check_function_length.py --self-test           the scanner on a fixture
"""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'setup'))
import tree_files  # noqa: E402  the repository's files, not out/ or build dirs

MAX_LINES = 120
DIRS = ["control"]
CODE = (".h", ".cc", ".hpp", ".cpp")

# (file, function) -> why it may stay over the limit. Empty: every function
# in control/ is within the limit.
ALLOWED = {}


# ---- the scanner --------------------------------------------------------------

def strip(text):
    """text with comments, string/char literals and preprocessor lines blanked
    to spaces; newlines kept, so offsets and line numbers still hold."""
    out = list(text)
    n = len(text)
    i = 0
    line_start = True  # only whitespace since the last newline

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c == "#":
            j = i
            while j < n:  # a directive runs on over backslash-newlines
                e = text.find("\n", j)
                e = n if e < 0 else e
                if e > 0 and text[e - 1] == "\\":
                    j = e + 1
                    continue
                break
            blank(i, e)
            i = e
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            e = text.find("\n", i)
            e = n if e < 0 else e
            blank(i, e)
            i = e
        elif text.startswith("/*", i):
            e = text.find("*/", i + 2)
            e = n if e < 0 else e + 2
            blank(i, e)
            i = e
        elif c == '"' and i > 0 and text[i - 1] == "R" and (i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")):
            p = text.find("(", i)
            delim = ")" + text[i + 1:p] + '"'
            e = text.find(delim, p)
            e = n if e < 0 else e + len(delim)
            blank(i + 1, e - 1)
            i = e
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum()
                                               and i + 1 < n and text[i + 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


IDENT_END = re.compile(r"[\w>]\s*$")
NAME = re.compile(r"((?:[\w~]+(?:<[^<>()]*>)?\s*::\s*)*(?:operator\s*[^\s(]+|~?\w+))\s*$")
SCOPE = re.compile(r"^(?:template\s*<.*>\s*)?(?:class|struct|union)\b", re.S)
ACCESS = re.compile(r"^\s*(?:(?:public|private|protected)\s*:(?!:)\s*)+")


def _close(s, i):
    """Offset of the } that closes the { at s[i]."""
    depth = 0
    n = len(s)
    while i < n:
        if s[i] == "{":
            depth += 1
        elif s[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n - 1


def _top_level(header):
    """header with everything inside (), <> of templates is left; what is
    outside parentheses: used to tell `=` and `:` of a declaration apart."""
    out, depth = [], 0
    for ch in header:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _function_header(header):
    """(name offset, name) when header (the text before a `{` at scope level)
    declares a function, else None."""
    h = ACCESS.sub("", header)
    lead = len(header) - len(h)
    p = h.find("(")
    if p < 0:
        return None
    outside = _top_level(h)
    if not re.search(r"\boperator\b", h) and re.search(r"(?<![=!<>])=(?!=)", outside):
        return None  # an initialiser: `auto f = [](…) {`, `std::function<…> g = {…}`
    m = NAME.search(h[:p])
    if not m:
        return None
    name = re.sub(r"\s+", "", m.group(1))
    if name in ("if", "for", "while", "switch", "decltype", "alignas", "sizeof"):
        return None
    return lead + m.start(1), name


def functions(text):
    """[(name, first line, last line)] of the function bodies in text."""
    s = strip(text)
    line_of = []
    ln = 1
    for ch in s:
        line_of.append(ln)
        if ch == "\n":
            ln += 1
    found = []
    scopes = [0]          # a stack of the header start offsets of open scopes
    head = 0              # where the current header starts
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c in ";":
            head = i + 1
        elif c == "}":
            if len(scopes) > 1:
                scopes.pop()
            head = i + 1
        elif c == "{":
            header = s[head:i].strip()
            hstart = head + (len(s[head:i]) - len(s[head:i].lstrip()))
            h = ACCESS.sub("", header)
            if re.match(r"(?:namespace|extern)\b", h) or (SCOPE.match(h) and "(" not in h):
                scopes.append(i)
                head = i + 1
            elif (fh := _function_header(header)) is not None:
                off, name = fh
                # A constructor's member initialisers: `) : a_{x}, b_(y) {` —
                # a brace right after a name (or a template's >) is one of them.
                p = header.find("(")
                depth, q = 0, p
                while q < len(header):
                    if header[q] == "(":
                        depth += 1
                    elif header[q] == ")":
                        depth -= 1
                        if depth == 0:
                            break
                    q += 1
                rest = header[q + 1:]
                if re.match(r"^[^{]*?(?<!:):(?!:)", rest) and IDENT_END.search(header):
                    i = _close(s, i) + 1
                    continue  # a member's brace initialiser; the header goes on
                end = _close(s, i)
                found.append((name, line_of[hstart + off], line_of[end]))
                i = end + 1
                head = i
                continue
            else:
                i = _close(s, i) + 1
                continue  # an initialiser, an enum: skipped whole; the header goes on
        i += 1
    return found


# ---- the tree -----------------------------------------------------------------

def scan(root, files):
    rows = []
    for f in files:
        if not f.endswith(CODE):
            continue
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name, a, b in functions(text):
            rows.append((b - a + 1, f, a, name))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    return rows


def check(root, files, allowed):
    errors, seen = [], set()
    for size, f, line, name in scan(root, files):
        if size <= MAX_LINES:
            continue
        if (f, name) in allowed:
            seen.add((f, name))
            continue
        errors.append(f"{f}:{line}: {name} is {size} lines, over {MAX_LINES}: split it where a "
                      f"name explains a part (or add it to ALLOWED in "
                      f"tests/unit/check_function_length.py with the reason it stays long)")
    for (f, name), why in sorted(allowed.items()):
        if (f, name) not in seen:
            errors.append(f"{f}: {name} is on the allow-list ({why}) but is not over {MAX_LINES} "
                          f"lines (or no longer there): take it off the list")
    return errors


# ---- --self-test ----------------------------------------------------------------

def body(k):
    return "".join(f"  x += {j};\n" for j in range(k))


def self_test():
    # Each function's length in lines: name line + k body lines + closing brace.
    long_ = MAX_LINES - 1  # body lines for a function of MAX_LINES + 1 lines
    fixture = (
        '#include <string>\n'
        '#define BRACE {\n'
        'namespace gwlb::ctl {\n'
        'namespace {\n'
        'const char* kText = "}}} { not code";\n'
        "const char kOpen = '{';\n"
        'const auto kRaw = R"js({ "a": [ } )js";\n'
        'constexpr int kTable[] = {1, 2, 3};\n'
        'auto kLambda = [](int x) {\n' + body(long_ + 5) + '  return x;\n};\n'
        'enum class Colour : int { kRed, kBlue };\n'
        '}  // namespace\n'
        '\n'
        'class Holder {\n'
        ' public:\n'
        '  Holder(int a) : a_{a}, b_(a), c_{std::string("{")} {\n' + body(long_) + '  }\n'
        '  int fits() const {\n' + body(long_ - 1) + '  }\n'
        ' private:\n'
        '  int a_{0};\n'
        '};\n'
        '\n'
        '// a comment { with a brace\n'
        'int Holder::tooLong(int y) noexcept\n'
        '{\n' + body(long_ - 1) + '  if (y) { return 1; }\n'
        '  return 0;\n'
        '}\n'
        'bool operator==(const Holder&, const Holder&) {\n' + body(2) + '}\n'
        'void allowed() {\n' + body(long_) + '}\n'
        '}  // namespace gwlb::ctl\n'
    )
    failures = []
    with tempfile.TemporaryDirectory(prefix="check_function_length_") as tmp:
        path = os.path.join(tmp, "control", "x", "fixture.cc")
        os.makedirs(os.path.dirname(path))
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(fixture)
        got = {name: size for size, _, _, name in scan(tmp, ["control/x/fixture.cc"])}
        want = {"Holder": MAX_LINES + 1, "fits": MAX_LINES, "Holder::tooLong": MAX_LINES + 3,
                "operator==": 4, "allowed": MAX_LINES + 1}
        if got != want:
            failures.append(f"functions found {got}, expected {want}")
        allowed = {("control/x/fixture.cc", "allowed"): "the fixture's allowed one",
                   ("control/x/fixture.cc", "gone"): "a function that is no longer there"}
        errors = check(tmp, ["control/x/fixture.cc"], allowed)
        for e in errors:
            print("rejected as expected:", e)
        lines = fixture.split("\n")
        ctor = 1 + next(k for k, t in enumerate(lines) if "Holder(int a)" in t)
        too_long = 1 + next(k for k, t in enumerate(lines) if "Holder::tooLong" in t)
        expect = [f"control/x/fixture.cc:{ctor}: Holder is {MAX_LINES + 1} lines, over {MAX_LINES}",
                  f"control/x/fixture.cc:{too_long}: Holder::tooLong is {MAX_LINES + 3} lines, "
                  f"over {MAX_LINES}",
                  "control/x/fixture.cc: gone is on the allow-list"]
        for w in expect:
            if not any(e.startswith(w) for e in errors):
                failures.append(f"expected an error starting {w!r}, got {errors}")
        if len(errors) != len(expect):
            failures.append(f"expected {len(expect)} errors, got {len(errors)}: {errors}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if argv[1:2] == ["--list"] and len(argv) == 4:
        root = argv[3]
        for size, f, line, name in scan(root, tree_files.source_files(root, DIRS))[:int(argv[2])]:
            print(f"{size:5d}  {f}:{line}  {name}")
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = argv[1]
    errors = check(root, tree_files.source_files(root, DIRS), ALLOWED)
    for e in errors:
        print(e)
    if not errors:
        print(f"no function in {', '.join(d + '/' for d in DIRS)} over {MAX_LINES} lines "
              f"but the {len(ALLOWED)} allowed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
