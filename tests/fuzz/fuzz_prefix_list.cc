// Fuzz target 15: a traffic class's prefix file
// (traffic_classes[].match.prefixes_file; control/config/prefix_list.cc).
// Input: byte 0 = the most prefixes allowed (bits 0-1: 1024, 1, 3 or 16),
// then the file's bytes.
//  - Nothing throws; true exactly when no error was reported; at most
//    kMaxPrefixListErrors errors, each on a line of the text (1-based), with
//    a message of printable ASCII.
//  - At most `max` prefixes, one line number each, lines increasing; every
//    prefix is IPv4 or IPv6 with a length in range, no host bits and no
//    repeat, and is what its line says: the line's text without its comment
//    and blanks is the address (as IpAddr::parse reads it) then "/len", or
//    the bare address for a host.
//  - Its own text ("addr/len" per line) parses back to the same prefixes;
//    parsing is deterministic.
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "control/config/prefix_list.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb;
using namespace gwlb::ctl;

namespace {

struct Parsed {
  bool ok = false;
  std::vector<PrefixConfig> out;
  std::vector<uint32_t> lines;
  std::vector<PrefixListError> errors;
};

Parsed parse(std::string_view text, size_t max) {
  Parsed p;
  p.ok = parsePrefixList(text, max, p.out, p.lines, p.errors);
  return p;
}

// Line `n` (1-based) of `text`, without its comment and surrounding blanks.
std::string_view lineText(std::string_view text, size_t n) {
  size_t pos = 0;
  for (size_t i = 1; i < n; ++i) pos = text.find('\n', pos) + 1;
  std::string_view l = text.substr(pos, text.find('\n', pos) - pos);
  l = l.substr(0, l.find('#'));
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!l.empty() && blank(l.front())) l.remove_prefix(1);
  while (!l.empty() && blank(l.back())) l.remove_suffix(1);
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const size_t kMax[] = {1024, 1, 3, 16};
  const size_t max = kMax[data[0] & 3];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t line_count = 1;
  for (char c : text) line_count += c == '\n';

  Parsed p = parse(text, max);
  FUZZ_CHECK(p.ok == p.errors.empty(), "returned %d with %zu errors", p.ok, p.errors.size());
  FUZZ_CHECK(p.errors.size() <= kMaxPrefixListErrors, "%zu errors", p.errors.size());
  for (const PrefixListError& e : p.errors) {
    FUZZ_CHECK(e.line >= 1 && e.line <= line_count, "error on line %zu of %zu", e.line, line_count);
    FUZZ_CHECK(!e.message.empty(), "an error without a message");
    for (char c : e.message) FUZZ_CHECK(c >= 0x20 && c < 0x7F, "a message byte 0x%02x", unsigned(uint8_t(c)));
  }
  FUZZ_CHECK(p.out.size() <= max && p.lines.size() == p.out.size(), "%zu prefixes, %zu lines, max %zu",
             p.out.size(), p.lines.size(), max);
  std::set<std::tuple<int, std::array<uint8_t, 16>, int>> seen;
  std::string own;
  for (size_t i = 0; i < p.out.size(); ++i) {
    const PrefixConfig& x = p.out[i];
    FUZZ_CHECK(x.addr.isV4() || x.addr.isV6(), "prefix %zu has no family", i);
    const unsigned bits = x.addr.isV4() ? 32 : 128;
    FUZZ_CHECK(x.len <= bits, "prefix %zu has length %u", i, unsigned(x.len));
    for (unsigned bit = x.len; bit < bits; ++bit)
      FUZZ_CHECK(!(x.addr.b[bit / 8] & (0x80 >> (bit % 8))), "prefix %zu has host bit %u set", i, bit);
    FUZZ_CHECK(seen.emplace(x.addr.family, x.addr.b, x.len).second, "prefix %zu repeats", i);
    FUZZ_CHECK(i == 0 || p.lines[i] > p.lines[i - 1], "lines not increasing at %zu", i);
    FUZZ_CHECK(p.lines[i] >= 1 && p.lines[i] <= line_count, "prefix on line %u of %zu", p.lines[i], line_count);
    const std::string_view l = lineText(text, p.lines[i]);
    const size_t slash = l.find('/');
    auto a = IpAddr::parse(l.substr(0, slash));
    FUZZ_CHECK(a && *a == x.addr, "line %u: '%.*s' is not the address read", p.lines[i], int(l.size()), l.data());
    if (slash == std::string_view::npos)
      FUZZ_CHECK(x.len == bits, "line %u: a bare address read as /%u", p.lines[i], unsigned(x.len));
    else
      FUZZ_CHECK(std::stoul(std::string(l.substr(slash + 1))) == x.len, "line %u: another length", p.lines[i]);
    own += x.addr.str() + "/" + std::to_string(x.len) + "\n";
  }

  Parsed back = parse(own, max);
  FUZZ_CHECK(back.ok, "its own text is refused: %s", back.errors.empty() ? "" : back.errors[0].message.c_str());
  FUZZ_CHECK(back.out.size() == p.out.size(), "its own text gives %zu prefixes, not %zu", back.out.size(), p.out.size());
  for (size_t i = 0; i < p.out.size(); ++i)
    FUZZ_CHECK(back.out[i].addr == p.out[i].addr && back.out[i].len == p.out[i].len, "prefix %zu reads back otherwise", i);

  Parsed again = parse(text, max);
  FUZZ_CHECK(again.ok == p.ok && again.out.size() == p.out.size() && again.errors.size() == p.errors.size(),
             "parsing is not deterministic");
  for (size_t i = 0; i < p.errors.size(); ++i)
    FUZZ_CHECK(again.errors[i].line == p.errors[i].line && again.errors[i].message == p.errors[i].message,
               "error %zu differs the second time", i);
  return 0;
}
