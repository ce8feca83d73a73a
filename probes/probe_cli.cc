#include "probes/probe_cli.h"

#include <charconv>
#include <cstdio>

namespace gwlb::probe {

namespace {

bool parseUint(const std::string& s, uint64_t lo, uint64_t hi, uint64_t& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty() && v >= lo && v <= hi;
}

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    out.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void appendJsonString(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through
        }
    }
  }
  out += '"';
}

}  // namespace

bool parseProbeArgs(const std::vector<std::string>& args, ProbeSpec& spec, bool& help,
                    std::string& err) {
  help = false;
  bool have_protocol = false, have_address = false, have_port = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string opt = args[i], val;
    bool inline_val = false;
    if (opt == "-h" || opt == "--help") {
      help = true;
      return true;
    }
    if (opt.rfind("--", 0) != 0) {
      err = "unexpected argument '" + opt + "'";
      return false;
    }
    if (size_t eq = opt.find('='); eq != std::string::npos) {
      val = opt.substr(eq + 1);
      opt.resize(eq);
      inline_val = true;
    }
    if (opt == "--verify") {
      if (inline_val) {
        err = "--verify takes no value";
        return false;
      }
      spec.verify_tls = true;
      continue;
    }
    static const char* const kWithValue[] = {"--protocol", "--address", "--port",  "--path",
                                             "--domain",   "--timeout", "--codes", "--source",
                                             "--ca-file",  "--interface"};
    bool known = false;
    for (const char* k : kWithValue) known = known || opt == k;
    if (!known) {
      err = "unknown option '" + opt + "'";
      return false;
    }
    if (!inline_val) {
      if (i + 1 >= args.size()) {
        err = opt + " needs a value";
        return false;
      }
      val = args[++i];
    }
    uint64_t n = 0;
    if (opt == "--protocol") {
      auto p = parseProtocol(val);
      if (!p) {
        err = "--protocol must be tcp, http or https";
        return false;
      }
      spec.protocol = *p;
      have_protocol = true;
    } else if (opt == "--address" || opt == "--source") {
      auto a = IpAddr::parse(val);
      if (!a) {
        err = opt + " '" + val + "' is not an IPv4 or IPv6 address";
        return false;
      }
      if (opt == "--address") {
        spec.address = *a;
        have_address = true;
      } else {
        spec.source = *a;
      }
    } else if (opt == "--port") {
      if (!parseUint(val, 1, 65535, n)) {
        err = "--port must be 1..65535";
        return false;
      }
      spec.port = static_cast<uint16_t>(n);
      have_port = true;
    } else if (opt == "--path") {
      spec.path = val;
    } else if (opt == "--domain") {
      spec.domain = val;
    } else if (opt == "--timeout") {
      if (!parseUint(val, 1, 600000, n)) {
        err = "--timeout must be 1..600000 milliseconds";
        return false;
      }
      spec.timeout = std::chrono::milliseconds(n);
    } else if (opt == "--codes") {
      std::string cerr;
      if (!parseHttpCodes(splitList(val), spec.codes, cerr)) {
        err = "--codes: " + cerr;
        return false;
      }
    } else if (opt == "--ca-file") {
      spec.ca_file = val;
    } else if (opt == "--interface") {
      if (val.empty() || val.size() > 15 || val.find('/') != std::string::npos) {
        err = "--interface must be an interface name (1..15 bytes, no '/')";
        return false;
      }
      spec.device = val;
    }
  }
  if (!have_protocol || !have_address) {
    err = "--protocol and --address are required";
    return false;
  }
  if (!have_port) spec.port = spec.protocol == Protocol::kHttps ? 443 : 80;
  if (spec.protocol != Protocol::kTcp && (spec.path.empty() || spec.path[0] != '/')) {
    err = "--path must start with '/'";
    return false;
  }
  // A CA file is there to verify against: it implies --verify. Neither means
  // anything without TLS, so they are refused rather than ignored there.
  if (!spec.ca_file.empty()) spec.verify_tls = true;
  if (spec.verify_tls && spec.protocol != Protocol::kHttps) {
    err = std::string("--verify and --ca-file apply to --protocol https only (not ") +
          toString(spec.protocol) + ")";
    return false;
  }
  if (spec.source && spec.source->family != spec.address.family) {
    err = "--source and --address must be of the same family";
    return false;
  }
  return true;
}

std::string resultJson(const ProbeSpec& spec, const ProbeResult& r) {
  std::string s = "{\"protocol\":";
  appendJsonString(s, toString(spec.protocol));
  s += ",\"address\":";
  appendJsonString(s, spec.address.str());
  s += ",\"port\":" + std::to_string(spec.port);
  s += ",\"ok\":";
  s += r.ok ? "true" : "false";
  s += ",\"reason\":";
  appendJsonString(s, r.reason);
  s += ",\"status\":" + std::to_string(r.status);
  s += ",\"elapsed_us\":" + std::to_string(r.elapsed.count());
  s += ",\"detail\":";
  appendJsonString(s, r.detail);
  s += '}';
  return s;
}

}  // namespace gwlb::probe
