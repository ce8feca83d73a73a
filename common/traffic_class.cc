#include "common/traffic_class.h"

#include <algorithm>
#include <unordered_map>

namespace gwlb {
namespace {
using Bits = std::vector<uint64_t>;
inline void setBit(Bits& s, size_t r) { s[r / 64] |= uint64_t(1) << (r % 64); }

__extension__ typedef unsigned __int128 U128;
U128 v6Of(const uint8_t* b) {
  U128 x = 0;
  for (int i = 0; i < 16; ++i) x = x << 8 | b[i];
  return x;
}
uint32_t v4Of(const uint8_t* b) {
  return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3];
}

struct BitsHash {
  size_t operator()(const Bits& s) const noexcept {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint64_t w : s) h = (h ^ w) * 0xBF58476D1CE4E5B9ull, h ^= h >> 29;
    return size_t(h);
  }
};

// One field's equivalence classes: the distinct rule sets its values produce,
// numbered in order of first appearance.
struct Classes {
  explicit Classes(size_t words) : W(words) {}
  size_t W;
  std::unordered_map<Bits, uint32_t, BitsHash> index;
  std::vector<uint64_t> flat;  // class i's set at [i * W, (i + 1) * W)
  uint32_t intern(const Bits& s) {
    if (auto it = index.find(s); it != index.end()) return it->second;  // no key copy
    const uint32_t id = uint32_t(index.size());
    index.emplace(s, id);
    flat.insert(flat.end(), s.begin(), s.end());
    return id;
  }
  size_t size() const { return index.size(); }
  const uint64_t* set(size_t i) const { return flat.data() + i * W; }
};

// The intervals cut by the prefixes of one family, by a sweep over the
// prefixes' ends: `starts` (sorted, the first 0) and each interval's class in
// `cls`, interned in `out`: the rules whose prefixes of this family cover it,
// or that have none. Neighbouring intervals of one class merge. It holds the
// ends (two per prefix) and a cover count per rule, never a rule set per
// interval, and each prefix costs its two ends however many intervals it spans.
template <typename T>
void addressClasses(const std::vector<ClassRule>& rules, int family, int bits, size_t words, Classes& out,
                    std::vector<T>& starts, std::vector<uint32_t>& cls) {
  auto range = [&](const IpAddr& a, uint8_t len, T& lo, T& hi) {
    T v = family == 4 ? T(v4Of(a.b.data())) : T(v6Of(a.b.data()));
    // len 0 is the whole family: its host mask cannot be a shift (a shift by
    // the type's width is undefined).
    T host = len == 0      ? (family == 4 ? T(0xFFFFFFFFu) : ~T(0))
             : len >= bits ? T(0)
                           : ((T(1) << (bits - len)) - 1);
    lo = v & ~host;
    hi = lo | host;
  };
  struct End {
    T at;
    uint32_t rule;
    bool open;
  };
  std::vector<End> ends;
  const T max = family == 4 ? T(0xFFFFFFFFu) : ~T(0);
  Bits cur(words, 0);
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    if (rules[ri].prefixes.empty()) setBit(cur, ri);
    for (const auto& [a, len] : rules[ri].prefixes) {
      if (a.family != family) continue;
      T lo, hi;
      range(a, len, lo, hi);
      ends.push_back({lo, uint32_t(ri), true});
      if (hi != max) ends.push_back({T(hi + 1), uint32_t(ri), false});
    }
  }
  std::sort(ends.begin(), ends.end(), [](const End& x, const End& y) { return x.at < y.at; });
  std::vector<uint32_t> depth(rules.size(), 0);  // a rule's prefixes covering the sweep's point
  starts.clear();
  cls.clear();
  auto emit = [&](T at) {
    const uint32_t id = out.intern(cur);
    if (!cls.empty() && cls.back() == id) return;
    starts.push_back(at);
    cls.push_back(id);
  };
  if (ends.empty() || ends[0].at != T(0)) emit(T(0));
  for (size_t i = 0; i < ends.size();) {
    const T at = ends[i].at;
    for (; i < ends.size() && ends[i].at == at; ++i) {
      const End& e = ends[i];
      if (e.open) {
        if (depth[e.rule]++ == 0) setBit(cur, e.rule);
      } else if (--depth[e.rule] == 0) {
        cur[e.rule / 64] &= ~(uint64_t(1) << (e.rule % 64));
      }
    }
    emit(at);
  }
  starts.shrink_to_fit();
  cls.shrink_to_fit();
}

// Nodes buildTrie4 makes for these interval starts: one per /16 and one per
// /24 that a start falls strictly inside.
size_t trieNodes(const std::vector<uint32_t>& starts) {
  size_t n = 0;
  int64_t last16 = -1, last24 = -1;
  for (uint32_t s : starts) {
    if ((s & 0xFFFF) && int64_t(s >> 16) != last16) ++n, last16 = s >> 16;
    if ((s & 0xFF) && int64_t(s >> 8) != last24) ++n, last24 = s >> 8;
  }
  return n;
}

// The IPv4 trie: a 16-bit top level, then 8-bit nodes; an entry is a class
// or kChild | node. Built from the interval starts and their classes: a slot
// one interval covers whole is a leaf. Each cut adds at most two nodes.
void buildTrie4(const std::vector<uint32_t>& starts, const std::vector<uint32_t>& cls,
                uint32_t kChild, std::vector<uint32_t>& top, std::vector<uint32_t>& nodes) {
  top.assign(65536, 0);
  nodes.clear();
  // Slots are written through node indices, never through a pointer held
  // across the growth of `nodes`.
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint64_t lo = uint64_t(i) << 16, hi = lo + 0xFFFF;
    size_t k = size_t(std::upper_bound(starts.begin(), starts.end(), uint32_t(lo)) - starts.begin()) - 1;
    if (k + 1 == starts.size() || starts[k + 1] > hi) {
      top[i] = cls[k];
      continue;
    }
    const size_t n1 = nodes.size() / 256;
    nodes.resize(nodes.size() + 256);
    top[i] = kChild | uint32_t(n1);
    for (uint32_t j = 0; j < 256; ++j) {
      const uint64_t lo2 = lo | uint64_t(j) << 8, hi2 = lo2 + 0xFF;
      size_t k2 = size_t(std::upper_bound(starts.begin(), starts.end(), uint32_t(lo2)) - starts.begin()) - 1;
      if (k2 + 1 == starts.size() || starts[k2 + 1] > hi2) {
        nodes[n1 * 256 + j] = cls[k2];
        continue;
      }
      const size_t n2 = nodes.size() / 256;
      nodes.resize(nodes.size() + 256);
      nodes[n1 * 256 + j] = kChild | uint32_t(n2);
      for (uint32_t x = 0; x < 256; ++x) {
        const uint32_t a = uint32_t(lo2 | x);
        nodes[n2 * 256 + x] =
            cls[size_t(std::upper_bound(starts.begin(), starts.end(), a) - starts.begin()) - 1];
      }
    }
  }
}

// A cross-product stage: table[x * |right| + y] = the class (in `out`) of
// left[x] & right[y] (& mask), cut after its first rule in `wild` (one that
// matches whatever the later fields are). False when it would exceed `limit`
// cells or 65,535 classes: the table then classifies by bit vectors.
bool crossStage(const Classes& left, const Classes& right, const Bits* mask, const Bits& wild, size_t limit,
                Classes& out, std::vector<uint16_t>& table) {
  const size_t nl = left.size(), nr = right.size(), W = left.W;
  if (nl * nr > limit) return false;
  table.resize(nl * nr);
  Bits s(W, 0), lm(W);
  std::vector<size_t> nz;  // left[x]'s nonzero words: the only ones a cell can have
  for (size_t x = 0; x < nl; ++x) {
    nz.clear();
    for (size_t w = 0; w < W; ++w)
      if ((lm[w] = left.set(x)[w] & (mask ? (*mask)[w] : ~uint64_t(0)))) nz.push_back(w);
    for (size_t y = 0; y < nr; ++y) {
      const uint64_t* b = right.set(y);
      bool cut = false;
      for (size_t w : nz) {
        uint64_t v = cut ? 0 : lm[w] & b[w];
        if (uint64_t f = v & wild[w]) {
          v &= f ^ (f - 1);  // up to and with the lowest bit of f
          cut = true;
        }
        s[w] = v;
      }
      const uint32_t id = out.intern(s);
      if (id >= kNoClass) return false;
      table[x * nr + y] = uint16_t(id);
    }
    for (size_t w : nz) s[w] = 0;
  }
  return true;
}

}  // namespace

struct ClassTable::Data {
  explicit Data(size_t W) : P(W), V(W), R(W), L(W), A{Classes(W), Classes(W)} {}
  Classes P, V, R, L;  // per field: port, VLAN, protocol, L4 port
  Classes A[2];        // addresses: IPv4; IPv6 and (last) neither family
  std::vector<uint16_t> port_, vlan_, proto_, l4_;
  uint32_t l4_unknown = 0;  // L's id of "ports unknown" (l4_[65536] when it fits)
  std::vector<uint32_t> port_row_;
  std::vector<uint32_t> a4_top_, a4_node_;
  std::vector<uint32_t> v4_start_, v4_cls_;  // without the trie only
  std::vector<U128> v6_start_;
  std::vector<uint32_t> v6_cls_;
  struct Product {
    std::vector<uint16_t> pv, pvr, pl, fin;  // stage classes; fin: the first rule
    std::vector<uint32_t> pv_row, pvr_row, pl_row;  // the same as row offsets
  } prod[2];
  std::vector<uint8_t> action_, listener_;
};

ClassTable::ClassTable(const std::vector<ClassRule>& rules, size_t cell_limit, size_t trie_limit) {
  if (rules.empty()) return;
  n_rules_ = uint32_t(std::min(rules.size(), kMaxClasses));
  std::vector<ClassRule> rs(rules.begin(), rules.begin() + n_rules_);
  const size_t W = (n_rules_ + 63) / 64;
  auto data = std::make_shared<Data>(W);
  Data& D = *data;
  for (const ClassRule& r : rs) {
    D.action_.push_back(uint8_t(r.action));
    D.listener_.push_back(r.listener);
  }
  // A field given as a list of values over a small domain; `domain` is the
  // value no rule can name (an ingress port >= 256), matched by the rules
  // without the field.
  auto table = [&](size_t domain, auto values, Classes& cls, std::vector<uint16_t>& out) {
    std::vector<Bits> per(domain + 1, Bits(W, 0));
    for (size_t ri = 0; ri < rs.size(); ++ri) {
      const auto& v = values(rs[ri]);
      if (v.empty()) {
        for (Bits& s : per) setBit(s, ri);
      } else {
        for (auto x : v)
          if (size_t(x) < domain) setBit(per[x], ri);
      }
    }
    out.resize(domain + 1);
    for (size_t i = 0; i <= domain; ++i) out[i] = uint16_t(cls.intern(per[i]));
  };
  table(256, [](const ClassRule& r) -> const auto& { return r.ingress_ports; }, D.P, D.port_);
  table(4096, [](const ClassRule& r) -> const auto& { return r.vlans; }, D.V, D.vlan_);
  table(256, [](const ClassRule& r) -> const auto& { return r.protocols; }, D.R, D.proto_);
  // L4 ports: elementary intervals of the ranges, then a direct table whose
  // last entry (65536) is "ports unknown": the rules without l4_ports.
  {
    std::vector<uint32_t> cuts{0};
    for (const ClassRule& r : rs)
      for (auto [lo, hi] : r.l4_ports) {
        cuts.push_back(lo);
        cuts.push_back(uint32_t(hi) + 1);
      }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<Bits> per(cuts.size(), Bits(W, 0));
    Bits unknown(W, 0);
    for (size_t ri = 0; ri < rs.size(); ++ri) {
      if (rs[ri].l4_ports.empty()) {
        for (Bits& s : per) setBit(s, ri);
        setBit(unknown, ri);
        continue;
      }
      for (auto [lo, hi] : rs[ri].l4_ports) {
        size_t i = size_t(std::lower_bound(cuts.begin(), cuts.end(), uint32_t(lo)) - cuts.begin());
        for (; i < cuts.size() && cuts[i] <= hi; ++i) setBit(per[i], ri);
      }
    }
    D.l4_.resize(65537);
    size_t k = 0;
    uint16_t id = 0;
    for (uint32_t p = 0; p < 65536; ++p) {
      if (k < cuts.size() && cuts[k] == p) id = uint16_t(D.L.intern(per[k++]));
      D.l4_[p] = id;
    }
    // Up to 65,536 port sets and this one: when all are distinct it has no
    // 16-bit id (it would alias port 0's); the bit vectors then look it up
    // by its own id (classifyOther).
    D.l4_unknown = D.L.intern(unknown);
    D.l4_[65536] = uint16_t(D.l4_unknown);
  }
  {  // addresses: both families' classes in one numbering, then "neither"
    addressClasses<uint32_t>(rs, 4, 32, W, D.A[0], D.v4_start_, D.v4_cls_);
    if (trieNodes(D.v4_start_) * 256 * sizeof(uint32_t) <= trie_limit) {
      buildTrie4(D.v4_start_, D.v4_cls_, kChild, D.a4_top_, D.a4_node_);
      D.v4_start_ = {}, D.v4_cls_ = {};
    }
    addressClasses<U128>(rs, 6, 128, W, D.A[1], D.v6_start_, D.v6_cls_);
    Bits none(W, 0);
    for (size_t ri = 0; ri < rs.size(); ++ri)
      if (rs[ri].prefixes.empty()) setBit(none, ri);
    D.v6_cls_.push_back(D.A[1].intern(none));  // the last: neither family
  }
  // The cross products: port x VLAN, x protocol, x L4 port, then x address
  // to the first rule of each combination; per family, only the rules that
  // can match it. wild[k]: the rules matching any value of the fields after
  // stage k (no protocols, ports, prefixes).
  Bits wild[3] = {Bits(W, 0), Bits(W, 0), Bits(W, 0)}, fam[2] = {Bits(W, 0), Bits(W, 0)};
  for (size_t ri = 0; ri < rs.size(); ++ri) {
    const ClassRule& r = rs[ri];
    const bool np = r.prefixes.empty(), nl = np && r.l4_ports.empty();
    if (np) setBit(wild[2], ri);
    if (nl) setBit(wild[1], ri);
    if (nl && r.protocols.empty()) setBit(wild[0], ri);
    for (int f = 0; f < 2; ++f) {
      bool any = np;
      for (const auto& [a, len] : r.prefixes) any |= (a.family == 4) == (f == 0);
      if (any) setBit(fam[f], ri);
    }
  }
  bool cross = D.l4_unknown <= 0xFFFF;
  for (int f = 0; f < 2 && cross; ++f) {
    Classes pv(W), pvr(W), pl(W);
    Data::Product& x = D.prod[f];
    cross = crossStage(D.P, D.V, &fam[f], wild[0], cell_limit, pv, x.pv) &&
            crossStage(pv, D.R, nullptr, wild[1], cell_limit, pvr, x.pvr) &&
            crossStage(pvr, D.L, nullptr, wild[2], cell_limit, pl, x.pl) && pl.size() * D.A[f].size() <= cell_limit;
    if (!cross) break;
    const Classes& A = D.A[f];
    x.fin.resize(pl.size() * A.size());
    std::vector<uint32_t> rules;  // pl's sets are short after the cuts: walk their rules
    for (size_t i = 0; i < pl.size(); ++i) {
      rules.clear();
      for (size_t w = 0; w < W; ++w)
        for (uint64_t v = pl.set(i)[w]; v; v &= v - 1) rules.push_back(uint32_t(w * 64 + size_t(__builtin_ctzll(v))));
      for (size_t y = 0; y < A.size(); ++y) {
        const uint64_t* a = A.set(y);
        uint16_t first = kNoClass;
        for (uint32_t r : rules)
          if (a[r / 64] >> (r % 64) & 1) {
            first = uint16_t(r);
            break;
          }
        x.fin[i * A.size() + y] = first;
      }
    }
  }
  for (int f = 0; f < 2; ++f) {
    Data::Product& x = D.prod[f];
    if (!cross) x = Data::Product{};
    auto rows = [](const std::vector<uint16_t>& ids, size_t len, std::vector<uint32_t>& out) {
      out.resize(ids.size());
      for (size_t i = 0; i < ids.size(); ++i) out[i] = uint32_t(ids[i] * len);
    };
    rows(x.pv, D.R.size(), x.pv_row);
    rows(x.pvr, D.L.size(), x.pvr_row);
    rows(x.pl, D.A[f].size(), x.pl_row);
    x.pv.clear(), x.pvr.clear(), x.pl.clear();
    for (auto* v : {&x.pv, &x.pvr, &x.pl, &x.fin}) v->shrink_to_fit();
  }
  for (uint16_t pe : D.port_) D.port_row_.push_back(uint32_t(pe * D.V.size()));
  port_row_ = D.port_row_.data();
  vlan_ = D.vlan_.data();
  proto_ = D.proto_.data();
  l4_ = D.l4_.data();
  if (!D.a4_top_.empty()) {
    a4_top_ = D.a4_top_.data();
    a4_node_ = D.a4_node_.data();
  }
  if (cross) {
    auto view = [](const Data::Product& x) {
      return Product{x.pv_row.data(), x.pvr_row.data(), x.pl_row.data(), x.fin.data()};
    };
    v4x_ = view(D.prod[0]);
    if (a4_top_) v4_ = v4x_;
    v6_ = view(D.prod[1]);
  }
  action_ = D.action_.data();
  listener_ = D.listener_.data();
  data_ = std::move(data);
}

size_t ClassTable::memoryBytes() const noexcept {
  if (!data_) return 0;
  const Data& D = *data_;
  size_t n = 0;
  for (const Classes* c : {&D.P, &D.V, &D.R, &D.L, &D.A[0], &D.A[1]}) n += c->flat.size() * 8;
  for (const auto* v : {&D.port_, &D.vlan_, &D.proto_, &D.l4_}) n += v->size() * 2;
  n += D.port_row_.size() * 4;
  for (const Data::Product& x : D.prod) {
    n += x.fin.size() * 2;
    for (const auto* v : {&x.pv_row, &x.pvr_row, &x.pl_row}) n += v->size() * 4;
  }
  n += (D.a4_top_.size() + D.a4_node_.size() + D.v6_cls_.size()) * 4 + D.v6_start_.size() * 16;
  n += (D.v4_start_.size() + D.v4_cls_.size()) * 4;
  n += D.action_.size() + D.listener_.size() + (listeners_ ? listeners_->size() : 0);
  return n;
}

ClassTable ClassTable::withListeners(std::vector<uint8_t> listeners) const {
  ClassTable t = *this;
  if (!data_) return t;
  listeners.resize(n_rules_, 0);
  t.listeners_ = std::make_shared<const std::vector<uint8_t>>(std::move(listeners));
  t.listener_ = t.listeners_->data();
  return t;
}

uint16_t ClassTable::classifyOther(uint16_t port, uint16_t vlan, const L4Tuple& t, bool ports) const noexcept {
  const Data& D = *data_;
  const bool v4 = t.src.family == 4;
  auto addr = [&](const IpAddr& a) -> uint32_t {
    if (a.family == 4 && a4_top_) return addr4(a.b.data());
    if (a.family == 4) {
      const uint32_t v = v4Of(a.b.data());
      return D.v4_cls_[size_t(std::upper_bound(D.v4_start_.begin(), D.v4_start_.end(), v) - D.v4_start_.begin()) - 1];
    }
    if (a.family != 6) return D.v6_cls_.back();
    const U128 v = v6Of(a.b.data());
    return D.v6_cls_[size_t(std::upper_bound(D.v6_start_.begin(), D.v6_start_.end(), v) - D.v6_start_.begin()) - 1];
  };
  const uint32_t pe = D.port_[port < 256 ? port : 256], ve = vlan_[vlan & 0xFFF], re = proto_[t.proto];
  const uint32_t ls = ports ? l4_[t.sport] : D.l4_unknown, ld = ports ? l4_[t.dport] : D.l4_unknown;
  const uint32_t as = addr(t.src), ad = addr(t.dst);
  if (const Product& x = v4 ? v4x_ : v6_; x.fin) {
    const uint32_t pvr = x.pvr[x.pv[port_row_[port < 256 ? port : 256] + ve] + re];
    const uint16_t *s = x.fin + x.pl[pvr + ls], *d = x.fin + x.pl[pvr + ld];
    return std::min(std::min(s[as], s[ad]), std::min(d[as], d[ad]));
  }
  const size_t W = D.P.W;
  const Classes& A = D.A[v4 ? 0 : 1];
  const uint64_t *a = D.P.set(pe), *b = D.V.set(ve), *c = D.R.set(re);
  const uint64_t *d = D.L.set(ls), *e = D.L.set(ld), *f = A.set(as), *g = A.set(ad);
  for (size_t w = 0; w < W; ++w) {
    uint64_t x = a[w] & b[w] & c[w] & (d[w] | e[w]) & (f[w] | g[w]);
    if (x) return uint16_t(w * 64 + size_t(__builtin_ctzll(x)));
  }
  return kNoClass;
}

}  // namespace gwlb
