// Packet capture by dpdk-dumpcap / dpdk-pdump on a running gwlbd.
//
// Those tools start as DPDK secondary processes and send the primary a
// request ("mp_pdump", dataplane/capture_request.h) naming a port, queues,
// their ring and mempool (in the hugepage memory both processes map) and an
// optional BPF filter. The primary adds RX/TX callbacks that copy each packet
// into that mempool and enqueue it on that ring; the tool writes the file.
//
// DPDK 22.11's own server (rte_pdump_init) removes the callbacks and answers
// at once when a capture stops, so a worker still inside a callback copies
// into a mempool the tool is freeing: gwlbd crashed in 1 stop of 5 that way.
// This server speaks the same protocol and keeps the same statistics (the
// "rte_pdump_stats" memzone the tools read), and answers a stop only after a
// grace period of the workers' RCU variable: every worker has passed a
// quiescent state (between two loops, outside any burst) after the callbacks
// were unlinked, so none can still be copying. It also refuses what would
// not be safe: ports no worker serves (the exception path's taps, polled by
// the control thread: capture those with tcpdump), a ring or mempool that is
// not one DPDK knows, a filter that calls out of the program.
//
// A tool killed while it captures (kill -9, a crash) sends no stop: its
// callbacks would go on copying every packet into a ring nobody reads, and
// every later capture of those queues would be refused (EEXIST). Each
// capture remembers the multi-process socket its request came from
// (CapturePeer: the tool's pid and socket path), and detachGone(), called
// once a second by the control thread, detaches the captures of a tool whose
// socket no longer accepts a connection (ECONNREFUSED: nothing bound to the
// file it left behind; ENOENT: the file is gone) or, where the socket cannot
// be asked (EACCES), whose pid no longer exists. The socket is the better
// witness: it was bound by that very process, so a reused pid cannot pass
// for it. Those callbacks are freed after a grace period. The dead tool's
// ring and mempool are left allocated (freeing another process's mempool
// would call its callbacks at that process's addresses: gwlbd crashed so
// in a test); they go when gwlbd restarts. detach() does the same
// by hand (gwlbctl capture stop), for a tool that lives but no longer reads.
//
// The filter a start names lives in shared memory the tool can still write:
// it is copied (header and instructions) before it is checked, the copy is
// what gets loaded, and its argument is pinned to one rte_mbuf.
//
// Thread model: requests arrive on EAL's multi-process thread; sessions(),
// the totals, detachGone() and detach() run on the control thread; a mutex
// orders them, and is not held while a stop waits for the workers (a stalled
// worker does not stall the control API; detachGone() and detach() do not
// wait at all: what they unlink is freed by a later call once its grace
// period is over). The callbacks run on the workers and take no lock: each
// reads its own Tap, which is freed only after the grace period.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dataplane/capture_request.h"

struct rte_rcu_qsbr;
struct rte_bpf;
struct rte_memzone;

namespace gwlb::dp {

class CaptureServer {
 public:
  // level: 0 info, 1 warning.
  using Log = std::function<void(int level, const std::string& line)>;

  // data_ports: the ports the workers poll and transmit on (all of their
  // queues may be captured); qsbr: the workers' RCU variable. Reserves the
  // statistics memzone; throws std::runtime_error when it cannot.
  CaptureServer(rte_rcu_qsbr* qsbr, std::vector<uint16_t> data_ports, Log log);
  // Stops serving and detaches every capture (after a grace period).
  ~CaptureServer();
  CaptureServer(const CaptureServer&) = delete;
  CaptureServer& operator=(const CaptureServer&) = delete;

  // Answers "mp_pdump" from now on. False, with why, when this process
  // serves no secondary process (--in-memory, --no-shconf) or another server
  // already answers it. At most one CaptureServer listens per process.
  bool listen(std::string& why);
  bool listening() const { return listening_; }

  // One request exactly as a capture tool sends it; returns the reply's
  // error value (0 or -errno). A stop returns once no worker can be inside
  // the stopped callbacks. `peer`: the sender's multi-process socket (as EAL
  // gives it: a socket path, read up to its NUL or 108 bytes); without one (tests, or an address that
  // names no process) the capture is never detached as gone.
  int handle(const void* param, size_t len, const char* peer = nullptr);

  // Removes every callback, waits for the grace period, frees the sessions.
  void detachAll();

  // Control thread, about once a second: detaches the captures of tools
  // that are gone (see above) and frees what earlier calls unlinked once
  // its grace period is over. Returns the queue callbacks detached now.
  size_t detachGone();

  // Control thread: detaches by hand the captures of `device` ("" = every
  // port) on `queue` (-1 = every queue), both directions, without waiting.
  // Returns the queue callbacks detached; -1 with `why` for a device that is
  // not a port.
  long detach(const std::string& device, int queue, std::string& why);

  struct Session {
    uint16_t port = 0, queue = 0;
    bool rx = true;
    std::string device;
    bool pcapng = true, filtered = false;
    uint32_t snaplen = 0;
    uint64_t accepted = 0, filtered_out = 0, nombuf = 0, ringfull = 0;
  };
  std::vector<Session> sessions() const;
  struct Totals {
    uint64_t started = 0, stopped = 0, refused = 0;
    uint64_t detached = 0;  // queue callbacks detached by gwlbd (tool gone, or detach())
  };
  Totals totals() const;

  struct Tap;  // one queue, one direction, being copied (capture.cc)

 private:
  int start(const CaptureRequest& r, uint16_t port, const CapturePeer& owner, std::string& why,
            std::unique_lock<std::mutex>& lock);
  int stop(const CaptureRequest& r, uint16_t port, std::string& why,
           std::unique_lock<std::mutex>& lock);
  // Waits for the grace period with `lock` (on mu_) released, then frees.
  void retire(std::vector<Tap*> taps, std::unique_lock<std::mutex>& lock);
  // Frees a tap whose grace period is over (callback, filter reference); mu_ held.
  void freeTap(Tap* t);
  // Unlinks the taps for which `pick` is true, without waiting: they are
  // freed by freeUnlinked() after a grace period. mu_ held.
  template <typename Pick>
  size_t unlink(Pick pick, bool owner_gone);
  // Frees what unlink() left once its grace period is over (all of it,
  // waiting, with `wait`). mu_ held.
  void freeUnlinked(bool wait);

  rte_rcu_qsbr* qsbr_;
  std::vector<uint16_t> data_ports_;
  Log log_;
  const rte_memzone* stats_mz_ = nullptr;
  bool listening_ = false;
  mutable std::mutex mu_;
  // (port, queue, rx) -> the tap being copied there.
  std::map<uint32_t, Tap*> taps_;
  std::map<rte_bpf*, unsigned> filters_;  // filter -> taps using it
  // Unlinked by detachGone()/detach(), freed once the grace period of
  // `token` is over; `gone`: their tool is dead.
  struct Unlinked {
    uint64_t token = 0;
    std::vector<Tap*> taps;
    bool gone = false;
  };
  std::vector<Unlinked> unlinked_;
  Totals totals_;
};

}  // namespace gwlb::dp
