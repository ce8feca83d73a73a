// Fuzz target 6: the HTTP probe's response reader. Any bytes are what an
// appliance's health endpoint answers: gwlb::probe::StatusReader (interim 1xx
// heads skipped, the verdict taken on the final status line), fed whole, byte
// by byte and in pieces split where the input's own bytes say (a probe sees
// the response in reads of any size). Invariants (docs/fuzzing.md):
//  - the result is 1, 0 or -1; 1 has a final status (200..599, or 101) and
//    consumed bytes within the input, ending at the byte after the code
//    (space, CR or LF); -1 has a reason; only -1 can be tooLarge();
//  - the verdict does not depend on how the bytes are split: every split
//    gives the same result, status, consumed count and interim count;
//  - the verdict is stable as bytes arrive: a prefix shorter than `consumed`
//    of a complete verdict is "need more", a longer one gives the same
//    verdict; a malformed input's prefixes are never complete;
//  - once 1 or -1, more bytes change nothing and are not taken;
//  - at most kStatusPrefix + kMaxInterimBytes + interim prefixes are taken
//    before a verdict: the reader never buffers a response.
// After a verdict, the rest goes to gwlb::probe::ResponseFramer (where the
// response ends, for a keep_alive probe's connection):
//  - its result is 1, 0 or -1; -1 has a reason; whole, byte by byte and in
//    the same splits it is the same;
//  - 1 (reusable) only after a blank line within kMaxHeadBytes, for a status
//    that is not 101; once 1 or -1 it stays so, and a byte more after 1
//    makes it -1 (bytes after the response).
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "probes/probe.h"
#include "tests/fuzz/fuzz_check.h"

using gwlb::probe::ResponseFramer;
using gwlb::probe::StatusReader;

namespace {

struct Res {
  int r = 0;
  int status = 0;
  size_t consumed = 0;
  unsigned interim = 0;
  bool too_large = false;
};

Res take(const StatusReader& s) {
  return {s.result(), s.status(), s.consumed(), s.interim(), s.tooLarge()};
}

bool same(const Res& a, const Res& b) {
  return a.r == b.r && a.status == b.status && a.consumed == b.consumed &&
         a.interim == b.interim && a.too_large == b.too_large;
}

Res check(const StatusReader& s, const char* d, size_t n) {
  Res x = take(s);
  FUZZ_CHECK(x.r == -1 || x.r == 0 || x.r == 1, "result %d", x.r);
  FUZZ_CHECK(x.consumed <= n, "consumed %zu of %zu bytes", x.consumed, n);
  if (x.r == 1) {
    FUZZ_CHECK((x.status >= 200 && x.status <= 599) || x.status == 101, "final status %d",
               x.status);
    FUZZ_CHECK(x.consumed >= StatusReader::kStatusPrefix, "consumed %zu", x.consumed);
    char after = d[x.consumed - 1];
    FUZZ_CHECK(after == ' ' || after == '\r' || after == '\n', "verdict before the code ended");
  }
  if (x.r == -1) FUZZ_CHECK(!s.error().empty(), "malformed without a reason");
  if (x.too_large) FUZZ_CHECK(x.r == -1, "too large but not malformed");
  if (x.r == 0) FUZZ_CHECK(x.consumed == n, "need more but %zu of %zu bytes left", n - x.consumed, n);
  return x;
}

Res feedSplit(const char* d, size_t n, const std::vector<size_t>& cuts) {
  StatusReader s;
  size_t at = 0;
  for (size_t c : cuts) {
    if (c <= at || c > n) continue;
    s.feed(d + at, c - at);
    at = c;
  }
  s.feed(d + at, n - at);
  return check(s, d, n);
}

// The framer over the bytes after the verdict, fed whole, byte by byte and
// split by `h`: the same answer every way.
void checkFramer(const char* d, size_t n, int status, bool line_ended, uint32_t h) {
  ResponseFramer whole(status, line_ended);
  const int r = whole.feed(d, n);
  FUZZ_CHECK(r == -1 || r == 0 || r == 1, "framer result %d", r);
  FUZZ_CHECK(r == whole.result(), "feed and result() disagree");
  if (r == -1) FUZZ_CHECK(!whole.why().empty(), "not reusable without a reason");
  if (r == 1) {
    FUZZ_CHECK(status != 101, "101 taken as reusable");
    const std::string_view v(d, n);
    FUZZ_CHECK(v.find("\n\r\n") != std::string_view::npos || v.find("\n\n") != std::string_view::npos ||
                   (line_ended && (v.rfind("\r\n", 0) == 0 || v.rfind("\n", 0) == 0)),
               "reusable without the head's blank line");
  }
  {
    ResponseFramer b(status, line_ended);
    for (size_t i = 0; i < n; ++i) b.feed(d + i, 1);
    FUZZ_CHECK(b.result() == r, "framer byte by byte %d, whole %d", b.result(), r);
  }
  {
    ResponseFramer sp(status, line_ended);
    size_t at = 0;
    for (int i = 0; i < 5 && n; ++i) {
      h = h * 1103515245u + 12345u;
      const size_t c = at + h % (n - at + 1);
      sp.feed(d + at, c - at);
      at = c;
    }
    sp.feed(d + at, n - at);
    FUZZ_CHECK(sp.result() == r, "framer split %d, whole %d", sp.result(), r);
  }
  if (r != 0) {
    whole.feed("x", 1);
    FUZZ_CHECK(whole.result() == -1, "a byte after the end: %d", whole.result());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* d = reinterpret_cast<const char*>(data);
  StatusReader whole;
  whole.feed(d, size);
  Res full = check(whole, d, size);

  // Byte by byte.
  {
    StatusReader s;
    for (size_t i = 0; i < size; ++i) s.feed(d + i, 1);
    FUZZ_CHECK(same(check(s, d, size), full), "byte-by-byte feed disagrees with one feed");
  }
  // Splits chosen by the input's own bytes.
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  for (int round = 0; round < 4 && size; ++round) {
    std::vector<size_t> cuts;
    for (int i = 0; i < 6; ++i) {
      h = h * 1103515245u + 12345u;
      cuts.push_back(h % (size + 1));
    }
    std::sort(cuts.begin(), cuts.end());
    FUZZ_CHECK(same(feedSplit(d, size, cuts), full), "split feed disagrees with one feed");
  }
  // Prefixes.
  std::vector<size_t> lens;
  for (size_t n = 0; n < 24 && n < size; ++n) lens.push_back(n);
  lens.push_back(size / 2);
  if (full.r == 1 && full.consumed > 0) lens.push_back(full.consumed - 1);
  for (size_t n : lens) {
    StatusReader p;
    p.feed(d, n);
    Res x = check(p, d, n);
    if (full.r == 1) {
      if (n < full.consumed) FUZZ_CHECK(x.r == 0, "prefix %zu of a %zu-byte verdict is %d", n,
                                        full.consumed, x.r);
      else FUZZ_CHECK(same(x, full), "prefix %zu gives another verdict", n);
    } else {
      FUZZ_CHECK(x.r != 1, "prefix %zu complete but the whole is not", n);
    }
  }
  // More bytes after a verdict change nothing.
  if (full.r != 0) {
    static const char kMore[] = "HTTP/1.1 200 OK\r\n\r\n";
    whole.feed(kMore, sizeof kMore - 1);
    FUZZ_CHECK(same(take(whole), full), "bytes after the verdict changed it");
  }
  if (full.r == 1)
    checkFramer(d + full.consumed, size - full.consumed, full.status, d[full.consumed - 1] == '\n', h);
  // Bounded: never more than the interim budget plus the status prefixes.
  FUZZ_CHECK(full.consumed <= StatusReader::kMaxInterimBytes + 1 +
                                  StatusReader::kStatusPrefix * (size_t(full.interim) + 1),
             "consumed %zu", full.consumed);
  return 0;
}
