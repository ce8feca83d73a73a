// gwlbctl: the command-line client of gwlbd's control API (docs/cli.md).
//   gwlbctl [--socket PATH] [--timeout SECONDS] [--json] COMMAND [ARGS...]
// Exit status: 0 ok, 1 not found (or `probe` failed), 2 error (usage,
// connection, daemon error).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"
#include "version.h"

int main(int argc, char** argv) {
  using namespace gwlb::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("gwlbctl %s\n", gwlb::versionText());
    return 0;
  }
  try {
    Invocation inv;
    try {
      inv = parseArgs(args, std::getenv("GWLBCTL_SOCKET"));
    } catch (const UsageError& e) {
      std::fprintf(stderr, "gwlbctl: %s\n", e.what());
      if (e.command().empty()) {
        std::fprintf(stderr, "Try 'gwlbctl help'.\n");
      } else {
        std::fprintf(stderr, "Try 'gwlbctl %s --help'.\n", e.command().c_str());
      }
      return kExitError;
    }
    try {
      return runInvocation(inv, stdout, stderr);
    } catch (const UsageError& e) {
      std::string cmd = !e.command().empty() ? e.command() : inv.command ? inv.command->name : "";
      std::fprintf(stderr, "gwlbctl: %s\n", e.what());
      if (cmd.empty()) {
        std::fprintf(stderr, "Try 'gwlbctl help'.\n");
      } else {
        std::fprintf(stderr, "Try 'gwlbctl %s --help'.\n", cmd.c_str());
      }
      return kExitError;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlbctl: %s\n", e.what());
    return kExitError;
  }
}
