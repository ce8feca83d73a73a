// The warnings about traffic classes (configWarnings, control/config/config.h):
// a class an earlier one shadows, a first class that takes every packet away
// from the appliances, an ingress port the gateway does not have, an inspect
// class whose listener has no server group, a listener no class names.
//
// The shadow check runs in every check of a file, at start and on reload (on
// the control thread, under the watchdog), so its work is bounded whatever
// the classes the schema accepts: each match field becomes the union of its
// items as sorted spans, identical fields are numbered once (a list shared by
// many classes through a YAML anchor costs one), and two classes are compared
// field by field, the O(1) tests (same set, bounds, size, coarse buckets)
// first. The span walks that remain stop after kShadowWork steps: the check
// then says which classes it did not judge, rather than hold up the caller.
#include <algorithm>
#include <bit>
#include <map>
#include <set>

#include "control/config/config.h"
#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {
namespace {

__extension__ typedef unsigned __int128 U128;

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }
std::string className(const TrafficClassConfig& c) { return c.name.empty() ? "" : " (" + quote(c.name) + ")"; }
std::string classWord(const TrafficClassConfig& c) {
  return c.name.empty() ? std::string("this class") : "class " + quote(c.name);
}

// Whether every value an earlier class's field lets through includes a later
// one's: yes, no, or not known yet (kMaybe: a span walk decides).
enum Cover : int8_t { kNo = -1, kMaybe = 0, kYes = 1 };

// One match field of every class. Ids number the distinct value sets; id 0 is
// the field left out (every value).
class Field {
 public:
  virtual ~Field() = default;
  virtual uint32_t of(size_t cls) const = 0;
  virtual size_t spans(uint32_t id) const = 0;
  // The O(1) answer when there is one.
  virtual Cover quick(uint32_t e, uint32_t l) const = 0;
  // The answer by walking the spans; kMaybe when `work` would run out.
  virtual Cover walk(uint32_t e, uint32_t l, uint64_t& work) = 0;
  // Whether set `id` holds the whole domain.
  virtual bool full(uint32_t id) const = 0;
};

template <class T>
class FieldSets final : public Field {
 public:
  using Spans = std::vector<std::pair<T, T>>;
  // `bits`: the width of the domain's values (16 for L4 ports, 128 for IPv6);
  // `top`: the highest value the config allows (VLANs: 4094).
  FieldSets(unsigned bits, T top) : bits_(bits), top_(top) { sets_.push_back({}); }

  // The next class's set: every value (`all`), else the union of `items`.
  void add(bool all, Spans items) {
    if (all) {
      of_.push_back(0);
      return;
    }
    std::sort(items.begin(), items.end());
    Spans merged;
    for (const auto& s : items)
      if (!merged.empty() && (s.first <= merged.back().second || s.first - 1 == merged.back().second))
        merged.back().second = std::max(merged.back().second, s.second);
      else
        merged.push_back(s);
    auto [it, fresh] = index_.emplace(std::move(merged), uint32_t(sets_.size()));
    if (fresh) sets_.push_back(summary(it->first));
    of_.push_back(it->second);
  }

  uint32_t of(size_t cls) const override { return of_[cls]; }
  size_t spans(uint32_t id) const override { return id ? sets_[id].spans->size() : 0; }

  Cover quick(uint32_t e, uint32_t l) const override {
    if (e == 0 || e == l) return kYes;
    if (l == 0) return kNo;
    const Set &E = sets_[e], &L = sets_[l];
    if (L.spans->empty()) return kYes;
    if (E.spans->empty() || L.lo < E.lo || L.hi > E.hi || (L.buckets & ~E.buckets) || L.count > E.count)
      return kNo;
    return kMaybe;
  }

  Cover walk(uint32_t e, uint32_t l, uint64_t& work) override {
    if (memo_.empty()) memo_.assign(sets_.size() * sets_.size(), kMaybe);
    int8_t& m = memo_[size_t(e) * sets_.size() + l];
    if (m != kMaybe) return Cover(m);
    const Spans &E = *sets_[e].spans, &L = *sets_[l].spans;
    size_t k = 0;  // E's first span that can hold the next of L's
    for (const auto& [lo, hi] : L) {
      if (work == 0) return kMaybe;
      // Galloping from k (both lists are sorted): a step or two when the
      // sets are alike, a binary search's steps when they are not.
      uint64_t cost = 1;
      size_t a = k, b = k, step = 1;
      while (b < E.size() && E[b].second < lo) a = b + 1, b = k + step, step <<= 1, ++cost;
      b = std::min(b, E.size());
      k = size_t(std::partition_point(E.begin() + ptrdiff_t(a), E.begin() + ptrdiff_t(b),
                                      [&](const auto& s) { return s.second < lo; }) - E.begin());
      work -= std::min(work, cost + uint64_t(std::bit_width(b - a)));
      if (k == E.size() || E[k].first > lo || E[k].second < hi) return Cover(m = kNo);
    }
    return Cover(m = kYes);
  }

  bool full(uint32_t id) const override {
    if (id == 0) return true;
    const Spans& s = *sets_[id].spans;
    return s.size() == 1 && s[0].first == 0 && s[0].second == top_;
  }

 private:
  struct Set {
    const Spans* spans = nullptr;  // the key in index_ (map nodes do not move)
    T lo{}, hi{}, count{};         // count saturates (IPv6)
    uint64_t buckets = 0;          // which 64ths of the domain it touches
  };
  Set summary(const Spans& s) const {
    Set x;
    x.spans = &s;
    if (s.empty()) return x;
    x.lo = s.front().first, x.hi = s.back().second;
    for (const auto& [lo, hi] : s) {
      T n = hi - lo + 1;  // 0 only for the whole 128-bit space
      x.count = (n == 0 || x.count + n < x.count) ? ~T(0) : x.count + n;
      const unsigned a = unsigned(lo >> (bits_ - 6)), b = unsigned(hi >> (bits_ - 6));
      x.buckets |= (b == 63 ? ~uint64_t(0) : (uint64_t(2) << b) - 1) & ~((uint64_t(1) << a) - 1);
    }
    return x;
  }

  unsigned bits_;
  T top_;
  std::map<Spans, uint32_t> index_;
  std::vector<Set> sets_;
  std::vector<uint32_t> of_;
  std::vector<int8_t> memo_;  // by (earlier id, later id): Cover, kMaybe when not walked yet
};

template <class T>
std::pair<T, T> prefixSpan(const PrefixConfig& p, unsigned bits) {
  T v = 0;
  for (unsigned i = 0; i < bits / 8; ++i) v = T(v << 8) | p.addr.b[i];
  const T host = p.len == 0 ? ~T(0) >> (sizeof(T) * 8 - bits) : p.len >= bits ? T(0) : (T(1) << (bits - p.len)) - 1;
  return {v & ~host, (v & ~host) | host};
}

// Every class's fields as value sets, in the order the pair test tries them.
struct ClassFields {
  FieldSets<uint32_t> ingress{16, 0xFFFF}, vlans{12, 4094}, protocols{8, 0xFF}, l4{16, 0xFFFF};
  FieldSets<uint32_t> v4{32, 0xFFFFFFFF};
  FieldSets<U128> v6{128, ~U128(0)};
  Field* all[6] = {&ingress, &vlans, &protocols, &l4, &v4, &v6};

  explicit ClassFields(const std::vector<TrafficClassConfig>& cls) {
    using S32 = FieldSets<uint32_t>::Spans;
    auto values = [](const auto& list) {
      S32 s;
      for (auto v : list) s.emplace_back(uint32_t(v), uint32_t(v));
      return s;
    };
    for (const TrafficClassConfig& c : cls) {
      const TrafficClassMatch& m = c.match;
      ingress.add(m.ingress_ports.empty(), values(m.ingress_ports));
      vlans.add(m.vlans.empty(), values(m.vlans));
      protocols.add(m.protocols.empty(), values(m.protocols));
      S32 ports;
      for (const PortRange& r : m.l4_ports) ports.emplace_back(r.lo, r.hi);
      l4.add(m.l4_ports.empty(), std::move(ports));
      // An empty prefix list is every address of both families; a list with
      // prefixes of one family only matches no address of the other.
      S32 a4;
      FieldSets<U128>::Spans a6;
      for (const PrefixConfig& p : m.prefixes) {
        if (p.addr.isV4()) a4.push_back(prefixSpan<uint32_t>(p, 32));
        if (p.addr.isV6()) a6.push_back(prefixSpan<U128>(p, 128));
      }
      v4.add(m.prefixes.empty(), std::move(a4));
      v6.add(m.prefixes.empty(), std::move(a6));
    }
  }

  // Every packet `l` matches, `e` matches too: each field of `e` holds every
  // value of `l`'s (fields are independent: the either-endpoint fields match
  // when one endpoint's value is in the set). kMaybe: `work` ran out.
  Cover shadows(size_t e, size_t l, uint64_t& work) {
    Field* open[6];
    size_t n = 0;
    for (Field* f : all) switch (f->quick(f->of(e), f->of(l))) {
        case kNo: return kNo;
        case kMaybe: open[n++] = f; break;
        case kYes: break;
      }
    for (size_t i = 1; i < n; ++i)  // the shortest walk first (insertion: at most 6)
      for (size_t k = i; k > 0 && open[k]->spans(open[k]->of(l)) < open[k - 1]->spans(open[k - 1]->of(l)); --k)
        std::swap(open[k], open[k - 1]);
    for (size_t i = 0; i < n; ++i)
      if (Cover c = open[i]->walk(open[i]->of(e), open[i]->of(l), work); c != kYes) return c;
    return kYes;
  }

  // Whether class `i` matches every packet (with its ports or not).
  bool matchesAll(size_t i) const {
    // A list of all 256 ingress port ids can still miss a port; L4 ports
    // never hold the packets whose ports are unknown (non-first fragments).
    return ingress.of(i) == 0 && l4.of(i) == 0 && vlans.full(vlans.of(i)) &&
           protocols.full(protocols.of(i)) && v4.full(v4.of(i)) && v6.full(v6.of(i));
  }
};

// The span steps the shadow check may take: some 40 ms of CPU on the benchmark's
// machine (bench/class_check_bench.cc), far more than any class set a person
// writes needs; past it the check reports what it did not judge.
constexpr uint64_t kShadowWork = 20'000'000;

void shadowWarnings(const std::vector<TrafficClassConfig>& cls, ClassFields& f, std::vector<ConfigError>& out) {
  uint64_t work = kShadowWork;
  for (size_t j = 1; j < cls.size(); ++j)
    for (size_t i = 0; i < j; ++i) {
      const Cover c = f.shadows(i, j, work);
      if (c == kNo) continue;
      if (c == kMaybe) {
        out.push_back({at("traffic_classes", j),
                       "not computed: whether an earlier class shadows " + at("traffic_classes", j) +
                           (j + 1 < cls.size() ? " and the " + std::to_string(cls.size() - j - 1) + " after it"
                                               : std::string()) +
                           " (the check stops after " + std::to_string(kShadowWork) +
                           " steps of comparing prefixes and ports, so that no check, start or reload "
                           "waits on it); the classes apply as written"});
        return;
      }
      out.push_back({at("traffic_classes", j),
                     classWord(cls[j]) + " matches no packet: " + at("traffic_classes", i) + className(cls[i]) +
                         " comes first and matches every packet it would "
                         "(first match wins); move it above, narrow the earlier class, or remove it"});
      break;
    }
}

// How many ports the classes may name: `ports` when the caller knows them,
// else as gwlb-replay has them, 0 .. the highest id the config gives.
void portWarnings(const Config& c, unsigned ports, std::vector<ConfigError>& out) {
  const bool known = ports != 0;
  size_t n = size_t(c.node.underlay_port) + 1;
  for (const PortConfig& p : c.node.ports) n = std::max(n, size_t(p.id) + 1);
  if (known) n = ports;
  const std::string have =
      known ? "gwlbd has " + std::to_string(n) + " DPDK port" + (n == 1 ? "" : "s") +
                  (n == 1 ? " (0)" : " (0.." + std::to_string(n - 1) + ")")
            : "the config gives " + (n == 1 ? std::string("port 0") : "ports 0.." + std::to_string(n - 1)) +
                  " (node.underlay_port, node.ports[].id; gwlbd's other ports are known only when it runs)";
  for (size_t i = 0; i < c.traffic_classes.size(); ++i) {
    const auto& list = c.traffic_classes[i].match.ingress_ports;
    for (size_t k = 0; k < list.size(); ++k) {
      if (list[k] < n) continue;
      out.push_back({at(at("traffic_classes", i) + ".match.ingress_ports", k),
                     "port " + std::to_string(list[k]) + " does not exist: " + have + ", so " +
                         classWord(c.traffic_classes[i]) + " matches nothing there and that traffic " +
                         "goes to the next class that matches; correct the id" +
                         (known ? std::string() : ", or list the port in node.ports (gwlbd then refuses "
                                                  "to start without it)")});
    }
  }
}

}  // namespace

void classWarnings(const Config& c, std::vector<ConfigError>& out, unsigned ports) {
  const auto& cls = c.traffic_classes;
  if (!cls.empty()) {
    ClassFields f(cls);
    if (f.matchesAll(0) && cls[0].action != ClassAction::kInspect)
      out.push_back({at("traffic_classes", 0),
                     classWord(cls[0]) + " comes first and matches every packet: the gateway " +
                         (cls[0].action == ClassAction::kDrop ? "drops all traffic" : "bypasses all traffic") +
                         " and no flow reaches an appliance; narrow its match or move it below the "
                         "classes that should come first"});
    shadowWarnings(cls, f, out);
  }
  portWarnings(c, ports, out);
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
                                                      [&](const ApplianceGroupConfig& sg) { return sg.name == g; });
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
