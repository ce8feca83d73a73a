// Runs one parsed gwlbctl invocation: asks gwlbd (or, for `config check`,
// reads the file), prints the result, returns the exit status. Control
// client side only; blocking. UsageError escapes to the caller (exit 2);
// every other failure is printed to `err` and turned into an exit status.
#pragma once

#include <cstdio>
#include <string>

#include "cli/args.h"

namespace gwlb::cli {

int runInvocation(const Invocation& inv, FILE* out, FILE* err);

// `gwlbctl config check FILE`: 0 valid, 2 invalid or unreadable.
int configCheck(const std::string& file, bool json, FILE* out, FILE* err);

// Exit status for a control API error code (not_found -> 1, others -> 2).
int exitStatusFor(const std::string& error_code);

}  // namespace gwlb::cli
