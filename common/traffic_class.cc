#include "common/traffic_class.h"

#include <algorithm>
#include <map>

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

// Intervals cut by the prefixes of one family: starts (sorted, first 0) and,
// per interval, the rules whose prefixes of this family cover it, or that
// have no prefixes.
template <typename T>
void addressIntervals(const std::vector<ClassRule>& rules, int family, int bits, size_t words,
                      std::vector<T>& starts, std::vector<Bits>& sets) {
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
  std::vector<T> cuts{T(0)};
  const T max = family == 4 ? T(0xFFFFFFFFu) : ~T(0);
  for (const ClassRule& r : rules)
    for (const auto& [a, len] : r.prefixes) {
      if (a.family != family) continue;
      T lo, hi;
      range(a, len, lo, hi);
      cuts.push_back(lo);
      if (hi != max) cuts.push_back(hi + 1);
    }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  starts = cuts;
  sets.assign(cuts.size(), Bits(words, 0));
  for (size_t ri = 0; ri < rules.size(); ++ri) {
    const ClassRule& r = rules[ri];
    if (r.prefixes.empty()) {
      for (Bits& s : sets) setBit(s, ri);
      continue;
    }
    for (const auto& [a, len] : r.prefixes) {
      if (a.family != family) continue;
      T lo, hi;
      range(a, len, lo, hi);
      size_t i = size_t(std::lower_bound(cuts.begin(), cuts.end(), lo) - cuts.begin());
      for (; i < cuts.size() && cuts[i] <= hi; ++i) setBit(sets[i], ri);
    }
  }
}
}  // namespace

struct ClassTable::Data {
  std::vector<uint64_t> sets_;
  std::vector<uint16_t> port_, vlan_, proto_, l4_;
  uint16_t none_ = 0, l4_none_ = 0;
  std::vector<uint32_t> v4_start_;
  std::vector<uint16_t> v4_set_;
  std::vector<U128> v6_start_;
  std::vector<uint16_t> v6_set_;
  std::vector<uint8_t> action_, listener_;
};

ClassTable::ClassTable(const std::vector<ClassRule>& rules) {
  if (rules.empty()) return;
  auto data = std::make_shared<Data>();
  Data& D = *data;
  n_rules_ = uint32_t(std::min(rules.size(), kMaxClasses));
  std::vector<ClassRule> rs(rules.begin(), rules.begin() + n_rules_);
  n_words_ = (n_rules_ + 63) / 64;
  const size_t W = n_words_;
  auto& sets_ = D.sets_;
  auto &port_ = D.port_, &vlan_ = D.vlan_, &proto_ = D.proto_, &l4_ = D.l4_;
  auto &none_ = D.none_, &l4_none_ = D.l4_none_;
  auto& v4_start_ = D.v4_start_;
  auto& v4_set_ = D.v4_set_;
  auto& v6_start_ = D.v6_start_;
  auto& v6_set_ = D.v6_set_;
  auto &action_ = D.action_, &listener_ = D.listener_;
  std::map<Bits, uint32_t> index;  // identical sets stored once
  auto intern = [&](const Bits& s) -> uint32_t {
    auto [it, fresh] = index.emplace(s, uint32_t(index.size()));
    if (fresh) sets_.insert(sets_.end(), s.begin(), s.end());
    return it->second;
  };
  none_ = uint16_t(intern(Bits(W, 0)));
  for (const ClassRule& r : rs) {
    action_.push_back(uint8_t(r.action));
    listener_.push_back(r.listener);
  }
  // A field given as a list of values over a small domain.
  auto table = [&](size_t domain, auto values, std::vector<uint16_t>& out) {
    std::vector<Bits> per(domain, Bits(W, 0));
    for (size_t ri = 0; ri < rs.size(); ++ri) {
      const auto& v = values(rs[ri]);
      if (v.empty()) {
        for (Bits& s : per) setBit(s, ri);
      } else {
        for (auto x : v)
          if (size_t(x) < domain) setBit(per[x], ri);
      }
    }
    out.resize(domain);
    for (size_t i = 0; i < domain; ++i) out[i] = uint16_t(intern(per[i]));
  };
  table(256, [](const ClassRule& r) -> const auto& { return r.ingress_ports; }, port_);
  table(4096, [](const ClassRule& r) -> const auto& { return r.vlans; }, vlan_);
  table(256, [](const ClassRule& r) -> const auto& { return r.protocols; }, proto_);
  // L4 ports: elementary intervals of the ranges, then a direct table.
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
    Bits unknown(W, 0);  // ports not known: rules without l4_ports
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
    l4_.resize(65536);
    size_t k = 0;
    uint16_t id = 0;
    for (uint32_t p = 0; p < 65536; ++p) {
      if (k < cuts.size() && cuts[k] == p) id = uint16_t(intern(per[k++]));
      l4_[p] = id;
    }
    l4_none_ = uint16_t(intern(unknown));
  }
  std::vector<Bits> per;
  addressIntervals<uint32_t>(rs, 4, 32, W, v4_start_, per);
  for (const Bits& s : per) v4_set_.push_back(uint16_t(intern(s)));
  addressIntervals<U128>(rs, 6, 128, W, v6_start_, per);
  for (const Bits& s : per) v6_set_.push_back(uint16_t(intern(s)));
  sets_.shrink_to_fit();
  this->sets_ = sets_.data();
  this->port_ = port_.data();
  this->vlan_ = vlan_.data();
  this->proto_ = proto_.data();
  this->l4_ = l4_.data();
  this->none_ = none_;
  this->l4_none_ = l4_none_;
  this->action_ = action_.data();
  this->listener_ = listener_.data();
  data_ = std::move(data);
}

uint32_t ClassTable::addrSet(const IpAddr& a) const noexcept {
  const auto& v4_start_ = data_->v4_start_;
  const auto& v4_set_ = data_->v4_set_;
  const auto& v6_start_ = data_->v6_start_;
  const auto& v6_set_ = data_->v6_set_;
  if (a.family == 4) {
    uint32_t v = v4Of(a.b.data());
    size_t i = size_t(std::upper_bound(v4_start_.begin(), v4_start_.end(), v) - v4_start_.begin());
    return v4_set_[i - 1];
  }
  if (a.family == 6) {
    U128 v = v6Of(a.b.data());
    size_t i = size_t(std::upper_bound(v6_start_.begin(), v6_start_.end(), v) - v6_start_.begin());
    return v6_set_[i - 1];
  }
  return none_;
}

}  // namespace gwlb
