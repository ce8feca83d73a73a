// Fuzz target 10: what BIRD's control socket sends gwlbd
// (control/fleet/bird_protocol.cc, the reply parser of control/fleet/bird_client.cc).
// Input: byte 0 = the chunk size the bytes arrive in (1..256), then what the
// socket delivers.
//  - Nothing throws or grows past the bounds: every reply has 1..4096 lines,
//    each of at most 16 KiB, codes 0..9999, the reply's code is its last
//    line's.
//  - Chunking changes nothing: the replies (codes and texts) and whether the
//    stream is refused are the same fed at once, byte by byte and in chunks.
//  - protocolState() finds a state only in a 1002 row naming the protocol,
//    and the state is one word (no space).
#include <string>
#include <string_view>
#include <vector>

#include "control/fleet/bird_protocol.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::ctl;

namespace {

struct Result {
  std::vector<bird::Reply> replies;
  bool failed = false;
};

Result parse(std::string_view bytes, size_t chunk) {
  Result r;
  bird::ReplyParser p;
  for (size_t i = 0; i < bytes.size() && !p.failed(); i += chunk) p.feed(bytes.substr(i, chunk));
  r.failed = p.failed();
  if (r.failed) FUZZ_CHECK(!p.error().empty(), "a failure has a reason");
  while (auto x = p.next()) r.replies.push_back(*x);
  return r;
}

bool same(const bird::Reply& a, const bird::Reply& b) {
  if (a.code != b.code || a.lines.size() != b.lines.size()) return false;
  for (size_t i = 0; i < a.lines.size(); ++i)
    if (a.lines[i].code != b.lines[i].code || a.lines[i].text != b.lines[i].text) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t chunk = size_t(data[0]) + 1;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  Result whole = parse(bytes, bytes.size() ? bytes.size() : 1);
  Result chunked = parse(bytes, chunk);
  Result bytewise = parse(bytes, 1);
  for (const Result* r : {&chunked, &bytewise}) {
    FUZZ_CHECK(r->failed == whole.failed, "refused at once %d, in chunks %d", whole.failed, r->failed);
    FUZZ_CHECK(r->replies.size() == whole.replies.size(), "%zu replies at once, %zu in chunks",
               whole.replies.size(), r->replies.size());
    for (size_t i = 0; i < whole.replies.size(); ++i)
      FUZZ_CHECK(same(r->replies[i], whole.replies[i]), "reply %zu differs with chunking", i);
  }
  for (const bird::Reply& r : whole.replies) {
    FUZZ_CHECK(!r.lines.empty() && r.lines.size() <= bird::kBirdMaxReplyLines, "%zu lines",
               r.lines.size());
    FUZZ_CHECK(r.code == r.lines.back().code, "reply code %d, last line %d", r.code,
               r.lines.back().code);
    for (const bird::ReplyLine& l : r.lines) {
      FUZZ_CHECK(l.code >= 0 && l.code <= 9999, "code %d", l.code);
      FUZZ_CHECK(l.text.size() <= bird::kBirdMaxLine, "line of %zu bytes", l.text.size());
    }
    (void)r.text();
    for (std::string_view name : {"gwlb_routes", "x"}) {
      auto st = bird::protocolState(r, name);
      if (!st) continue;
      FUZZ_CHECK(!st->empty() && st->find(' ') == std::string::npos, "state '%s'", st->c_str());
      bool row = false;
      for (const bird::ReplyLine& l : r.lines)
        row = row || (l.code == 1002 && l.text.find(name) != std::string::npos);
      FUZZ_CHECK(row, "a state without a 1002 row naming the protocol");
    }
  }
  return 0;
}
