// Fuzz target 14: the packet capture request a DPDK secondary process
// (dpdk-dumpcap, dpdk-pdump) sends gwlbd (dataplane/capture_request.cc).
// Input: the message's parameter bytes, any length.
//  - Never reads past the input (ASan) and never throws.
//  - A refusal carries a negative errno and a reason; an acceptance has
//    err == 0, the exact record length, version 1 or 2, operation 1 or 2,
//    flags 1..3, a device name of 1..63 printable bytes, and for a start a
//    ring, a mempool and a snapshot length other than 0.
//  - An accepted request is what its bytes say: encoding the parsed fields
//    again gives the same fields back.
//  - The same bytes, read as the peer address EAL hands the action
//    (parseCapturePeer, issue 24 item 10): never read past the input; an
//    acceptance is a printable path under 108 bytes whose last component is
//    mp_socket_<pid>_<hex> with that pid (1..2^31-1); a refusal has a reason.
#include <cerrno>
#include <cstring>
#include <string>

#include "dataplane/capture_request.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gwlb::dp;

static void checkPeer(const uint8_t* data, size_t size) {
  CapturePeer p;
  std::string why;
  if (!parseCapturePeer(reinterpret_cast<const char*>(data), size, p, why)) {
    FUZZ_CHECK(!why.empty() && p.path.empty() && p.pid == 0, "a refused peer has a reason and no fields");
    return;
  }
  FUZZ_CHECK(why.empty(), "an accepted peer has no reason");
  FUZZ_CHECK(!p.path.empty() && p.path.size() < 108 && p.path.size() <= size, "peer path length %zu",
             p.path.size());
  FUZZ_CHECK(std::memcmp(p.path.data(), data, p.path.size()) == 0, "the path is the input's prefix");
  for (char c : p.path) FUZZ_CHECK(c >= 0x20 && c < 0x7f, "path byte 0x%02x", unsigned(uint8_t(c)));
  FUZZ_CHECK(p.pid > 0, "pid %d", p.pid);
  size_t slash = p.path.rfind('/');
  std::string name = slash == std::string::npos ? p.path : p.path.substr(slash + 1);
  FUZZ_CHECK(name.compare(0, 10, "mp_socket_") == 0, "name %s", name.c_str());
  FUZZ_CHECK(std::stoll(name.substr(10)) == p.pid, "pid as written");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  checkPeer(data, size);
  CaptureRequest r;
  int err = 1;
  std::string why;
  bool ok = parseCaptureRequest(data, size, r, err, why);
  if (!ok) {
    FUZZ_CHECK(err < 0 && !why.empty(), "a refusal has an errno and a reason (err %d)", err);
    return 0;
  }
  FUZZ_CHECK(err == 0 && why.empty(), "an acceptance has err 0 and no reason");
  FUZZ_CHECK(size == sizeof(CaptureWire), "accepted %zu bytes", size);
  FUZZ_CHECK(r.ver == 1 || r.ver == 2, "version %u", r.ver);
  FUZZ_CHECK(r.op == CaptureOp::kStart || r.op == CaptureOp::kStop, "operation");
  FUZZ_CHECK(r.flags >= 1 && r.flags <= 3, "flags %u", r.flags);
  FUZZ_CHECK(!r.device.empty() && r.device.size() < sizeof(CaptureWire::device), "device length %zu",
             r.device.size());
  for (char c : r.device) FUZZ_CHECK(c > ' ' && c < 0x7f, "device byte 0x%02x", unsigned(uint8_t(c)));
  if (r.op == CaptureOp::kStart)
    FUZZ_CHECK(r.ring && r.mp && r.snaplen, "a start names a ring, a mempool and a length");
  else
    FUZZ_CHECK(!r.ring && !r.mp && !r.prm && !r.snaplen, "a stop carries no pointers");

  CaptureWire w;
  std::memcpy(&w, data, sizeof w);
  FUZZ_CHECK(w.ver == r.ver && w.op == uint16_t(r.op) && w.flags == r.flags && w.queue == r.queue,
             "fields as sent");
  FUZZ_CHECK(std::string(w.device) == r.device, "device as sent");
  CaptureWire again{};
  again.ver = r.ver;
  again.op = uint16_t(r.op);
  again.flags = r.flags;
  std::memcpy(again.device, r.device.data(), r.device.size());
  again.queue = r.queue;
  again.ring = r.ring;
  again.mp = r.mp;
  again.prm = r.prm;
  again.snaplen = r.snaplen;
  CaptureRequest r2;
  int err2 = 1;
  std::string why2;
  FUZZ_CHECK(parseCaptureRequest(&again, sizeof again, r2, err2, why2), "re-encoded request refused: %s",
             why2.c_str());
  FUZZ_CHECK(r2.ver == r.ver && r2.op == r.op && r2.flags == r.flags && r2.device == r.device &&
                 r2.queue == r.queue && r2.ring == r.ring && r2.mp == r.mp && r2.prm == r.prm &&
                 r2.snaplen == r.snaplen,
             "re-encoded request differs");
  return 0;
}
