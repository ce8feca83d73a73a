// Texts of config errors: quoting user values, ranges, out-of-range messages.
#include <algorithm>
#include <cstdio>

#include "control/config/config_schema.h"

namespace gwlb::ctl::schema {

const char* EnumDesc::nameOf(uint64_t v) const {
  for (const EnumName& n : names)
    if (n.value == v) return n.name.data();
  return "?";
}

std::optional<uint64_t> EnumDesc::parse(std::string_view s) const {
  for (const EnumName& n : names)
    if (n.name == s) return n.value;
  return std::nullopt;
}

const std::string* Report::written(const std::string& path) const {
  if (!written_) return nullptr;
  auto it = written_->find(path);
  return it == written_->end() ? nullptr : &it->second;
}

std::string numStr(uint64_t v, bool hex) {
  if (!hex) return std::to_string(v);
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string rangeText(const Range& r) { return numStr(r.lo, r.hex) + ".." + numStr(r.hi, r.hex); }

std::string millisRangeText(const Range& r) {
  return std::to_string(r.lo) + " ms to " + std::to_string(r.hi / 1000) + " s";
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if there is none
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t utf8Len(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

bool validUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8Len(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

// Quotes a user-supplied value for a message, shortening very long ones. The
// result is always valid UTF-8: control characters and bytes that are not
// UTF-8 are escaped, and a character is never cut in half.
std::string quote(std::string_view s) {
  constexpr size_t kMax = 64;
  std::string out = "'";
  size_t i = 0;
  while (i < s.size() && i < kMax) {
    const char c = s[i];
    const size_t n = utf8Len(s, i);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (n == 1 && static_cast<unsigned char>(c) < 0x20) out += '?';
    else if (n == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
      out += hex;
    } else {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  if (i < s.size()) out += "...";
  out += "'";
  return out;
}

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string tooMany(size_t n, size_t max, std::string_view items, bool needs_one) {
  return "has " + std::to_string(n) + " " + std::string(items) + "; allowed " +
         (needs_one ? "1.." : "at most ") + std::to_string(max);
}

std::string uintOutOfRange(const std::string* written, uint64_t v, const Range& r) {
  return (written ? quote(*written) : quote(numStr(v, r.hex))) + " is out of range; allowed " +
         rangeText(r);
}

std::string secondsOutOfRange(const std::string* written, uint64_t v, const Range& r) {
  std::string q = written ? quote(*written) : quote(std::to_string(v));
  // A value written with a unit also says how many seconds that is.
  if (written && !written->empty() && std::string_view("smh").find(written->back()) != std::string_view::npos)
    q += " (" + std::to_string(v) + " s)";
  return q + " is out of range; allowed " + rangeText(r) + " seconds";
}

std::string millisOutOfRange(const std::string* written, uint64_t v, const Range& r) {
  return (written ? quote(*written) : std::to_string(v) + " ms") + " is out of range; allowed " +
         millisRangeText(r);
}

}  // namespace gwlb::ctl::schema
