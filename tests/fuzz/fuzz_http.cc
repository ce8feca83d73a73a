// Fuzz target 6: the HTTP probe response parser. Any bytes are what an
// appliance's health endpoint answers: gwlb::probe::parseResponseHead (status
// line and headers), over the whole input and over prefixes of it (a probe
// sees the response in pieces), then the probe session's interim-response
// loop (1xx heads other than 101 are skipped). Invariants (docs/fuzzing.md):
//  - the result is 1, 0 or -1; 1 has a status in 100..599 and a head length
//    within the bytes, ending in LF; -1 has a reason;
//  - the verdict is stable as bytes arrive: prefixes shorter than a complete
//    head are "need more" (0), longer ones give the same status and length;
//    once malformed, more bytes never make it well-formed; when the whole is
//    incomplete, every prefix is incomplete too;
//  - both overloads agree; the interim loop always advances and stays within
//    the bytes.
#include <algorithm>
#include <string>
#include <vector>

#include "probes/probe.h"
#include "tests/fuzz/fuzz_check.h"

using gwlb::probe::parseResponseHead;

namespace {

struct Res {
  int r = 0;
  int status = 0;
  size_t head_len = 0;
  std::string err;
};

Res run(const char* d, size_t n) {
  Res x;
  x.r = parseResponseHead(d, n, x.status, x.err, x.head_len);
  FUZZ_CHECK(x.r == -1 || x.r == 0 || x.r == 1, "result %d", x.r);
  if (x.r == 1) {
    FUZZ_CHECK(x.status >= 100 && x.status <= 599, "status %d", x.status);
    FUZZ_CHECK(x.head_len > 0 && x.head_len <= n && d[x.head_len - 1] == '\n',
               "head_len %zu of %zu bytes", x.head_len, n);
  }
  if (x.r == -1) FUZZ_CHECK(!x.err.empty(), "malformed without a reason");
  return x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* d = reinterpret_cast<const char*>(data);
  Res full = run(d, size);
  int s2 = 0;
  std::string e2;
  FUZZ_CHECK(parseResponseHead(d, size, s2, e2) == full.r && (full.r != 1 || s2 == full.status),
             "the overloads disagree");

  // Prefix lengths: the first 24, a few around the ends and the head, and
  // some spread by the input's own bytes (bounded work per input).
  std::vector<size_t> lens;
  for (size_t n = 0; n < 24 && n < size; ++n) lens.push_back(n);
  for (size_t back : {1, 2, 3}) if (size >= back) lens.push_back(size - back);
  lens.push_back(size / 2);
  lens.push_back(size / 3);
  if (full.r == 1) {
    lens.push_back(full.head_len - 1);
    lens.push_back(full.head_len);
  }
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  for (int i = 0; i < 8 && size; ++i) {
    h = h * 1103515245u + 12345u;
    lens.push_back(h % size);
  }
  std::sort(lens.begin(), lens.end());
  lens.erase(std::unique(lens.begin(), lens.end()), lens.end());

  bool seen_malformed = false;
  for (size_t n : lens) {
    Res p = run(d, n);
    switch (full.r) {
      case 0:
        FUZZ_CHECK(p.r == 0, "prefix %zu is %d but the whole %zu bytes need more", n, p.r, size);
        break;
      case 1:
        if (n < full.head_len)
          FUZZ_CHECK(p.r == 0, "prefix %zu of a %zu-byte head is %d", n, full.head_len, p.r);
        else
          FUZZ_CHECK(p.r == 1 && p.status == full.status && p.head_len == full.head_len,
                     "prefix %zu: %d/%d/%zu, whole: 1/%d/%zu", n, p.r, p.status, p.head_len,
                     full.status, full.head_len);
        break;
      default:
        FUZZ_CHECK(p.r != 1, "prefix %zu complete but the whole is malformed", n);
        if (seen_malformed) FUZZ_CHECK(p.r == -1, "prefix %zu well-formed after a malformed one", n);
        seen_malformed = p.r == -1;
        break;
    }
  }
  if (full.r == -1) {
    std::string more(d, size);
    more += "\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
    FUZZ_CHECK(run(more.data(), more.size()).r == -1, "more bytes fixed a malformed head");
  }

  // The probe session: skip interim heads, then judge the final one.
  size_t start = 0;
  for (;;) {
    Res x = run(d + start, size - start);
    if (x.r != 1) break;
    if (x.status >= 100 && x.status < 200 && x.status != 101) {
      FUZZ_CHECK(x.head_len > 0 && start + x.head_len <= size, "interim loop does not advance");
      start += x.head_len;
      continue;
    }
    break;
  }
  return 0;
}
