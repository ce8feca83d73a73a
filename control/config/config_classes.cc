// Traffic classes (issue 27) on the config side: how the items of
// traffic_classes[].match are read and checked, the rules between classes and
// listeners, and the warnings (a class no packet can reach, a listener no
// class sends traffic to). The keys themselves are in config_schema.cc.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {
namespace {

template <class T>
const T& as(const void* v) {
  return *static_cast<const T*>(v);
}

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }

// Decimal or 0x hex, at most `max`; false with `err` otherwise.
bool number(std::string_view t, uint64_t max, std::string_view what, std::string& err) {
  const std::string expect = "; expected " + std::string(what);
  uint64_t v = 0;
  unsigned base = 10;
  if (!t.empty() && t[0] == '-') return err = " is negative" + expect, false;
  if (t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) base = 16, t.remove_prefix(2);
  if (t.empty()) return err = " is not a number" + expect, false;
  for (char c : t) {
    unsigned d;
    if (c >= '0' && c <= '9') d = unsigned(c - '0');
    else if (base == 16 && c >= 'a' && c <= 'f') d = unsigned(c - 'a' + 10);
    else if (base == 16 && c >= 'A' && c <= 'F') d = unsigned(c - 'A' + 10);
    else return err = " is not a number" + expect, false;
    v = v * base + d;
    if (v > max) return err = " is out of range" + expect, false;
  }
  return true;
}
uint64_t numberOf(std::string_view t) {
  return std::stoull(std::string(t), nullptr, t.size() > 2 && (t[1] == 'x' || t[1] == 'X') ? 16 : 10);
}

bool parsePort(const std::string& t, void* item, std::string& err) {
  if (!number(t, 65535, "a DPDK port id in 0..65535", err)) return false;
  *static_cast<uint16_t*>(item) = uint16_t(numberOf(t));
  return true;
}
std::string u16Text(const void* item) { return std::to_string(as<uint16_t>(item)); }

// Read up to 65535 (the member's limit); 4095.. is the range check's.
bool parseVlan(const std::string& t, void* item, std::string& err) {
  if (!number(t, 65535, "a VLAN id in 0..4094 (0: untagged)", err)) return false;
  *static_cast<uint16_t*>(item) = uint16_t(numberOf(t));
  return true;
}

constexpr std::pair<std::string_view, uint8_t> kProtocols[] = {
    {"icmp", 1}, {"tcp", 6}, {"udp", 17}, {"icmpv6", 58}, {"sctp", 132}};
constexpr std::string_view kProtocolWhat =
    "tcp, udp, icmp, icmpv6, sctp or an IP protocol number in 0..255";

bool parseProtocol(const std::string& t, void* item, std::string& err) {
  for (const auto& [name, num] : kProtocols)
    if (t == name) return *static_cast<uint8_t*>(item) = num, true;
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0]))) {
    std::string lower = t;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (const auto& [name, num] : kProtocols)
      if (lower == name) return err = " is not a protocol; write it in lower case: " + std::string(name), false;
    return err = " is not a protocol; use " + std::string(kProtocolWhat), false;
  }
  if (!number(t, 255, kProtocolWhat, err)) return false;
  *static_cast<uint8_t*>(item) = uint8_t(numberOf(t));
  return true;
}
std::string protocolText(const void* item) {
  uint8_t p = as<uint8_t>(item);
  for (const auto& [name, num] : kProtocols)
    if (num == p) return std::string(name);
  return std::to_string(p);
}

bool parseL4Port(const std::string& t, void* item, std::string& err) {
  auto& r = *static_cast<PortRange*>(item);
  const char* what = "a port in 0..65535 or a range like 1000-2000";
  size_t dash = t.find('-', 1);
  std::string lo = t.substr(0, dash), hi = dash == std::string::npos ? lo : t.substr(dash + 1);
  if (!number(lo, 65535, what, err) || !number(hi, 65535, what, err)) return false;
  r.lo = uint16_t(numberOf(lo));
  r.hi = uint16_t(numberOf(hi));
  return true;
}
std::string l4PortText(const void* item) {
  const auto& r = as<PortRange>(item);
  return r.lo == r.hi ? std::to_string(r.lo) : std::to_string(r.lo) + "-" + std::to_string(r.hi);
}

// "10.9.0.0/16", "2001:db8::/32". Host bits and the length's range are the
// check's (checkPrefixes).
bool parsePrefix(const std::string& t, void* item, std::string& err) {
  auto& p = *static_cast<PrefixConfig*>(item);
  size_t slash = t.find('/');
  auto a = IpAddr::parse(std::string_view(t).substr(0, slash));
  if (!a) return err = " is not a prefix; expected a CIDR like 10.9.0.0/16 or 2001:db8::/32", false;
  if (slash == std::string::npos)
    return err = " has no prefix length; write /" + std::string(a->isV4() ? "32" : "128") +
                 " for this one address, or the network's length", false;
  if (!number(std::string_view(t).substr(slash + 1), 255,
              a->isV4() ? "a prefix length in 0..32" : "a prefix length in 0..128", err)) {
    err = " has a bad prefix length" + err.substr(err.find(';'));
    return false;
  }
  p.addr = *a;
  p.len = uint8_t(numberOf(std::string_view(t).substr(slash + 1)));
  return true;
}
std::string prefixText(const void* item) {
  const auto& p = as<PrefixConfig>(item);
  return p.addr.str() + "/" + std::to_string(p.len);
}

unsigned prefixMaxLen(const PrefixConfig& p) { return p.addr.isV4() ? 32 : 128; }

// Whether `inner` lies inside `outer` (same family, no shorter, same network).
bool prefixCovers(const PrefixConfig& outer, const PrefixConfig& inner) {
  if (outer.addr.family != inner.addr.family || outer.len > inner.len) return false;
  for (unsigned bit = 0; bit < outer.len; ++bit) {
    uint8_t m = uint8_t(0x80 >> (bit % 8));
    if ((outer.addr.b[bit / 8] & m) != (inner.addr.b[bit / 8] & m)) return false;
  }
  return true;
}

// Reports the items of a list that repeat an earlier one.
template <class T, class Eq, class Text>
void noRepeats(const std::vector<T>& v, const std::string& path, Eq eq, Text text, Report& r) {
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (eq(v[i], v[j])) {
        r.add(at(path, i), quote(text(&v[i])) + " is already " + at(path, j) + "; list each once");
        break;
      }
}

std::string className(const TrafficClassConfig& c) { return c.name.empty() ? "" : " (" + quote(c.name) + ")"; }

}  // namespace

const ItemKind kPortItem{parsePort, u16Text};
const ItemKind kVlanItem{parseVlan, u16Text};
const ItemKind kPrefixItem{parsePrefix, prefixText};
const ItemKind kProtocolItem{parseProtocol, protocolText};
const ItemKind kL4PortItem{parseL4Port, l4PortText};

void checkIngressPorts(const void* v, const std::string& path, Report& r) {
  noRepeats(as<std::vector<uint16_t>>(v), path, std::equal_to<>(), u16Text, r);
}

void checkVlans(const void* v, const std::string& path, Report& r) {
  const auto& l = as<std::vector<uint16_t>>(v);
  bool ranges_ok = true;
  for (size_t i = 0; i < l.size(); ++i)
    if (l[i] > 4094) {
      const std::string* w = r.written(at(path, i));
      r.add(at(path, i), quote(w ? *w : std::to_string(l[i])) +
                             " is not a VLAN id; allowed 0..4094 (0: untagged; 4095 is reserved)");
      ranges_ok = false;
    }
  if (ranges_ok) noRepeats(l, path, std::equal_to<>(), u16Text, r);
}

void checkProtocols(const void* v, const std::string& path, Report& r) {
  noRepeats(as<std::vector<uint8_t>>(v), path, std::equal_to<>(), protocolText, r);
}

void checkL4Ports(const void* v, const std::string& path, Report& r) {
  const auto& l = as<std::vector<PortRange>>(v);
  bool ok = true;
  for (size_t i = 0; i < l.size(); ++i)
    if (l[i].lo > l[i].hi) {
      r.add(at(path, i), quote(l4PortText(&l[i])) + " is an empty range; write the lower port first (" +
                             std::to_string(l[i].hi) + "-" + std::to_string(l[i].lo) + ")");
      ok = false;
    }
  if (ok)
    noRepeats(l, path, [](const PortRange& a, const PortRange& b) { return a.lo == b.lo && a.hi == b.hi; },
              l4PortText, r);
}

void checkPrefixes(const void* v, const std::string& path, Report& r) {
  const auto& l = as<std::vector<PrefixConfig>>(v);
  bool ok = true;
  for (size_t i = 0; i < l.size(); ++i) {
    const PrefixConfig& p = l[i];
    const std::string ip = at(path, i);
    if (!p.addr.isV4() && !p.addr.isV6()) {
      r.add(ip, "has no address; expected a CIDR like 10.9.0.0/16 or 2001:db8::/32");
      ok = false;
      continue;
    }
    const unsigned max = prefixMaxLen(p);
    if (p.len > max) {
      r.add(ip, quote(prefixText(&p)) + " has a bad prefix length; allowed 0.." + std::to_string(max) +
                    (p.addr.isV4() ? " for IPv4" : " for IPv6"));
      ok = false;
      continue;
    }
    PrefixConfig net = p;
    for (unsigned bit = p.len; bit < max; ++bit) net.addr.b[bit / 8] &= uint8_t(~(0x80 >> (bit % 8)));
    if (!(net.addr == p.addr)) {
      r.add(ip, quote(prefixText(&p)) + " has host bits set; the network is " + prefixText(&net) +
                    " (or write /" + std::to_string(max) + " for one address)");
      ok = false;
    }
  }
  if (ok)
    noRepeats(l, path, [](const PrefixConfig& a, const PrefixConfig& b) { return a.addr == b.addr && a.len == b.len; },
              prefixText, r);
}

void checkClassCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<TrafficClassConfig>>(v).size();
  if (n > kMaxClasses) r.add(path, tooMany(n, kMaxClasses, "classes", false));
}

// Names unique; inspect names a listener (without `listeners`: none, or the
// implicit one, "default"), bypass and drop none; no ingress port that takes
// in no traffic to inspect.
void checkClasses(const Config& c, Report& r, UnknownNames unknown) {
  std::map<std::string, size_t> names;
  std::set<std::string> listeners;
  for (const ListenerConfig& l : c.listeners) listeners.insert(l.name);
  std::map<uint16_t, PortRole> roles;
  for (const PortConfig& p : c.node.ports)
    if (p.role) roles.emplace(p.id, *p.role);
  for (size_t i = 0; i < c.traffic_classes.size(); ++i) {
    const TrafficClassConfig& tc = c.traffic_classes[i];
    const std::string cp = at("traffic_classes", i);
    if (tc.name.empty())
      r.add(cp + ".name", "is required: a class name of 1..63 characters from A-Z a-z 0-9 _ . -");
    else if (!validName(tc.name))
      r.add(cp + ".name", quote(tc.name) + " is not a valid name; use 1..63 characters from A-Z a-z 0-9 _ . -");
    else if (auto [it, fresh] = names.emplace(tc.name, i); !fresh)
      r.add(cp + ".name", quote(tc.name) + " is already the name of " + at("traffic_classes", it->second) +
                              "; class names must be unique");
    if (tc.action != ClassAction::kInspect) {
      if (!tc.listener.empty())
        r.add(cp + ".listener", std::string("applies to action inspect only; action is ") +
                                    toString(tc.action) + " (the flow reaches no listener): remove it");
    } else if (unknown.listeners) {
      // `listeners` (or a name in it) failed to parse: its error says what is wrong.
    } else if (c.listeners.empty()) {
      if (!tc.listener.empty() && tc.listener != "default")
        r.add(cp + ".listener", quote(tc.listener) + " is not a listener: without `listeners` the only "
                                "one is the implicit 'default' (over the first server group); "
                                "leave listener out or configure listeners");
    } else if (tc.listener.empty()) {
      r.add(cp + ".listener", "is required: action inspect sends the flow to a listener; name one of "
                              "listeners (or set action: bypass or drop)");
    } else if (!listeners.count(tc.listener)) {
      r.add(cp + ".listener", quote(tc.listener) + " is not a listener in listeners");
    }
    const auto& ports = tc.match.ingress_ports;
    for (size_t j = 0; j < ports.size(); ++j) {
      auto role = roles.find(ports[j]);
      if (role != roles.end() && !acceptsRouterTraffic(role->second))
        r.add(at(cp + ".match.ingress_ports", j),
              "port " + std::to_string(ports[j]) + " has role appliance in node.ports: it takes in "
              "no traffic to inspect, so this class would match nothing there");
    }
  }
}

namespace {

template <class T>
bool contains(const std::vector<T>& outer, const T& v) {
  return std::find(outer.begin(), outer.end(), v) != outer.end();
}

// Every packet `later` matches, `earlier` matches too: each field of
// `earlier` is empty (all) or holds every value of `later`'s (which then is
// not empty). Conservative: a value covered only by several of earlier's
// ranges or prefixes together does not count.
bool shadows(const TrafficClassMatch& earlier, const TrafficClassMatch& later) {
  auto covers = [](const auto& e, const auto& l, auto in) {
    if (e.empty()) return true;
    if (l.empty()) return false;
    return std::all_of(l.begin(), l.end(), [&](const auto& v) {
      return std::any_of(e.begin(), e.end(), [&](const auto& x) { return in(x, v); });
    });
  };
  auto eq = [](const auto& a, const auto& b) { return a == b; };
  return covers(earlier.ingress_ports, later.ingress_ports, eq) &&
         covers(earlier.vlans, later.vlans, eq) && covers(earlier.protocols, later.protocols, eq) &&
         covers(earlier.prefixes, later.prefixes, prefixCovers) &&
         covers(earlier.l4_ports, later.l4_ports,
                [](const PortRange& a, const PortRange& b) { return a.lo <= b.lo && b.hi <= a.hi; });
}

}  // namespace

void classWarnings(const Config& c, std::vector<ConfigError>& out) {
  const auto& cls = c.traffic_classes;
  for (size_t j = 0; j < cls.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (shadows(cls[i].match, cls[j].match)) {
        out.push_back({at("traffic_classes", j),
                       (cls[j].name.empty() ? std::string("this class") : "class " + quote(cls[j].name)) +
                           " matches no packet: " + at("traffic_classes", i) +
                           className(cls[i]) + " comes first and matches every packet it would "
                           "(first match wins); move it above, narrow the earlier class, or remove it"});
        break;
      }
  if (cls.empty()) return;
  std::map<std::string, const ListenerConfig*> listeners;
  for (const ListenerConfig& l : c.listeners) listeners.emplace(l.name, &l);
  std::set<std::string> named;
  for (size_t i = 0; i < cls.size(); ++i) {
    if (cls[i].action != ClassAction::kInspect) continue;
    named.insert(cls[i].listener);
    auto l = listeners.find(cls[i].listener);
    if (l == listeners.end()) continue;
    bool any_group = std::any_of(l->second->server_groups.begin(), l->second->server_groups.end(),
                                 [&](const std::string& g) {
                                   return std::any_of(c.server_groups.begin(), c.server_groups.end(),
                                                      [&](const ServerGroupConfig& sg) { return sg.name == g; });
                                 });
    if (!any_group)
      out.push_back({at("traffic_classes", i) + ".listener",
                     "listener " + quote(cls[i].listener) + " has no server group, so the flows of " +
                         at("traffic_classes", i) + className(cls[i]) + " reach no appliance; give it server_groups"});
  }
  for (size_t i = 0; i < c.listeners.size(); ++i)
    if (!named.count(c.listeners[i].name))
      out.push_back({at("listeners", i),
                     "listener " + quote(c.listeners[i].name) + " is named by no inspect class in "
                     "traffic_classes, so it receives no traffic; add a class for it, or remove it"});
}

}  // namespace gwlb::ctl::schema
