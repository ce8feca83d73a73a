// Per-key validation, driven by the key table: every range (checked here
// only; the parser stores what it read), the rules of a kind (addresses,
// MACs, file modes) and each key's own Key::check. Runs on parsed configs and
// on configs built in code (control API, reload, gwlb-replay), through
// validateConfig(). Rules between keys are in config_cross.cc.
#include <algorithm>
#include <array>
#include <atomic>
#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl {
namespace schema {
namespace {

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

void unicastMac(Report& r, const std::string& path, const MacAddr& m, bool required) {
  if (m.isZero()) {
    r.add(path, std::string(required ? "is required: " : "") +
                    "'00:00:00:00:00:00' is not usable; set a non-zero unicast MAC address");
  } else if (m.b[0] & 1) {
    r.add(path, quote(m.str()) + " is a multicast/broadcast MAC address; it must be unicast");
  }
}

void ipv4Unicast(Report& r, const std::string& path, const IpAddr& a, std::string_view what) {
  if (a.family == 0) {
    r.add(path, "is required: set " + std::string(what));
    return;
  }
  if (a.isV6()) {
    // The node's IPv6 underlay address has a key of its own: say which.
    r.add(path, quote(a.str()) + " is IPv6; use an IPv4 address" +
                    (path == "node.underlay_ip" ? " (the IPv6 underlay address goes in node.underlay_ipv6)" : ""));
    return;
  }
  if (!a.isV4()) {
    r.add(path, "has an invalid address family " + std::to_string(a.family));
    return;
  }
  uint32_t v = a.v4HostOrder();
  if (v == 0) {
    r.add(path, "'0.0.0.0' is not a usable address; use a unicast IPv4 address");
  } else if (v == 0xFFFFFFFFu) {
    r.add(path, "'255.255.255.255' is the broadcast address; use a unicast IPv4 address");
  } else if ((v >> 28) == 0xE) {
    r.add(path, quote(a.str()) + " is a multicast address; use a unicast IPv4 address");
  }
}

// An IPv4 address as ipv4Unicast() checks it, or a unicast IPv6 address
// (an IPv6 underlay's: not multicast, ::, ::1 or IPv4-mapped, none of which
// an appliance or a node can be reached at).
void ipUnicast(Report& r, const std::string& path, const IpAddr& a, std::string_view what) {
  if (!a.isV6()) return ipv4Unicast(r, path, a, what);
  static constexpr std::array<uint8_t, 16> kZero{}, kLoopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  if (a.b[0] == 0xff) {
    r.add(path, quote(a.str()) + " is a multicast address; use a unicast IPv6 address");
  } else if (a.b == kZero) {
    r.add(path, "'::' is not a usable address; use a unicast IPv6 address");
  } else if (a.b == kLoopback) {
    r.add(path, "'::1' is the loopback address; use a unicast IPv6 address");
  } else if (a.b[10] == 0xff && a.b[11] == 0xff &&
             std::all_of(a.b.begin(), a.b.begin() + 10, [](uint8_t x) { return x == 0; })) {
    r.add(path, quote(a.str()) + " is an IPv4-mapped address; write the IPv4 address itself");
  }
}

// The rules of one key's kind; false when the value is out of its range (its
// Key::check is then not run).
bool checkKind(const Key& k, const void* owner, const std::string& p, Report& r) {
  switch (k.kind) {
    case Kind::kUint:
      if (k.range.contains(k.acc.get(owner))) return true;
      r.add(p, uintOutOfRange(r.written(p), k.acc.get(owner), k.range));
      return false;
    case Kind::kSeconds:
      if (k.range.contains(k.acc.get(owner))) return true;
      r.add(p, secondsOutOfRange(r.written(p), k.acc.get(owner), k.range));
      return false;
    case Kind::kMillis:
      if (k.range.contains(k.acc.get(owner))) return true;
      r.add(p, millisOutOfRange(r.written(p), k.acc.get(owner), k.range));
      return false;
    case Kind::kOctalMode:
      if (k.range.contains(k.acc.get(owner))) return true;
      r.add(p, std::to_string(k.acc.get(owner)) + " is not a file mode (0..0777)");
      return false;
    case Kind::kMac:
      if (!k.acc.has) unicastMac(r, p, *static_cast<const MacAddr*>(k.acc.cat(owner)), k.required);
      else if (const auto& m = *static_cast<const std::optional<MacAddr>*>(k.acc.cat(owner)))
        unicastMac(r, p, *m, false);
      return true;
    case Kind::kIpv4:
      if (!k.acc.has) ipv4Unicast(r, p, *static_cast<const IpAddr*>(k.acc.cat(owner)), k.what);
      else if (const auto& a = *static_cast<const std::optional<IpAddr>*>(k.acc.cat(owner)))
        ipv4Unicast(r, p, *a, k.what);
      return true;
    case Kind::kIp:
      if (!k.acc.has) ipUnicast(r, p, *static_cast<const IpAddr*>(k.acc.cat(owner)), k.what);
      else if (const auto& a = *static_cast<const std::optional<IpAddr>*>(k.acc.cat(owner)))
        ipUnicast(r, p, *a, k.what);
      return true;
    default:
      return true;
  }
}

void checkSection(const Section& s, const void* obj, const std::string& path, Report& r) {
  if (s.checked && !s.checked(obj)) return;
  for (const Key& k : s.keys) {
    if (k.applies && !k.applies(obj)) continue;
    const std::string p = join(path, k.name);
    if (!checkKind(k, obj, p, r)) continue;
    if (k.check) k.check(k.acc.cat(obj), p, r);
    if (k.kind == Kind::kSection) checkSection(*k.sub, k.acc.cat(obj), p, r);
    if (k.kind == Kind::kList)
      for (size_t i = 0; i < k.acc.count(obj); ++i)
        checkSection(*k.sub, k.acc.citem(obj, i), p + "[" + std::to_string(i) + "]", r);
  }
}

}  // namespace

void checkKeys(const Config& c, Report& r) { checkSection(rootSection(), &c, "", r); }

}  // namespace schema

namespace {
std::atomic<uint64_t> validations{0};
}  // namespace

uint64_t validationsRun() { return validations.load(std::memory_order_relaxed); }

bool validateConfig(const Config& c, std::vector<ConfigError>& errors) {
  validations.fetch_add(1, std::memory_order_relaxed);
  schema::Report r(errors);
  schema::checkKeys(c, r);
  schema::checkCrossFields(c, r, {});
  return errors.empty();
}

}  // namespace gwlb::ctl
