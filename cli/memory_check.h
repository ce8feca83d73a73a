// The EAL memory check of `gwlbctl config check`: gwlbd's own. The memory a
// config needs comes from DPDK's object sizes and the dataplane's layouts
// (control/daemon/memory_plan.h), which gwlbctl does not link (it has no
// DPDK), so it runs the one check there is: `gwlbd --check-config FILE`, the
// gwlbd installed beside gwlbctl, else the first on PATH. Whatever that
// refuses beyond gwlbctl's own checks (the EAL memory, the hugepages, gwlbd's
// kept flow hash key) becomes an error of `config check`.
#pragma once

#include <string>
#include <vector>

#include "control/config/config.h"

namespace gwlb::cli {

struct GwlbdCheck {
  bool ran = false;      // false: no gwlbd found (`why` says so)
  std::string gwlbd;     // the program that ran
  std::string why;       // when !ran
  std::vector<ctl::ConfigError> errors;  // what it refused, one per line ("" path: the file's)
};

// Finds gwlbd: `self_dir`/gwlbd (gwlbctl's own directory), else the first
// executable gwlbd in `path` (PATH's value). "" when none.
std::string findGwlbd(const std::string& self_dir, const char* path);

// Runs `gwlbd --check-config FILE` and turns its refusal (exit 2, messages on
// standard error) into errors; warnings it prints are gwlbctl's own checks'
// and left out. Blocks until gwlbd exits. Never throws but bad_alloc.
GwlbdCheck runGwlbdCheck(const std::string& gwlbd, const std::string& file);

}  // namespace gwlb::cli
