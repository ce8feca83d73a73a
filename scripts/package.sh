#!/usr/bin/env bash
# Builds a Debian package of gwlb from a build directory (docs/deploy.md
# "Install the package"):
#   scripts/package.sh [--build DIR] [--out DIR]
# DIR defaults to ./build (built first by scripts/setup.sh when missing; an
# existing one is used as it is: nothing is rebuilt); the .deb goes to --out
# (default: the build directory) as gwlb_VERSION-1_ARCH.deb.
#
# What goes in is what `meson install --strip` puts (binaries, the systemd
# unit, man pages, bash completion, example configs, docs), moved from the
# build's prefix (e.g. /usr/local) to Debian's: /usr/bin, /usr/share,
# /etc/gwlb/gwlbd.yaml (a conffile: dpkg keeps local edits on upgrade) and
# /lib/systemd/system/gwlbd.service, whose paths are rewritten to match.
# Depends comes from dpkg-shlibdeps over the binaries (DPDK, Boost, spdlog,
# yaml-cpp, OpenSSL, libpcap...); the DPDK tools and NIC drivers are
# recommended (package dpdk).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
out="${out:-$build}"
if [ ! -f "$build/build.ninja" ]; then
  GWLB_BUILD="$build" source "$root/scripts/setup.sh"
fi
for t in dpkg-deb dpkg-shlibdeps dpkg-architecture; do
  command -v "$t" >/dev/null || { echo "package.sh: $t is missing (apt-get install dpkg-dev)" >&2; exit 1; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
stage="$work/stage" pkg="$work/pkg"
# The installable targets only (not every test binary), then install them.
ninja -C "$build" $(meson introspect "$build" --targets | /usr/bin/python3 -c '
import json, os, sys
b = sys.argv[1]
for t in json.load(sys.stdin):
    if t["installed"]:
        for f in t["filename"]:
            print(os.path.relpath(f, b))' "$build") >/dev/null
meson install -C "$build" --destdir "$stage" --no-rebuild --strip --quiet >/dev/null

info() { meson introspect "$build" --buildoptions | /usr/bin/python3 -c "
import json, sys
print({o['name']: o['value'] for o in json.load(sys.stdin)}['$1'])"; }
prefix="$(info prefix)" sysconf="$(info sysconfdir)"
case "$sysconf" in /*) ;; *) sysconf="$prefix/$sysconf" ;; esac
version="$(meson introspect "$build" --projectinfo | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"
arch="$(dpkg-architecture -qDEB_HOST_ARCH)"

# Debian's layout: $prefix/{bin,share} -> /usr/..., $sysconf/gwlb -> /etc/gwlb,
# the unit -> /lib/systemd/system (paths in it rewritten the same way).
mkdir -p "$pkg/usr" "$pkg/etc" "$pkg/lib/systemd/system" "$pkg/DEBIAN"
cp -a "$stage$prefix/bin" "$stage$prefix/share" "$pkg/usr/"
cp -a "$stage$sysconf/gwlb" "$pkg/etc/"
unit="$(find "$stage" -name gwlbd.service -path '*systemd/system*' | head -1)"
[ -n "$unit" ] || { echo "package.sh: meson install put no gwlbd.service" >&2; exit 1; }
sed -e "s|$sysconf/gwlb/|/etc/gwlb/|g" -e "s|$prefix/bin/|/usr/bin/|g" -e "s|$prefix/share/|/usr/share/|g" \
  "$unit" > "$pkg/lib/systemd/system/gwlbd.service"
chmod 0644 "$pkg/lib/systemd/system/gwlbd.service"
gzip -9n "$pkg"/usr/share/man/man*/*
install -m 0644 /dev/null "$pkg/usr/share/doc/gwlb/copyright"
cat > "$pkg/usr/share/doc/gwlb/copyright" <<'EOF'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: gwlb
License: Apache-2.0
Files: *
License: Apache-2.0
 On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.
EOF

# Depends from the shared libraries the binaries link.
mkdir -p "$work/shlibs/debian"
printf 'Source: gwlb\n\nPackage: gwlb\nArchitecture: any\n' > "$work/shlibs/debian/control"
depends="$(cd "$work/shlibs" && dpkg-shlibdeps -O $(printf -- '-e%s ' "$pkg"/usr/bin/*) 2>/dev/null \
           | sed -n 's/^shlibs:Depends=//p')"
[ -n "$depends" ] || { echo "package.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

cat > "$pkg/DEBIAN/control" <<EOF
Package: gwlb
Version: $version-1
Architecture: $arch
Maintainer: gwlb developers <gwlb@example.org>
Section: net
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $depends
Recommends: dpdk, systemd
Homepage: https://github.com/gwlb/gwlb
Description: gateway load balancer dataplane on DPDK
 gwlb spreads flows over a fleet of network appliances (firewalls, IDS)
 the way AWS Gateway Load Balancer does: Geneve encapsulation, health
 checks, flow stickiness, draining and rebalancing, regions with failover.
 This package holds gwlbd (the DPDK daemon and its systemd unit), gwlbctl
 (its command-line client, with bash completion), gwlb-replay (the
 pipeline over a capture), gwlb-probe and gwlb-appliance (test tools),
 man pages, example configurations and the documentation.
EOF
echo /etc/gwlb/gwlbd.yaml > "$pkg/DEBIAN/conffiles"
cat > "$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# Creates gwlbd's flow hash key once, like an SSH host key (kept on upgrades,
# so flows keep their appliances: docs/config.md "The flow hash key"), and
# makes systemd see the new or changed unit; does not enable or start it.
set -e
if [ "$1" = configure ]; then
  install -d -m 0700 /var/lib/gwlb
  if [ ! -e /var/lib/gwlb/flow_hash.key ]; then
    (umask 077 && od -An -tx1 -N16 /dev/urandom | tr -d ' \n' > /var/lib/gwlb/.flow_hash.key.new &&
     echo >> /var/lib/gwlb/.flow_hash.key.new &&
     mv /var/lib/gwlb/.flow_hash.key.new /var/lib/gwlb/flow_hash.key)
  fi
fi
if [ "$1" = configure ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
EOF
cat > "$pkg/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# Makes systemd forget a removed unit; a purge also removes the flow hash key.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload >/dev/null 2>&1 || true
fi
if [ "$1" = purge ]; then
  rm -f /var/lib/gwlb/flow_hash.key
  rmdir /var/lib/gwlb 2>/dev/null || true
fi
EOF
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/postrm"

mkdir -p "$out"
deb="$out/gwlb_${version}-1_${arch}.deb"
dpkg-deb --root-owner-group -Zxz -z6 --build "$pkg" "$deb" >/dev/null
echo "$deb"
