// The prefix-list parser (prefix_list.h): one pass over the text, no
// allocation per line but the prefix itself.
#include "control/config/prefix_list.h"

#include <cstring>
#include <unordered_map>

namespace gwlb::ctl {

namespace {

// The text of a line as an error quotes it: printable ASCII, at most 64
// bytes (a line of a file may hold anything).
std::string shown(std::string_view t) {
  std::string out = "'";
  for (size_t i = 0; i < t.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += char(c);
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (t.size() > 64) out += "...";
  return out + "'";
}

struct PrefixHash {
  size_t operator()(const PrefixConfig& p) const noexcept {
    uint64_t h = 1469598103934665603ull ^ p.len ^ uint64_t(p.addr.family) << 8;
    for (uint8_t b : p.addr.b) h = (h ^ b) * 1099511628211ull;
    return size_t(h);
  }
};
struct PrefixEq {
  bool operator()(const PrefixConfig& a, const PrefixConfig& b) const noexcept {
    return a.len == b.len && a.addr == b.addr;
  }
};

// One prefix's text into `p`; "" or the error after the quoted text.
std::string readPrefix(std::string_view t, PrefixConfig& p) {
  const size_t slash = t.find('/');
  auto a = IpAddr::parse(t.substr(0, slash));
  if (!a) return " is not a prefix; expected a CIDR like 10.9.0.0/16 or 2001:db8::/32, or one address";
  const unsigned max = a->isV4() ? 32 : 128;
  unsigned len = max;
  if (slash != std::string_view::npos) {
    std::string_view l = t.substr(slash + 1);
    bool digits = !l.empty() && l.size() <= 3;
    len = 0;
    for (char c : l) {
      if (c < '0' || c > '9') digits = false;
      else len = len * 10 + unsigned(c - '0');
    }
    if (!digits || len > max)
      return " has a bad prefix length; allowed 0.." + std::to_string(max) + (a->isV4() ? " for IPv4" : " for IPv6");
  }
  p.addr = *a;
  p.len = uint8_t(len);
  PrefixConfig net = p;
  for (unsigned bit = len; bit < max; ++bit) net.addr.b[bit / 8] &= uint8_t(~(0x80 >> (bit % 8)));
  if (!(net.addr == p.addr))
    return " has host bits set; the network is " + net.addr.str() + "/" + std::to_string(len) +
           " (or write /" + std::to_string(max) + " for one address)";
  return {};
}

}  // namespace

bool parsePrefixList(std::string_view text, size_t max, std::vector<PrefixConfig>& out,
                     std::vector<uint32_t>& lines, std::vector<PrefixListError>& errors) {
  const size_t errors_before = errors.size();
  const size_t out_before = out.size();
  std::unordered_map<PrefixConfig, uint32_t, PrefixHash, PrefixEq> seen;
  auto fail = [&](size_t line, std::string msg) {
    errors.push_back({line, std::move(msg)});
    return errors.size() - errors_before < kMaxPrefixListErrors;
  };
  size_t line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line;
    const char* nl = static_cast<const char*>(std::memchr(text.data() + pos, '\n', text.size() - pos));
    const size_t end = nl ? size_t(nl - text.data()) : text.size();
    std::string_view l = text.substr(pos, end - pos);
    pos = end + 1;
    if (const void* hash = std::memchr(l.data(), '#', l.size()))
      l = l.substr(0, size_t(static_cast<const char*>(hash) - l.data()));
    auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!l.empty() && blank(l.front())) l.remove_prefix(1);
    while (!l.empty() && blank(l.back())) l.remove_suffix(1);
    if (l.empty()) continue;
    for (char c : l)
      if (blank(c)) {
        if (!fail(line, shown(l) + " is not one prefix; write one prefix per line")) return false;
        l = {};
        break;
      }
    if (l.empty()) continue;
    PrefixConfig p;
    if (std::string err = readPrefix(l, p); !err.empty()) {
      if (!fail(line, shown(l) + err)) return false;
      continue;
    }
    auto [it, fresh] = seen.emplace(p, uint32_t(line));
    if (!fresh) {
      if (!fail(line, shown(l) + " repeats line " + std::to_string(it->second))) return false;
      continue;
    }
    if (out.size() - out_before >= max) {
      fail(line, "more than " + std::to_string(max) + " prefixes; a class matches at most " +
                     std::to_string(kMaxClassPrefixes) + ", its prefixes and its prefixes_file's together");
      return false;
    }
    out.push_back(p);
    lines.push_back(uint32_t(line));
  }
  return errors.size() == errors_before;
}

}  // namespace gwlb::ctl
