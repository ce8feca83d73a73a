"""The repository's own files, for the tests that scan the source tree.

  source_files(root, dirs=None) -> sorted relative paths

In a git checkout: the files git tracks (`git ls-files`) that exist on disk,
never what a run left behind (out/: the fuzzer's grown corpus, reports;
build*/ directories; a fuzzer's crash inputs before anyone adds them). CI runs
in a fresh clone, so it scans exactly what was committed. Outside git (a
release tarball): every file, walking past .git, out/, build*/ and any meson
build directory (one holding meson-private/), so the tests still run.
`dirs` limits the result to files under those top-level directories.
"""
import os
import subprocess

# Left out when walking a tree git does not know.
SKIP_DIRS = {".git", "out", "__pycache__"}


def _git_files(root):
    try:
        r = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--full-name", "."],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    except OSError:  # no git on this machine
        return None
    if r.returncode != 0:  # not a git work tree
        return None
    top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    if top.returncode != 0 or os.path.realpath(top.stdout.strip()) != os.path.realpath(root):
        return None  # root is a folder inside some other repository: walk it instead
    names = [n.decode("utf-8", "surrogateescape") for n in r.stdout.split(b"\0") if n]
    # A tracked file deleted in the work tree is not there to read.
    return [n for n in names if os.path.isfile(os.path.join(root, n))]


def _walked_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith("build")
                       and not os.path.isdir(os.path.join(dirpath, d, "meson-private"))]
        out += [os.path.relpath(os.path.join(dirpath, n), root) for n in filenames]
    return out


def source_files(root, dirs=None):
    files = _git_files(root)
    if files is None:
        files = _walked_files(root)
    if dirs:
        prefixes = tuple(d.rstrip("/") + "/" for d in dirs)
        files = [f for f in files if f.startswith(prefixes)]
    return sorted(files)
