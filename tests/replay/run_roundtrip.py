#!/usr/bin/python3
"""Driver of one replay-suite test: gwlb-replay --reflect over a capture, then the checker.

usage: run_roundtrip.py --replay GWLB_REPLAY --pcap IN.pcap --config CFG.yaml
                        --workdir DIR [--workers N] [--tshark PATH] [--corrupt MODE]

Without --corrupt the exit status is the checker's (0 pass, 1 fail, 2 input error).

With --corrupt MODE the test shows that the checker CAN fail: the clean output must
pass first, then one deliberate defect is written into the output and the checker
must reject it, naming the check that MODE targets. Exit status (for meson's
should_fail: true): 1 = rejected as expected; 0 = the checker accepted the corrupted
output (so the meson test FAILs); 99 = the clean output failed or the checker failed for
another reason (meson reports ERROR).
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_roundtrip.py")
sys.path.insert(0, HERE)
from check_roundtrip import csum_fold, csum_sum, load_config  # noqa: E402


# --- pcap rewriting for the negative tests -----------------------------------------------

def read_records(path):
    data = open(path, "rb").read()
    e = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    recs, off = [], 24
    while off < len(data):
        s, frac, incl, _ = struct.unpack(e + "IIII", data[off:off + 16])
        recs.append([s, frac, bytearray(data[off + 16:off + 16 + incl])])
        off += 16 + incl
    return data[:24], e, recs


def write_records(path, hdr, e, recs):
    with open(path, "wb") as f:
        f.write(hdr)
        for s, frac, b in recs:
            f.write(struct.pack(e + "IIII", s, frac, len(b), len(b)))
            f.write(b)


def fix_outer_checksums(b):
    """Recomputes the outer IPv4 header and UDP checksums of a to-appliances frame."""
    b[24:26] = b"\0\0"
    b[24:26] = struct.pack("!H", 0xFFFF - csum_fold(csum_sum(bytes(b[14:34]))))
    udp_len = len(b) - 34
    b[40:42] = b"\0\0"
    pseudo = bytes(b[26:34]) + struct.pack("!BBH", 0, 17, udp_len)
    c = 0xFFFF - csum_fold(csum_sum(pseudo + bytes(b[34:])))
    b[40:42] = struct.pack("!H", c or 0xFFFF)


def corrupt_ipv6(mode, app, hdr, e, recs):
    """One defect in the first frame from the sixth on with an outer IPv6 header."""
    i = next(i for i, r in enumerate(recs) if i >= 5 and r[2][12:14] == b"\x86\xdd")
    b = recs[i][2]
    if mode == "udp-checksum":
        b[60] ^= 0x10
        what, kind = "changed the UDP checksum of to-appliances frame %d" % (i + 1), "outer-udp-checksum"
    elif mode == "flow-label":
        b[17] ^= 0x01  # the label's last bits: not in the UDP checksum's pseudo-header
        what, kind = "changed the IPv6 flow label of to-appliances frame %d" % (i + 1), "flow-label"
    else:
        b[15] |= 0x30  # ECN CE in the outer traffic class
        what, kind = "set ECN CE in the outer traffic class of to-appliances frame %d" % (i + 1), "outer-traffic-class"
    write_records(app, hdr, e, recs)
    return what, kind


def corrupt(mode, out_dir, cfg):
    """Writes one defect into the replay output; returns (description, expected check)."""
    ret = os.path.join(out_dir, "returned.pcap")
    app = os.path.join(out_dir, "to-appliances.pcap")
    if mode.startswith("returned-"):
        hdr, e, recs = read_records(ret)
        if mode == "returned-l3":
            i = next(i for i, r in enumerate(recs) if len(r[2]) > 200)
            recs[i][2][-1] ^= 0x01
            what, kind = "flipped the last payload bit of returned frame %d" % (i + 1), "returned-l3-unchanged"
        elif mode == "returned-l2":
            b = recs[10][2]
            b[0:12] = b[6:12] + b[0:6]
            what, kind = "swapped the MAC addresses of returned frame 11", "returned-l2-swap"
        elif mode == "returned-drop":
            del recs[len(recs) // 2]
            what, kind = "deleted returned frame %d" % (len(recs) // 2 + 1), "input-not-returned"
        else:
            raise SystemExit("unknown --corrupt %s" % mode)
        write_records(ret, hdr, e, recs)
        return what, kind
    hdr, e, recs = read_records(app)
    if cfg["underlay_ipv6"] and mode in ("udp-checksum", "flow-label", "traffic-class"):
        return corrupt_ipv6(mode, app, hdr, e, recs)
    b = recs[5][2]
    if mode == "udp-checksum":
        b[40] ^= 0x10
        what, kind = "changed the UDP checksum of to-appliances frame 6", "outer-udp-checksum"
    elif mode == "split-flow":
        sport = struct.unpack("!H", b[34:36])[0]
        b[34:36] = struct.pack("!H", 49152 + (sport - 49152 + 1) % 16384)
        fix_outer_checksums(b)
        what, kind = ("moved to-appliances frame 6 to UDP source port %d (checksums fixed)"
                      % struct.unpack("!H", b[34:36])[0]), "flow-sport"
    elif mode == "wrong-appliance":
        ips = list(cfg["appliances"])
        other = ips[(ips.index(bytes(b[30:34])) + 1) % len(ips)]
        b[30:34] = other
        fix_outer_checksums(b)
        what, kind = ("sent to-appliances frame 6 to appliance %s instead (checksums fixed)"
                      % ".".join(map(str, other))), "flow-appliance"
    else:
        raise SystemExit("unknown --corrupt %s" % mode)
    write_records(app, hdr, e, recs)
    return what, kind


# --- main ----------------------------------------------------------------------------------

def run_checker(a, out_dir, extra=()):
    cmd = [sys.executable, CHECKER, "--config", a.config, "--in", a.pcap, "--out-dir", out_dir,
           "--tshark", a.tshark] + list(extra)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(p.stdout)
    sys.stdout.flush()
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replay", required=True)
    ap.add_argument("--pcap", required=True)
    ap.add_argument("--config", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--tshark", default="tshark")
    ap.add_argument("--corrupt")
    a = ap.parse_args()
    neg = a.corrupt is not None
    a.replay, a.pcap, a.config = map(os.path.abspath, (a.replay, a.pcap, a.config))
    if shutil.which(a.tshark) is None:
        print("tshark not found (%s): install it (apt-get install tshark, see scripts/setup.sh)" % a.tshark)
        return 99 if neg else 2

    out_dir = os.path.join(a.workdir, "out")
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    cmd = [a.replay, "--config", a.config, "--in", a.pcap, "--out-dir", out_dir, "--reflect",
           "--workers", str(a.workers)]
    print("$ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        print("gwlb-replay did not finish within 90 s")
        return 99 if neg else 1
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        print("gwlb-replay exited with status %d" % p.returncode)
        return 99 if neg else 1

    # The negative tests' precondition skips tshark: the positive tests run it on clean output.
    print("$ check_roundtrip.py (clean output)", flush=True)
    extra = ["--any-first-way"] if a.workers > 1 else []
    rc, _ = run_checker(a, out_dir, (["--skip-tshark"] if neg else []) + extra)
    if not neg:
        return rc
    if rc != 0:
        print("NEGATIVE TEST INVALID: the clean output must pass before a corrupted one can show "
              "anything (checker exit %d)" % rc)
        return 99
    what, kind = corrupt(a.corrupt, out_dir, load_config(a.config))
    print("$ check_roundtrip.py (corrupted: %s; expecting FAIL [%s])" % (what, kind), flush=True)
    rc, out = run_checker(a, out_dir)
    if rc == 0:
        print("NEGATIVE TEST: the checker ACCEPTED the corrupted output (%s)" % what)
        return 0
    if rc == 1 and ("FAIL [%s]" % kind) in out:
        print("negative test ok: the checker rejected the corrupted output with FAIL [%s]" % kind)
        return 1
    print("NEGATIVE TEST INVALID: the checker failed (exit %d) but not with FAIL [%s]" % (rc, kind))
    return 99


if __name__ == "__main__":
    sys.exit(main())
