// Fuzz target 4: the config loader and validator. Any bytes are the text of a
// gwlbd configuration file: gwlb::ctl::parseConfig. Its contract
// (control/config/config.h): never throws; false with every error, each with a
// message, or true with no error. Invariants (docs/fuzzing.md):
//  - no exception escapes (libFuzzer reports one as a crash; the replay driver
//    dies on std::terminate);
//  - the result is true exactly when there is no error, and every error has a
//    message;
//  - no error is the loader's catch-all ("internal error while reading the
//    configuration"): that would be an exception the loader did not expect
//    (a conversion it should have checked), i.e. a bug;
//  - an accepted config passes validateConfig again, has 1..64 server groups
//    each with servers, and parsing the same text again gives the same
//    outcome; formatErrors of the errors has one line per error;
//  - the dump of an accepted config (gwlbctl config dump) is accepted and
//    dumps the same again;
//  - gwlbd's probe-path rules (control/health/probe_path.h) on an accepted config:
//    every error has a path and a message, and a group whose probes have no
//    path is exactly a probed group with neither interface nor exception path.
#include <algorithm>
#include <string>
#include <vector>

#include "control/config/config.h"
#include "control/health/probe_path.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::ctl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Config c;
  std::vector<ConfigError> errors;
  bool ok = parseConfig(text, c, errors);
  FUZZ_CHECK(ok == errors.empty(), "parseConfig returned %d with %zu errors", ok, errors.size());
  for (const ConfigError& e : errors) {
    FUZZ_CHECK(!e.message.empty(), "error without a message at '%s'", e.path.c_str());
    // The catch-all's own error (path "", fixed prefix); a message that only
    // quotes a key or value containing these words is not it.
    FUZZ_CHECK(!(e.path.empty() &&
                 e.message.rfind("internal error while reading the configuration", 0) == 0),
               "the loader's catch-all fired: %s", e.message.c_str());
  }
  std::string all = formatErrors(errors);
  FUZZ_CHECK(size_t(std::count(all.begin(), all.end(), '\n')) >=
                 errors.size(),
             "formatErrors lost errors");

  Config again;
  std::vector<ConfigError> errors2;
  bool ok2 = parseConfig(text, again, errors2);
  FUZZ_CHECK(ok2 == ok && errors2.size() == errors.size(), "parseConfig is not deterministic");
  if (!ok) return 0;

  std::vector<ConfigError> v;
  FUZZ_CHECK(validateConfig(c, v), "accepted config fails validateConfig: %s",
             v.empty() ? "" : (v[0].path + ": " + v[0].message).c_str());
  FUZZ_CHECK(!c.server_groups.empty() && c.server_groups.size() <= 64,
             "accepted config with %zu server groups", c.server_groups.size());
  for (const ApplianceGroupConfig& g : c.server_groups)
    FUZZ_CHECK(!g.appliances.empty() && !g.name.empty(), "accepted group without servers or name");
  // An underlay address of some family; an IPv4 one wherever an IPv4 appliance is listed.
  FUZZ_CHECK(c.node.underlay_ip ? c.node.underlay_ip->isV4() : c.node.underlay_ipv6 && c.node.underlay_ipv6->isV6(),
             "accepted config without a usable underlay address");
  for (const ApplianceGroupConfig& g : c.server_groups)
    for (const ApplianceConfig& a : g.appliances)
      FUZZ_CHECK(!a.address.isV4() || c.node.underlay_ip, "accepted an IPv4 appliance without node.underlay_ip");

  for (const ConfigError& e : probePathErrors(c))
    FUZZ_CHECK(!e.path.empty() && !e.message.empty(), "probe path error without path or message");
  for (const ApplianceGroupConfig& g : c.server_groups) {
    ProbePath p = probePathOf(c, g.health_check);
    FUZZ_CHECK((p.kind == ProbePath::Kind::kUnbound) ==
                   (g.health_check.interface.empty() && !c.node.exception_path.enabled),
               "probe path kind disagrees with interface / exception path");
  }

  // gwlbctl config dump: the accepted config written out loads again, to the
  // same config (its dump is the same text).
  const std::string dumped = dumpConfig(c, DumpOptions{.secrets = true});
  Config back;
  std::vector<ConfigError> errors3;
  FUZZ_CHECK(parseConfig(dumped, back, errors3), "the dump of an accepted config is refused: %s\n%s",
             errors3.empty() ? "" : (errors3[0].path + ": " + errors3[0].message).c_str(), dumped.c_str());
  FUZZ_CHECK(dumpConfig(back, DumpOptions{.secrets = true}) == dumped,
             "the dump loaded again dumps differently:\n%s", dumped.c_str());
  return 0;
}
