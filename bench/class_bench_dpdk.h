// class_bench's DPDK classifiers (class_bench.cc says how each is used):
// the traffic classes as rte_acl rules and as an rte_lpm prefix table,
// built on the DPDK heap with its allocated bytes counted.
#pragma once

#include <fcntl.h>
#include <rte_acl.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_lpm.h>
#include <rte_malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "bench/class_bench_packets.h"
#include "common/traffic_class.h"

namespace gwlb::bench {

// ---- rte_acl ----------------------------------------------------------------

enum { kFProto, kFSrc, kFDst, kFSport, kFDport, kFPort, kFVlan, kFields };
RTE_ACL_RULE_DEF(AclRule, kFields);

inline rte_acl_config aclConfig() {
  rte_acl_config c{};
  c.num_categories = 1;
  c.num_fields = kFields;
  auto def = [&](int f, uint8_t type, uint8_t size, uint8_t input, uint32_t off) {
    c.defs[f] = rte_acl_field_def{type, size, uint8_t(f), input, off};
  };
  def(kFProto, RTE_ACL_FIELD_TYPE_BITMASK, 1, 0, offsetof(AclKey, proto));
  def(kFSrc, RTE_ACL_FIELD_TYPE_MASK, 4, 1, offsetof(AclKey, src));
  def(kFDst, RTE_ACL_FIELD_TYPE_MASK, 4, 2, offsetof(AclKey, dst));
  def(kFSport, RTE_ACL_FIELD_TYPE_RANGE, 2, 3, offsetof(AclKey, sport));
  def(kFDport, RTE_ACL_FIELD_TYPE_RANGE, 2, 3, offsetof(AclKey, dport));
  def(kFPort, RTE_ACL_FIELD_TYPE_RANGE, 2, 4, offsetof(AclKey, port));
  def(kFVlan, RTE_ACL_FIELD_TYPE_RANGE, 2, 4, offsetof(AclKey, vlan));
  return c;
}

// Sorted, merged runs of consecutive values; one full range for an empty set.
inline std::vector<std::pair<uint16_t, uint16_t>> runs(std::vector<uint16_t> v) {
  if (v.empty()) return {{0, 0xFFFF}};
  std::sort(v.begin(), v.end());
  std::vector<std::pair<uint16_t, uint16_t>> out;
  for (uint16_t x : v) {
    if (!out.empty() && (x == out.back().second || x == out.back().second + 1)) out.back().second = x;
    else out.emplace_back(x, x);
  }
  return out;
}

struct Expansion {
  std::vector<AclRule> rules;
  size_t classes_left_out = 0;  // IPv6-only prefixes
};

// The classes as ACL rules (see the file comment).
inline Expansion expand(const std::vector<ClassRule>& classes, const std::string& break_variant) {
  Expansion e;
  const int32_t n = int32_t(classes.size());
  for (int32_t i = 0; i < n; ++i) {
    const ClassRule& c = classes[size_t(i)];
    // Address variants: (field, value, mask length); the other address wildcard.
    struct Addr { int field; uint32_t v; uint8_t len; };
    std::vector<Addr> addrs;
    bool any_v4 = false;
    for (const auto& [a, len] : c.prefixes) {
      if (a.family != 4) continue;
      any_v4 = true;
      addrs.push_back({kFSrc, v4Of(a), len});
      if (break_variant != "dst-addr") addrs.push_back({kFDst, v4Of(a), len});
    }
    if (!c.prefixes.empty() && !any_v4) {
      ++e.classes_left_out;
      continue;
    }
    if (addrs.empty()) addrs.push_back({kFSrc, 0, 0});
    struct L4 { int field; uint16_t lo, hi; };
    std::vector<L4> l4s;
    for (const auto& [lo, hi] : c.l4_ports) {
      l4s.push_back({kFSport, lo, hi});
      if (break_variant != "dport") l4s.push_back({kFDport, lo, hi});
    }
    if (l4s.empty()) l4s.push_back({kFSport, 0, 0xFFFF});
    std::vector<int> protos(c.protocols.begin(), c.protocols.end());
    if (protos.empty()) protos.push_back(-1);
    for (const auto& pr : runs(c.ingress_ports))
      for (const auto& vr : runs(c.vlans))
        for (int proto : protos)
          for (const Addr& a : addrs)
            for (const L4& l : l4s) {
              AclRule r{};
              r.data.category_mask = 1;
              r.data.priority = n - i;
              r.data.userdata = uint32_t(i + 1);
              r.field[kFProto].value.u8 = proto < 0 ? 0 : uint8_t(proto);
              r.field[kFProto].mask_range.u8 = proto < 0 ? 0 : 0xFF;
              r.field[kFSrc].mask_range.u32 = 0;
              r.field[kFDst].mask_range.u32 = 0;
              r.field[a.field].value.u32 = a.v;
              r.field[a.field].mask_range.u32 = a.len;
              r.field[kFSport].mask_range.u16 = 0xFFFF;
              r.field[kFDport].mask_range.u16 = 0xFFFF;
              r.field[l.field].value.u16 = l.lo;
              r.field[l.field].mask_range.u16 = l.hi;
              r.field[kFPort].value.u16 = pr.first;
              r.field[kFPort].mask_range.u16 = pr.second;
              r.field[kFVlan].value.u16 = vr.first;
              r.field[kFVlan].mask_range.u16 = vr.second;
              e.rules.push_back(r);
            }
  }
  return e;
}

inline uint64_t rteAllocated() {
  uint64_t n = 0;
  for (unsigned s = 0; s < rte_socket_count(); ++s) {
    rte_malloc_socket_stats st{};
    if (rte_malloc_get_socket_stats(rte_socket_id_by_idx(s), &st) == 0) n += st.heap_allocsz_bytes;
  }
  return n;
}

inline unsigned g_names = 0;
inline std::string uniqueName(const char* prefix) { return prefix + std::to_string(g_names++); }

struct Acl {
  rte_acl_ctx* ctx = nullptr;
  size_t acl_rules = 0, left_out = 0;
  uint64_t rule_bytes = 0, runtime_bytes = 0;
  Acl() = default;
  Acl(const Acl&) = delete;
  Acl& operator=(const Acl&) = delete;
  ~Acl() { rte_acl_free(ctx); }
};

inline std::unique_ptr<Acl> buildAcl(const std::vector<ClassRule>& classes, const std::string& break_variant) {
  auto a = std::make_unique<Acl>();
  Expansion e = expand(classes, break_variant);
  a->acl_rules = e.rules.size();
  a->left_out = e.classes_left_out;
  const std::string name = uniqueName("cb_acl");
  const uint64_t m0 = rteAllocated();
  rte_acl_param p{};
  p.name = name.c_str();
  p.socket_id = int(rte_socket_id());
  p.rule_size = RTE_ACL_RULE_SZ(kFields);
  p.max_rule_num = uint32_t(std::max<size_t>(1, e.rules.size()));
  a->ctx = rte_acl_create(&p);
  if (!a->ctx) die("rte_acl_create: " + std::string(rte_strerror(rte_errno)));
  if (!e.rules.empty()) {
    int rc = rte_acl_add_rules(a->ctx, reinterpret_cast<const rte_acl_rule*>(e.rules.data()),
                               uint32_t(e.rules.size()));
    if (rc) die("rte_acl_add_rules: " + std::string(strerror(-rc)));
  }
  const uint64_t m1 = rteAllocated();
  rte_acl_config cfg = aclConfig();
  if (int rc = rte_acl_build(a->ctx, &cfg)) die("rte_acl_build: " + std::string(strerror(-rc)));
  const uint64_t m2 = rteAllocated();
  a->rule_bytes = m1 - m0;
  a->runtime_bytes = m2 - m1;
  return a;
}

// What rte_acl_dump says about a context (alg, num_tries): it prints to stdout.
inline std::string aclDumpField(const rte_acl_ctx* ctx, const char* field) {
  std::fflush(stdout);
  char path[] = "/tmp/class_bench_dumpXXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return "?";
  int saved = dup(1);
  dup2(fd, 1);
  rte_acl_dump(ctx);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string text(4096, '\0');
  ssize_t got = pread(fd, text.data(), text.size(), 0);
  close(fd);
  unlink(path);
  text.resize(got > 0 ? size_t(got) : 0);
  const std::string key = std::string(field) + "=";
  size_t at = text.find(key);
  if (at == std::string::npos) return "?";
  at += key.size();
  return text.substr(at, text.find_first_of("\n ", at) - at);
}

// rte_acl_classify_alg's numbers as names.
inline std::string algName(const std::string& n) {
  static const char* const kNames[] = {"default", "scalar", "sse", "avx2", "neon", "altivec", "avx512x16", "avx512x32"};
  const unsigned long i = std::strtoul(n.c_str(), nullptr, 10);
  return i < std::size(kNames) && n != "?" ? kNames[i] : n;
}

inline uint16_t aclAnswer(uint32_t r) { return r == 0 ? kNoClass : uint16_t(r - 1); }

// ---- rte_lpm ----------------------------------------------------------------

struct Lpm {
  rte_lpm* lpm = nullptr;
  uint64_t heap_bytes = 0, config_bytes = 0;
  Lpm() = default;
  Lpm(const Lpm&) = delete;
  Lpm& operator=(const Lpm&) = delete;
  ~Lpm() { rte_lpm_free(lpm); }
};
inline constexpr uint32_t kTbl8s = 256;

inline std::unique_ptr<Lpm> buildLpm(const std::vector<ClassRule>& classes) {
  auto l = std::make_unique<Lpm>();
  // Every IPv4 prefix with the first class whose prefix covers it.
  std::vector<std::pair<std::pair<uint32_t, uint8_t>, uint32_t>> entries;
  for (uint32_t i = 0; i < classes.size(); ++i)
    for (const auto& [a, len] : classes[i].prefixes)
      if (a.family == 4) entries.push_back({{v4Of(a) & (len ? ~uint32_t(0) << (32 - len) : 0), len}, i});
  auto covers = [](std::pair<uint32_t, uint8_t> outer, std::pair<uint32_t, uint8_t> inner) {
    if (outer.second > inner.second) return false;
    const uint32_t m = outer.second ? ~uint32_t(0) << (32 - outer.second) : 0;
    return (inner.first & m) == outer.first;
  };
  rte_lpm_config c{};
  c.max_rules = uint32_t(std::max<size_t>(1, entries.size()));
  c.number_tbl8s = kTbl8s;
  const std::string name = uniqueName("cb_lpm");
  const uint64_t m0 = rteAllocated();
  l->lpm = rte_lpm_create(name.c_str(), int(rte_socket_id()), &c);
  if (!l->lpm) die("rte_lpm_create: " + std::string(rte_strerror(rte_errno)));
  for (const auto& [p, i] : entries) {
    uint32_t first = i;
    for (const auto& [q, j] : entries)
      if (j < first && covers(q, p)) first = j;
    if (int rc = rte_lpm_add(l->lpm, p.first, p.second, first))
      die("rte_lpm_add: " + std::string(strerror(-rc)));
  }
  l->heap_bytes = rteAllocated() - m0;
  l->config_bytes = uint64_t(RTE_LPM_TBL24_NUM_ENTRIES) * sizeof(rte_lpm_tbl_entry) +
                    uint64_t(kTbl8s) * RTE_LPM_TBL8_GROUP_NUM_ENTRIES * sizeof(rte_lpm_tbl_entry) +
                    uint64_t(c.max_rules) * 8;  // rte_lpm_rule: ip, next hop
  return l;
}

inline uint16_t lpmClassify(const rte_lpm* lpm, const Packet& p) {
  uint32_t a = kNoClass, b = kNoClass;
  if (rte_lpm_lookup(const_cast<rte_lpm*>(lpm), v4Of(p.t.src), &a) != 0) a = kNoClass;
  if (rte_lpm_lookup(const_cast<rte_lpm*>(lpm), v4Of(p.t.dst), &b) != 0) b = kNoClass;
  return uint16_t(std::min(a, b));
}

}  // namespace gwlb::bench
