// `gwlbctl probe`: one health probe run now from the gwlbctl process itself
// (probes/probe.h on its own io_context), either from command-line options or
// from an appliance's configured check (gwlbd's `health` method). The
// argument checks reuse probes/probe_cli.h, as gwlb-probe does.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/json.h"
#include "probes/probe.h"

namespace gwlb::cli {

// Probe --timeout: milliseconds ("1500") or with a unit ("200ms", "2s", "1.5s"),
// 1 ms..600 s. Throws UsageError.
uint64_t parseProbeTimeoutMs(const std::string& text);

// probe_cli arguments for a `health` result's `check` on `address`
// (--protocol, --address, --port, --path, --domain, --timeout, --codes and,
// when gwlbd reports them, --source, --verify, --ca-file).
std::vector<std::string> probeArgsFromCheck(const Json& check, const std::string& address);

// The probe an invocation asks for. `health_result` is gwlbd's `health`
// result for ADDRESS (nullptr without ADDRESS); options given on the command
// line override it. Throws UsageError.
probe::ProbeSpec buildProbeSpec(const Invocation& inv, const Json* health_result);

// "ok: HTTP 200 in 3.2 ms" / "failed: connect_refused after 0.1 ms: connection refused".
std::string renderProbeResult(const probe::ProbeResult& r);
// "tcp 127.0.0.1:80" / "http 192.0.2.10:80 GET /health, Host x, codes 200-399", timeout.
std::string describeProbe(const probe::ProbeSpec& spec);

// Runs `gwlbctl probe`: 0 probe ok, 1 probe failed or ADDRESS unknown, 2 error.
// UsageError escapes to the caller.
int runProbeCommand(const Invocation& inv, FILE* out, FILE* err);

}  // namespace gwlb::cli
