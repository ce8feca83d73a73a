#include "cli/flow_sort.h"

#include <algorithm>
#include <array>
#include <optional>
#include <tuple>
#include <vector>

#include "cli/args.h"
#include "cli/render.h"
#include "common/net_types.h"

namespace gwlb::cli {

namespace {

constexpr std::array<std::pair<const char*, FlowSort::Field>, 6> kFields = {{
    {"age", FlowSort::Field::kAge},
    {"idle", FlowSort::Field::kIdle},
    {"packets", FlowSort::Field::kPackets},
    {"src", FlowSort::Field::kSrc},
    {"dst", FlowSort::Field::kDst},
    {"appliance", FlowSort::Field::kAppliance},
}};

// A flow's sort key: a number, or an address (family, bytes) and a port.
struct Key {
  bool present = false;
  double number = 0;
  uint8_t family = 0;
  std::array<uint8_t, 16> addr{};
  double port = 0;
};

bool less(const Key& a, const Key& b) {
  return std::tie(a.number, a.family, a.addr, a.port) < std::tie(b.number, b.family, b.addr, b.port);
}

Key addressKey(const Json& f, const char* addr_field, const char* port_field) {
  Key k;
  if (!f.is_object() || !f.contains(addr_field) || !f[addr_field].is_string()) return k;
  auto a = IpAddr::parse(f[addr_field].get<std::string>());
  if (!a) return k;
  k.present = true;
  k.family = a->isV4() ? 4 : 6;
  k.addr = a->b;
  if (port_field) k.port = fieldNumber(f, port_field);
  return k;
}

Key numberKey(const Json& f, const char* name) {
  Key k;
  if (!f.is_object() || !f.contains(name)) return k;
  const Json& v = f[name];
  if (v.is_number()) {
    k.present = true;
    k.number = v.get<double>();
  } else if (v.is_array()) {  // a [orig, reply] pair: their sum
    k.present = true;
    for (const auto& x : v)
      if (x.is_number()) k.number += x.get<double>();
  }
  return k;
}

Key keyOf(const Json& f, FlowSort::Field field) {
  switch (field) {
    case FlowSort::Field::kAge: return numberKey(f, "age_s");
    case FlowSort::Field::kIdle: return numberKey(f, "idle_s");
    case FlowSort::Field::kPackets: return numberKey(f, "packets");
    case FlowSort::Field::kSrc: return addressKey(f, "src", "sport");
    case FlowSort::Field::kDst: return addressKey(f, "dst", "dport");
    case FlowSort::Field::kAppliance: return addressKey(f, "appliance", nullptr);
  }
  return {};
}

}  // namespace

FlowSort parseFlowSort(const std::string& text, bool reverse) {
  FlowSort s;
  std::string name = text;
  s.descending = reverse;
  if (!name.empty() && name[0] == '-') {
    s.descending = true;
    name.erase(0, 1);
  }
  for (const auto& [n, f] : kFields) {
    if (name == n) {
      s.field = f;
      s.name = n;
      return s;
    }
  }
  throw UsageError("--sort: '" + text +
                       "' is not a field to sort on (age, idle, packets, src, dst, appliance; "
                       "-FIELD or --reverse for descending)",
                   "flows");
}

void sortFlows(Json& flows, const FlowSort& s) {
  if (!flows.is_array()) return;
  std::vector<std::pair<Key, Json>> rows;
  rows.reserve(flows.size());
  for (auto& f : flows) {
    Key k = keyOf(f, s.field);
    rows.emplace_back(k, std::move(f));
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& x, const auto& y) {
    const Key &a = x.first, &b = y.first;
    if (a.present != b.present) return a.present;  // missing values last
    return s.descending ? less(b, a) : less(a, b);
  });
  Json out = Json::array();
  for (auto& r : rows) out.push_back(std::move(r.second));
  flows = std::move(out);
}

}  // namespace gwlb::cli
