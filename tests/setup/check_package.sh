#!/usr/bin/env bash
# scripts/package.sh builds a Debian package that works unpacked (issue 18 item 4):
# dpkg-deb -I shows sane fields (name, the project's version, this
# architecture, Depends on DPDK/OpenSSL/yaml-cpp..., the conffile), and after
# dpkg-deb -x into a temporary root every binary's --version runs from there
# with the system's libraries (no LD_LIBRARY_PATH), the unit runs the gwlbd
# the package holds with the config it holds, that config passes
# --check-config, and the man pages and bash completion are where man and
# bash-completion look. lintian, when installed, must report no errors.
#   check_package.sh SRCROOT BUILDDIR WORKDIR
set -euo pipefail
src="$1" build="$2" work="$3"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
deb="$("$src/scripts/package.sh" --build "$build" --out "$work")"
[ -f "$deb" ] || fail "package.sh printed '$deb', not a file"
version="$(meson introspect "$build" --projectinfo | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = gwlb ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version-1" ] || fail "Version: $(field Version), want $version-1"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
for dep in librte-eal librte-ethdev libssl libyaml-cpp libpcap libspdlog libstdc++6; do
  field Depends | grep -q "$dep" || fail "Depends lacks $dep: $(field Depends)"
done
[ "$(field Installed-Size)" -gt 1000 ] || fail "Installed-Size: $(field Installed-Size)"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -qx /etc/gwlb/gwlbd.yaml \
  || fail "/etc/gwlb/gwlbd.yaml is not a conffile"
echo "$(basename "$deb"): $(field Package) $(field Version) $(field Architecture), $(field Installed-Size) KiB"
echo "Depends: $(field Depends)"

root="$work/root"
dpkg-deb -x "$deb" "$root"
n=0
for b in "$root"/usr/bin/*; do
  name="$(basename "$b")"
  out="$(env -u LD_LIBRARY_PATH "$b" --version)" || fail "$name --version failed"
  case "$out" in "$name $version"*) ;; *) fail "$name --version printed '$out'" ;; esac
  echo "  /usr/bin/$name --version: $out"
  n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "only $n binaries in /usr/bin"
unit="$root/lib/systemd/system/gwlbd.service"
[ -f "$unit" ] || fail "no /lib/systemd/system/gwlbd.service"
grep -qx 'ExecStart=/usr/bin/gwlbd --config /etc/gwlb/gwlbd.yaml' "$unit" || fail "unit: $(grep ^Exec "$unit")"
grep -qx 'ExecStartPre=/usr/bin/gwlbd --check-config /etc/gwlb/gwlbd.yaml' "$unit" || fail "unit: $(grep ^Exec "$unit")"
[ -x "$root/usr/bin/gwlbd" ] && [ -f "$root/etc/gwlb/gwlbd.yaml" ] || fail "the unit's gwlbd or config is not in the package"
"$root/usr/bin/gwlbd" --check-config "$root/etc/gwlb/gwlbd.yaml" >/dev/null || fail "the packaged config fails --check-config"
for m in man8/gwlbd.8 man8/gwlbctl.8 man1/gwlb-replay.1 man1/gwlb-appliance.1 man1/gwlb-probe.1; do
  [ -f "$root/usr/share/man/$m.gz" ] || fail "no /usr/share/man/$m.gz"
done
man -l "$root/usr/share/man/man8/gwlbd.8.gz" 2>/dev/null | grep -q -- "--check-config" || fail "gwlbd.8 does not render"
[ -f "$root/usr/share/bash-completion/completions/gwlbctl" ] || fail "no bash completion"
for d in README.md deploy.md config.md examples/gwlbd.yaml copyright; do
  [ -f "$root/usr/share/doc/gwlb/$d" ] || fail "no /usr/share/doc/gwlb/$d"
done
grep -qx 'StateDirectory=gwlb' "$unit" || fail "unit: no StateDirectory=gwlb (the flow hash key's directory)"
# The postinst creates the flow hash key once (here in a work directory in
# place of /var/lib/gwlb), mode 0600, and keeps it on the next configure (an
# upgrade); the packaged gwlbd then reads it.
state="$work/var-lib-gwlb"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./postinst | sed "s|/var/lib/gwlb|$state|g" > "$work/postinst"
grep -q "$state/flow_hash.key" "$work/postinst" || fail "the postinst does not create /var/lib/gwlb/flow_hash.key"
sh "$work/postinst" configure
[ "$(stat -c %a "$state/flow_hash.key")" = 600 ] || fail "postinst: flow_hash.key mode $(stat -c %a "$state/flow_hash.key")"
[ "$(stat -c %a "$state")" = 700 ] || fail "postinst: $state mode $(stat -c %a "$state")"
grep -qxE '[0-9a-f]{32}' "$state/flow_hash.key" || fail "postinst: flow_hash.key does not hold 32 hex digits"
made="$(cat "$state/flow_hash.key")"
sh "$work/postinst" configure
[ "$(cat "$state/flow_hash.key")" = "$made" ] || fail "a second configure (an upgrade) replaced the flow hash key"
STATE_DIRECTORY="$state" "$root/usr/bin/gwlbd" --check-config "$root/etc/gwlb/gwlbd.yaml" \
  | grep -qx "flow hash key: $state/flow_hash.key (gwlbd's own, kept across restarts)" \
  || fail "the packaged gwlbd does not use the key the postinst made"
echo "postinst: flow_hash.key created once (mode 600, directory 700), kept by an upgrade, used by gwlbd"
echo "unpacked: unit runs /usr/bin/gwlbd with /etc/gwlb/gwlbd.yaml (passes --check-config); man pages, completion, docs in place"
if command -v lintian >/dev/null; then
  if lintian --no-tag-display-limit "$deb" | grep '^E:'; then fail "lintian errors"; fi
  echo "lintian: no errors"
else
  echo "lintian not installed: not run (optional)"
fi
