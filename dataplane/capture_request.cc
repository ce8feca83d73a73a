#include "dataplane/capture_request.h"

#include <cerrno>
#include <cstring>

namespace gwlb::dp {

bool parseCaptureRequest(const void* param, size_t len, CaptureRequest& out, int& err,
                         std::string& why) {
  err = -EINVAL;
  if (param == nullptr || len != sizeof(CaptureWire)) {
    why = "request of " + std::to_string(len) + " bytes, want " +
          std::to_string(sizeof(CaptureWire)) + " (a DPDK other than 22.11?)";
    return false;
  }
  CaptureWire w;
  std::memcpy(&w, param, sizeof w);
  if (w.ver != 1 && w.ver != 2) {
    why = "request version " + std::to_string(w.ver) + ", want 1 or 2 (a DPDK other than 22.11?)";
    return false;
  }
  if (w.op != uint16_t(CaptureOp::kStop) && w.op != uint16_t(CaptureOp::kStart)) {
    why = "operation " + std::to_string(w.op) + ", want 1 (stop) or 2 (start)";
    return false;
  }
  if (w.flags == 0 || (w.flags & ~(kCaptureRx | kCaptureTx)) != 0) {
    why = "flags " + std::to_string(w.flags) + ", want 1 (rx), 2 (tx) or 3 (both)";
    return false;
  }
  const void* nul = std::memchr(w.device, '\0', sizeof w.device);
  size_t n = nul ? size_t(static_cast<const char*>(nul) - w.device) : sizeof w.device;
  if (nul == nullptr || n == 0) {
    why = nul ? "no device name" : "device name not terminated within 64 bytes";
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(w.device[i]);
    if (c < 0x21 || c > 0x7e) {
      why = "device name with a byte 0x" + std::string(1, "0123456789abcdef"[c >> 4]) +
            std::string(1, "0123456789abcdef"[c & 15]) + " in it";
      return false;
    }
  }
  out = {};
  out.ver = w.ver;
  out.op = CaptureOp(w.op);
  out.flags = w.flags;
  out.device.assign(w.device, n);
  out.queue = w.queue;
  if (out.op == CaptureOp::kStart) {
    if (w.ring == 0 || w.mp == 0) {
      why = "start without a ring or a mempool";
      return false;
    }
    out.ring = uintptr_t(w.ring);
    out.mp = uintptr_t(w.mp);
    out.prm = uintptr_t(w.prm);
    out.snaplen = w.snaplen ? w.snaplen : UINT32_MAX;
  }
  err = 0;
  return true;
}

bool parseCapturePeer(const char* peer, size_t len, CapturePeer& out, std::string& why) {
  out = {};
  if (peer == nullptr) {
    why = "no peer address";
    return false;
  }
  const void* nul = std::memchr(peer, '\0', len);
  size_t n = nul ? size_t(static_cast<const char*>(nul) - peer) : len;
  // sockaddr_un's path: 108 bytes with its NUL.
  if (n == 0 || n >= 108) {
    why = "peer address of " + std::to_string(n) + " bytes";
    return false;
  }
  std::string path(peer, n);
  for (unsigned char c : path)
    if (c < 0x20 || c > 0x7e) {
      why = "peer address with an unprintable byte";
      return false;
    }
  // The last path component: "mp_socket_<pid>_<hex>".
  static constexpr char kStem[] = "mp_socket_";
  size_t slash = path.rfind('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.compare(0, sizeof kStem - 1, kStem) != 0) {
    why = "peer '" + path + "' is not a secondary process's socket";
    return false;
  }
  size_t at = sizeof kStem - 1;
  long long pid = 0;
  size_t digits = 0;
  while (at < name.size() && name[at] >= '0' && name[at] <= '9' && digits < 10) {
    pid = pid * 10 + (name[at] - '0');
    ++at;
    ++digits;
  }
  bool hex = at + 1 < name.size() && name[at] == '_';
  for (size_t i = at + 1; hex && i < name.size(); ++i)
    hex = (name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f');
  if (digits == 0 || pid <= 0 || pid > 0x7fffffff || !hex) {
    why = "peer '" + path + "' names no process (want mp_socket_<pid>_<hex>)";
    return false;
  }
  out.path = std::move(path);
  out.pid = int(pid);
  return true;
}

}  // namespace gwlb::dp
