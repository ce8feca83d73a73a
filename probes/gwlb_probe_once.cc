// gwlb-probe: runs one health probe and prints the result as one JSON line.
// Exit status 0 = probe ok, 1 = probe failed, 2 = bad usage.
#include <cstdio>
#include <string>
#include <vector>

#include "probes/probe.h"
#include "probes/probe_cli.h"
#include "version.h"

int main(int argc, char** argv) {
  using namespace gwlb::probe;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("gwlb-probe %s\n", gwlb::versionText());
    return 0;
  }
  ProbeSpec spec;
  bool help = false;
  std::string err;
  if (!parseProbeArgs(args, spec, help, err)) {
    std::fprintf(stderr, "gwlb-probe: %s\n%s", err.c_str(), kProbeUsage);
    return 2;
  }
  if (help) {
    std::fputs(kProbeUsage, stdout);
    return 0;
  }
  boost::asio::io_context io;
  ProbeResult result;
  startProbe(io, spec, [&](const ProbeResult& r) { result = r; });
  io.run();
  std::printf("%s\n", resultJson(spec, result).c_str());
  return result.ok ? 0 : 1;
}
