#!/usr/bin/env bash
# gwlbd's control socket against hostile users and clients, and reloads of bad
# config files (issue 9). Runs as root (CI does); clients run as `nobody`.
#   run_hostile_api.sh GWLBD WORKDIR SRCROOT
# 1. Refused socket paths: a symlink (not followed, its target untouched), a
#    regular file (kept), a directory every user may write; a stale socket is
#    replaced.
# 2. Permissions: the socket is bound with its final mode even under umask 000
#    (an LD_PRELOAD shim records the mode right after bind()); root and a member
#    of control.socket_group connect; any other unprivileged user gets EACCES.
# 3. Hostile clients and file paths in requests (hostile_control.py clients).
# 4. Bad config reloads by SIGHUP and API: nothing changes (hostile_control.py reload).
set -euo pipefail
gwlbd="$1" work="$2" src="$3"
py=/usr/bin/python3
helper="$src/tests/daemon/hostile_control.py"
rm -rf "$work" && mkdir -p "$work"
[ "$(id -u)" = 0 ] || { echo "FAIL: this test needs root (it runs clients as nobody)"; exit 1; }
getent group daemon >/dev/null && getent passwd nobody >/dev/null && getent group nogroup >/dev/null \
  || { echo "FAIL: needs the Debian base users/groups nobody, nogroup, daemon"; exit 1; }
# The socket lives where `nobody` may reach it: a fresh directory under /tmp.
tmpd=$(mktemp -d /tmp/gwlb-hostile.XXXXXX)
chmod 0755 "$tmpd"
prefix="gwlbhostile$$"
gwlbd_extra_cleanup="rm -rf '$tmpd' /var/run/dpdk/$prefix"
trap 'eval "$gwlbd_extra_cleanup"' EXIT
sock="$tmpd/run/gwlbd.sock"
# The clients that run as nobody need a copy of the helper they can read: the
# source tree may sit where nobody cannot reach it (a CI checkout under /root
# or a 0700 temporary directory).
cp "$helper" "$tmpd/hostile_control.py"
chmod 0644 "$tmpd/hostile_control.py"
client_helper="$tmpd/hostile_control.py"

$py "$src/tools/gen_sample_pcap.py" "$work/in.pcap" --flows 40 --seed 11 >/dev/null

# config SOCKET_PATH [EXTRA CONTROL KEYS]
write_config() {
  cat > "$work/gwlbd.yaml" <<YAML
node: { underlay_ip: 192.0.2.1, underlay_mac: 02:00:00:00:00:01, gateway_mac: 02:00:00:00:00:fe }
server_groups:
  - name: firewalls
    tcp_idle_timeout: 6000
    other_idle_timeout: 6000
    servers: [ { address: 192.0.2.10 }, { address: 192.0.2.11 }, { address: 192.0.2.12 } ]
dataplane: { workers: 1, mbufs: 4096, flow_table_size: 65536 }
control: { socket: $1 ${2:-} }
eal: ["--no-huge", "--no-pci", "--no-shconf", "--no-telemetry", "--file-prefix", "$prefix", "-m", "256",
      "--lcores=0@(0-1),1@(0-1)", "--log-level=*:warning",
      "--vdev", "net_pcap0,rx_pcap=$work/in.pcap,tx_pcap=$work/out.pcap"]
YAML
}

# expect_refusal NAME WANT_IN_LOG: gwlbd must exit non-zero, saying WANT_IN_LOG.
expect_refusal() {
  local rc=0
  timeout 60 "$gwlbd" --config "$work/gwlbd.yaml" > "$work/$1.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { cat "$work/$1.log"; echo "FAIL: $1: gwlbd exit $rc, want a refusal"; exit 1; }
  grep -q -- "$2" "$work/$1.log" || { cat "$work/$1.log"; echo "FAIL: $1: log lacks '$2'"; exit 1; }
  echo "$1: refused: $(grep -m1 -- "$2" "$work/$1.log" | sed 's/^.*startup failed: //')"
}

# --- 1. What is at the socket path -------------------------------------------
mkdir -p "$tmpd/run"
echo secret > "$tmpd/victim"
chmod 0600 "$tmpd/victim"
write_config "$sock"
ln -s "$tmpd/victim" "$sock"
expect_refusal symlink "is a symbolic link, not a socket"
[ -L "$sock" ] && [ "$(stat -c %a "$tmpd/victim")" = 600 ] && [ "$(cat "$tmpd/victim")" = secret ] \
  || { echo "FAIL: the symlink or its target was touched"; exit 1; }
rm "$sock"
ln -s "$tmpd/nowhere" "$sock"  # dangling: bind() would fail; must be the same clear refusal
expect_refusal dangling_symlink "is a symbolic link, not a socket"
rm "$sock"
echo keep > "$sock"
expect_refusal regular_file "is a regular file, not a socket"
[ "$(cat "$sock")" = keep ] || { echo "FAIL: the regular file was changed"; exit 1; }
rm "$sock"
mkdir -p "$tmpd/open"
chmod 0777 "$tmpd/open"
write_config "$tmpd/open/gwlbd.sock"
expect_refusal open_directory "may be written by every user and is not sticky"
# A stale socket (bound, never unlinked, nobody listening) is replaced.
write_config "$sock" ', socket_group: daemon'
$py -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$sock"
[ -S "$sock" ] || { echo "FAIL: could not plant a stale socket"; exit 1; }

# --- 2. Permissions from the first instant -------------------------------------
# The shim logs the socket's mode right after bind(): with umask 000 a bind
# followed by chmod would show 777 there. gwlbd binds under a staging name (the
# last character swapped for '~') and renames the listening socket into place,
# so the shim also logs whether anything sat at the real path during bind():
# a client polling for the file must never find a socket that does not listen.
cat > "$work/bindmode.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
int bind(int fd, const struct sockaddr* a, socklen_t len) {
  int (*real)(int, const struct sockaddr*, socklen_t) =
      (int (*)(int, const struct sockaddr*, socklen_t))dlsym(RTLD_NEXT, "bind");
  int rc = real(fd, a, len);
  const char* want = getenv("BINDMODE_PATH");
  const char* out = getenv("BINDMODE_LOG");
  const char* final_path = getenv("BINDMODE_FINAL");
  if (rc == 0 && want && out && final_path && a->sa_family == AF_UNIX &&
      strcmp(((const struct sockaddr_un*)a)->sun_path, want) == 0) {
    struct stat st;
    FILE* f = fopen(out, "a");
    if (f && lstat(want, &st) == 0) fprintf(f, "%o\n", (unsigned)(st.st_mode & 07777));
    if (f && lstat(final_path, &st) == 0) fprintf(f, "visible before listen\n");
    if (f) fclose(f);
  }
  return rc;
}
C
cc -shared -fPIC -O1 -o "$work/bindmode.so" "$work/bindmode.c" -ldl
cat > "$work/gwlbd-umask000" <<SH
#!/bin/sh
umask 000
BINDMODE_PATH="${sock%?}~" BINDMODE_FINAL="$sock" BINDMODE_LOG="$work/bindmode.txt" LD_PRELOAD="$work/bindmode.so" exec "$gwlbd" "\$@"
SH
chmod +x "$work/gwlbd-umask000"
source "$src/tests/daemon/gwlbd_lib.sh"
start_gwlbd "$work/gwlbd-umask000" "$work/gwlbd.yaml" "$work/gwlbd.log" "$sock"
# The stale socket was there before: wait for gwlbd's own to answer.
for _ in $(seq 1 120); do
  [ "$($py "$helper" connect "$sock")" = ok ] && break
  kill -0 "$gwlbd_pid" 2>/dev/null || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd exited"; exit 1; }
  sleep 0.25
done
grep -q "replaced a stale socket" "$work/gwlbd.log" || { cat "$work/gwlbd.log"; echo "FAIL: stale socket not replaced"; exit 1; }
echo "stale socket replaced"
[ "$(cat "$work/bindmode.txt")" = 660 ] || { echo "FAIL: right after bind(): $(cat "$work/bindmode.txt"), want mode 660 and nothing at $sock yet"; exit 1; }
[ "$(stat -c '%a %G %F' "$sock")" = "660 daemon socket" ] || { stat "$sock"; echo "FAIL: socket mode/group"; exit 1; }
echo "socket: mode 660 from bind() on (umask 000), group daemon"

as_nobody_no_group=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody_in_group=(setpriv --reuid=nobody --regid=nogroup --groups=daemon)
r=$("${as_nobody_no_group[@]}" $py "$client_helper" connect "$sock")
[ "$r" = EACCES ] || { echo "FAIL: nobody (not in the group): $r, want EACCES"; exit 1; }
echo "nobody, not in the socket's group: $r"
r=$("${as_nobody_in_group[@]}" $py "$client_helper" connect "$sock")
[ "$r" = ok ] || { echo "FAIL: nobody in group daemon: $r, want ok"; exit 1; }
echo "nobody in group daemon: connects, status ok"
r=$($py "$helper" connect "$sock")
[ "$r" = ok ] || { echo "FAIL: root: $r"; exit 1; }
echo "root: connects, status ok"

# Wait until the capture went through, so counters are settled.
n_in=$(tshark -r "$work/in.pcap" 2>/dev/null | wc -l)
$py "$helper" wait-rx "$sock" "$n_in"

# --- 3. Hostile clients; file paths in requests ---------------------------------
$py "$helper" clients "$sock" "$work"

# --- 4. Bad reloads change nothing ------------------------------------------------
$py "$helper" reload "$sock" "$work/gwlbd.yaml" "$work/gwlbd.log" "$gwlbd_pid"

rc=0; stop_gwlbd || rc=$?
[ $rc -eq 0 ] || { cat "$work/gwlbd.log"; echo "FAIL: gwlbd exit $rc"; exit 1; }
[ ! -e "$sock" ] || { echo "FAIL: socket left behind"; exit 1; }
echo "gwlbd stopped cleanly and removed its socket"
