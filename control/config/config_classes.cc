// Traffic classes on the config side: how the items of
// traffic_classes[].match are read and checked and the rules between classes
// and listeners; the warnings are in config_class_warnings.cc. The keys
// themselves are in config_schema_listeners.cc.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <tuple>

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

// Reports the items of a list that repeat an earlier one (naming the first),
// in list order. Sorted, not compared in pairs: a list of 1,024 prefixes
// shared by 1,000 classes through a YAML anchor is checked 1,000 times.
template <class T, class Less, class Text>
void noRepeats(const std::vector<T>& v, const std::string& path, Less less, Text text, Report& r) {
  std::vector<size_t> order(v.size()), first(v.size());
  for (size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return less(v[a], v[b]); });
  for (size_t k = 0; k < order.size(); ++k)
    first[order[k]] = k > 0 && !less(v[order[k - 1]], v[order[k]]) ? first[order[k - 1]] : order[k];
  for (size_t i = 0; i < v.size(); ++i)
    if (first[i] != i) r.add(at(path, i), quote(text(&v[i])) + " is already " + at(path, first[i]) + "; list each once");
}

}  // namespace

const ItemKind kPortItem{parsePort, u16Text};
const ItemKind kVlanItem{parseVlan, u16Text};
const ItemKind kPrefixItem{parsePrefix, prefixText};
const ItemKind kProtocolItem{parseProtocol, protocolText};
const ItemKind kL4PortItem{parseL4Port, l4PortText};

void checkIngressPorts(const void* v, const std::string& path, Report& r) {
  noRepeats(as<std::vector<uint16_t>>(v), path, std::less<>(), u16Text, r);
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
  if (ranges_ok) noRepeats(l, path, std::less<>(), u16Text, r);
}

void checkProtocols(const void* v, const std::string& path, Report& r) {
  noRepeats(as<std::vector<uint8_t>>(v), path, std::less<>(), protocolText, r);
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
    noRepeats(l, path, [](const PortRange& a, const PortRange& b) { return std::tie(a.lo, a.hi) < std::tie(b.lo, b.hi); },
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
    noRepeats(l, path,
              [](const PrefixConfig& a, const PrefixConfig& b) {
                return std::tie(a.addr.family, a.addr.b, a.len) < std::tie(b.addr.family, b.addr.b, b.len);
              },
              prefixText, r);
}

void checkClassCount(const void* v, const std::string& path, Report& r) {
  size_t n = as<std::vector<TrafficClassConfig>>(v).size();
  if (n > kMaxClasses) r.add(path, tooMany(n, kMaxClasses, "classes", false));
}

// Tag names valid and unique (values may repeat: two names for one tenant).
void checkTags(const Config& c, Report& r) {
  std::map<std::string, size_t> names;
  for (size_t i = 0; i < c.tags.size(); ++i) {
    const std::string& n = c.tags[i].name;
    if (n.empty()) continue;  // required: the key table says so
    if (!validName(n) || (n[0] >= '0' && n[0] <= '9'))
      r.add(at("tags", i) + ".name", quote(n) + " is not a valid tag name; use 1..63 characters from "
                                     "A-Z a-z 0-9 _ . -, not starting with a digit (a number is a value)");
    else if (auto [it, fresh] = names.emplace(n, i); !fresh)
      r.add(at("tags", i) + ".name", quote(n) + " is already the name of " + at("tags", it->second) +
                                     "; tag names must be unique");
  }
}

// A mirror names a server group that serves no listener: its appliances are
// passive tools that send nothing back, and a listener's group would get both
// its flows and copies.
void checkClassMirror(const Config& c, const TrafficClassConfig& tc, const std::string& cp, Report& r,
                      UnknownNames unknown) {
  const std::string& g = tc.mirror.group;
  if (g.empty()) {
    // A mirror is its group (the section is checked only with one).
    if (tc.mirror.truncate != 0 || tc.mirror.sample != 1)
      r.add(cp + ".mirror.group", "is required: the server group that receives the copies");
    return;
  }
  if (unknown.groups) return;  // `server_groups` failed to parse: its error says what is wrong
  size_t gi = 0;
  while (gi < c.server_groups.size() && c.server_groups[gi].name != g) ++gi;
  if (gi == c.server_groups.size()) {
    r.add(cp + ".mirror.group", quote(g) + " is not a server group in server_groups");
    return;
  }
  if (c.listeners.empty() && gi == 0) {
    r.add(cp + ".mirror.group", quote(g) + " is the first server group, which serves the implicit "
                                "listener without `listeners`: a mirror group must serve none");
    return;
  }
  for (size_t i = 0; i < c.listeners.size(); ++i)
    for (const std::string& lg : c.listeners[i].server_groups)
      if (lg == g)
        r.add(cp + ".mirror.group", quote(g) + " is in " + at("listeners", i) +
                                    ".server_groups: a mirror group must serve no listener "
                                    "(its appliances receive copies and send nothing back)");
  // A copy carries gwlb's mirror option (direction and class), which only
  // Geneve has room for.
  if (c.server_groups[gi].encapsulation == Encapsulation::kVxlan)
    r.add(cp + ".mirror.group", quote(g) + " uses encapsulation: vxlan; mirror copies are Geneve "
                                "(they carry gwlb's mirror option): give the mirror group geneve");
}

// Names unique; inspect names a listener (without `listeners`: none, or the
// implicit one, "default"), bypass and drop none; no ingress port that takes
// in no traffic to inspect.
void checkClasses(const Config& c, Report& r, UnknownNames unknown) {
  checkTags(c, r);
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
    checkClassMirror(c, tc, cp, r, unknown);
    // A name with a tag list that failed to parse (or a bad entry) is that error's.
    const bool tags_bad = std::any_of(c.tags.begin(), c.tags.end(), [](const TagConfig& t) {
      return !validName(t.name) || (t.name[0] >= '0' && t.name[0] <= '9');
    });
    if (!tc.tag.empty() && !classTagValue(c.tags, tc.tag) && !(tags_bad || r.written("tags")))
      r.add(cp + ".tag", quote(tc.tag) + " is neither a 32-bit number (0..4294967295, or 0x hex) nor "
                         "a name in tags");
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

}  // namespace gwlb::ctl::schema

namespace gwlb::ctl {

std::optional<uint32_t> classTagValue(const std::vector<TagConfig>& tags, const std::string& tag) {
  if (tag.empty()) return std::nullopt;
  if (tag[0] >= '0' && tag[0] <= '9') {
    const bool hex = tag.size() > 2 && tag[0] == '0' && (tag[1] == 'x' || tag[1] == 'X');
    const std::string digits = hex ? tag.substr(2) : tag;
    if (digits.empty() || digits.size() > (hex ? 8u : 10u) ||
        digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
      return std::nullopt;
    const unsigned long long v = std::stoull(digits, nullptr, hex ? 16 : 10);
    if (v > 0xFFFFFFFFull) return std::nullopt;
    return uint32_t(v);
  }
  for (const TagConfig& t : tags)
    if (t.name == tag) return t.value;
  return std::nullopt;
}

}  // namespace gwlb::ctl
