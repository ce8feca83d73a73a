// The lcores the EAL arguments give (-l, --lcores, -c, else the CPUs this
// process may run on), against dataplane.workers: gwlbd --check-config and
// `gwlbctl config check` (control/config/config.h). Pure: no EAL.
#include <sched.h>

#include <set>
#include <string>
#include <vector>

#include "control/config/config.h"

namespace gwlb::ctl {

namespace {

// Above any lcore or CPU id the EAL takes (RTE_MAX_LCORE, CPU_SETSIZE): a
// list with a larger one is left to the EAL to refuse, and the work per
// argument stays bounded.
constexpr unsigned kMaxId = 1024;

// Adds the ids of an EAL CPU/lcore list ("0-3,5", or with `parens` also
// "(0-1,4)" groups) to `ids`; false when it is not one.
bool addIdList(const std::string& text, std::set<unsigned>& ids) {
  if (text.empty()) return false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(pos, end - pos);
    size_t dash = item.find('-');
    auto num = [](const std::string& t, unsigned& v) {
      if (t.empty() || t.size() > 4 || t.find_first_not_of("0123456789") != std::string::npos)
        return false;
      v = unsigned(std::stoul(t));
      return v < kMaxId;
    };
    unsigned lo = 0, hi = 0;
    if (!num(item.substr(0, dash), lo)) return false;
    hi = lo;
    if (dash != std::string::npos && !num(item.substr(dash + 1), hi)) return false;
    if (hi < lo) return false;
    for (unsigned i = lo; i <= hi; ++i) ids.insert(i);
    pos = end + 1;
  }
  return true;
}

// --lcores: groups "LCORES[@CPUS]" separated by commas outside parentheses,
// LCORES being "N", "N-M" or "(list)".
bool addLcoresOption(const std::string& text, std::set<unsigned>& ids) {
  int depth = 0;
  std::string group;
  auto flush = [&] {
    std::string l = group.substr(0, group.find('@'));
    if (l.size() >= 2 && l.front() == '(' && l.back() == ')') l = l.substr(1, l.size() - 2);
    group.clear();
    return addIdList(l, ids);
  };
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth < 0) return false;
    if (c == ',' && depth == 0) {
      if (!flush()) return false;
    } else {
      group += c;
    }
  }
  return depth == 0 && flush();
}

}  // namespace

unsigned ealLcoreCount(const std::vector<std::string>& eal) {
  for (size_t i = 0; i < eal.size(); ++i) {
    const std::string& a = eal[i];
    auto value = [&](const std::string& opt, std::string& out) {
      if (a == opt) {
        if (i + 1 >= eal.size()) return false;
        out = eal[i + 1];
        return true;
      }
      if (opt.size() > 2 && a.rfind(opt + "=", 0) == 0) {
        out = a.substr(opt.size() + 1);
        return true;
      }
      if (opt.size() == 2 && a.size() > 2 && a[1] != '-' && a.rfind(opt, 0) == 0) {  // -l0-2
        out = a.substr(2);
        return true;
      }
      return false;
    };
    std::string v;
    std::set<unsigned> ids;
    if (value("-l", v)) return addIdList(v, ids) ? unsigned(ids.size()) : 0;
    if (value("--lcores", v)) return addLcoresOption(v, ids) ? unsigned(ids.size()) : 0;
    if (value("-c", v)) {
      if (v.rfind("0x", 0) == 0 || v.rfind("0X", 0) == 0) v = v.substr(2);
      if (v.empty() || v.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return 0;
      unsigned n = 0;
      for (char c : v) n += unsigned(__builtin_popcount(unsigned(std::stoul(std::string(1, c), nullptr, 16))));
      return n;
    }
  }
  // No core option: the EAL takes one lcore per CPU this process may run on.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return unsigned(CPU_COUNT(&set));
}

std::string checkLcores(const Config& c, const std::vector<std::string>& eal) {
  unsigned have = ealLcoreCount(eal), need = c.dataplane.workers + 1;
  if (have == 0 || have >= need) return "";
  bool option = false;
  for (const std::string& a : eal)
    option = option || a.rfind("-l", 0) == 0 || a.rfind("--lcores", 0) == 0 || a.rfind("-c", 0) == 0;
  return std::to_string(c.dataplane.workers) + " worker(s) need " + std::to_string(need) +
         " lcores (the main lcore and one per worker); the EAL arguments give " +
         std::to_string(have) +
         (option ? "" : " (no -l or --lcores: one per CPU this process may run on)") +
         ": add cores to -l or --lcores in `eal`, or lower dataplane.workers";
}

}  // namespace gwlb::ctl
