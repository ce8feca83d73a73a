// The one-probe command line shared by gwlb-probe (and later `gwlbctl probe`):
// argument parsing into a ProbeSpec and the one-line JSON result. Pure code.
#pragma once

#include <string>
#include <vector>

#include "probes/probe.h"

namespace gwlb::probe {

inline constexpr const char* kProbeUsage =
    "usage: gwlb-probe --protocol tcp|http|https --address ADDR [--port N]\n"
    "                  [--path /P] [--domain NAME] [--timeout MS] [--codes LIST]\n"
    "                  [--source ADDR] [--interface NAME] [--verify] [--ca-file FILE]\n"
    "       gwlb-probe --version\n"
    "  Runs one health probe and prints its result as one JSON line.\n"
    "  --port     default 80 (tcp, http) or 443 (https)\n"
    "  --timeout  whole probe in milliseconds, 1..600000 (default 5000)\n"
    "  --codes    comma list of http_2xx..http_5xx, codes and ranges\n"
    "             (default http_2xx,http_3xx), e.g. 200-299,302\n"
    "  --ca-file  https: verify the certificate against FILE (implies --verify)\n"
    "  --interface  leave by this interface only (SO_BINDTODEVICE), e.g. gwlbd's\n"
    "             exception-path tap of the appliance port\n"
    "  --version  print the version and exit\n"
    "  exit status: 0 probe ok, 1 probe failed, 2 bad usage\n";

// Parses arguments (without the program name); "--opt value" and "--opt=value".
// Returns false with `err` on bad usage; sets `help` for --help / -h. Never throws
// except std::bad_alloc.
bool parseProbeArgs(const std::vector<std::string>& args, ProbeSpec& spec, bool& help,
                    std::string& err);

// {"protocol":..,"address":..,"port":..,"ok":..,"reason":..,"status":..,
//  "elapsed_us":..,"detail":..} on one line, without a trailing newline.
std::string resultJson(const ProbeSpec& spec, const ProbeResult& r);

}  // namespace gwlb::probe
