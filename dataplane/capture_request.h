// The request a packet capture tool (dpdk-dumpcap, dpdk-pdump) sends to a
// running DPDK primary process to start or stop copying a port's packets:
// DPDK 22.11's multi-process message "mp_pdump", whose parameter is a fixed
// 112-byte record. Parsed here without DPDK (the fuzz target fuzz_capture
// feeds it arbitrary bytes); the capture server (dataplane/capture.h) checks
// the pointers it carries against DPDK's memory and acts on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gwlb::dp {

// The record's fields, as the client lays them out (x86-64 / aarch64 ABI).
struct CaptureWire {
  uint16_t ver;       // 1: plain copies (dpdk-pdump), 2: pcapng blocks (dpdk-dumpcap)
  uint16_t op;        // 1: stop, 2: start
  uint32_t flags;     // 1: RX, 2: TX (3: both); anything else is refused
  char device[64];    // the port's device name, NUL-terminated (RTE_DEV_NAME_MAX_LEN)
  uint16_t queue;     // a queue, or 0xffff for every queue
  uint64_t ring;      // the client's ring (start only)
  uint64_t mp;        // the client's mempool (start only)
  uint64_t prm;       // the client's BPF program, or 0 (start only)
  uint32_t snaplen;   // bytes kept per packet; 0 means all
};
static_assert(sizeof(CaptureWire) == 112, "the pdump request is 112 bytes on the wire");

// The reply: the request's version and operation, then 0 or -errno.
struct CaptureReplyWire {
  uint16_t ver;
  uint16_t res_op;
  int32_t err_value;
};
static_assert(sizeof(CaptureReplyWire) == 8, "the pdump reply is 8 bytes");

enum class CaptureOp : uint16_t { kStop = 1, kStart = 2 };
inline constexpr uint16_t kCaptureAllQueues = 0xffff;
inline constexpr uint32_t kCaptureRx = 1, kCaptureTx = 2;

struct CaptureRequest {
  uint16_t ver = 0;
  CaptureOp op = CaptureOp::kStop;
  uint32_t flags = 0;
  std::string device;
  uint16_t queue = 0;
  uintptr_t ring = 0, mp = 0, prm = 0;
  uint32_t snaplen = 0;  // never 0 after parsing: 0 on the wire becomes UINT32_MAX
};

// Parses one request. On a bad one returns false with `err` a negative errno
// (what the client is told) and `why` a line for the log; never reads past
// `len`.
bool parseCaptureRequest(const void* param, size_t len, CaptureRequest& out, int& err,
                         std::string& why);

// The process a request came from. EAL hands the action the address of the
// sender's multi-process socket, which a secondary process binds at
// "<runtime dir>/mp_socket_<pid>_<TSC in hex>" for as long as it lives: the
// capture server asks that socket (and, failing that, the pid) whether the
// tool is still there.
struct CapturePeer {
  std::string path;  // the socket's path, as received
  int pid = 0;       // from its name
};

// Reads a peer address of at most `len` bytes (up to a NUL); false with
// `why` when it is not a secondary's socket name (no pid in it, a path that
// does not fit a socket address, a byte that is not printable).
bool parseCapturePeer(const char* peer, size_t len, CapturePeer& out, std::string& why);

}  // namespace gwlb::dp
