// rte_pcapng_copy and rte_pdump_stats' layout are DPDK 22.11 experimental API.
#define ALLOW_EXPERIMENTAL_API 1

#include "dataplane/capture.h"

#include <rte_bpf.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_memzone.h>
#include <rte_mempool.h>
#include <rte_pcapng.h>
#include <rte_pdump.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace gwlb::dp {

namespace {

constexpr char kAction[] = "mp_pdump";
// What the capture tools read for their "packets dropped" lines: one record
// per port, queue and direction, as DPDK 22.11's rte_pdump_stats() expects.
constexpr char kStatsZone[] = "rte_pdump_stats";
struct StatsZone {
  struct rte_pdump_stats rx[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT];
  struct rte_pdump_stats tx[RTE_MAX_ETHPORTS][RTE_MAX_QUEUES_PER_PORT];
  const rte_memzone* mz;
};
static_assert(RTE_DEV_NAME_MAX_LEN == sizeof(CaptureWire::device), "device name length");

// The server answering "mp_pdump" in this process. EAL's multi-process
// thread holds g_listener_mu while a request is handled, so the server's
// destructor, which clears the pointer under it, waits for that request.
std::mutex g_listener_mu;
CaptureServer* g_listener = nullptr;

uint32_t tapKey(uint16_t port, uint16_t queue, bool rx) {
  return uint32_t(port) << 17 | uint32_t(queue) << 1 | (rx ? 1u : 0u);
}

// Each callback burst is copied in chunks of this many packets (the BPF
// results and the copies live on the stack: nothing is allocated per burst).
constexpr uint16_t kChunk = 64;

}  // namespace

struct CaptureServer::Tap {
  uint16_t port, queue;
  bool rx;
  bool pcapng;
  uint32_t snaplen;
  rte_ring* ring;
  rte_mempool* mp;
  rte_bpf* filter;
  struct rte_pdump_stats* stats;
  const rte_eth_rxtx_callback* cb = nullptr;
  std::string device;
  CapturePeer owner;  // the tool that asked (path empty: unknown)
};

namespace {

// Runs on a worker, inside rte_eth_rx_burst / rte_eth_tx_burst, only while a
// capture is attached to that queue.
void copyBurst(const CaptureServer::Tap& t, rte_mbuf** pkts, uint16_t n) {
  const uint64_t ts = rte_get_tsc_cycles();
  const rte_pcapng_direction dir = t.rx ? RTE_PCAPNG_DIRECTION_IN : RTE_PCAPNG_DIRECTION_OUT;
  for (uint16_t base = 0; base < n; base = uint16_t(base + kChunk)) {
    const uint16_t m = std::min<uint16_t>(kChunk, uint16_t(n - base));
    uint64_t rc[kChunk];
    rte_mbuf* dup[kChunk];
    unsigned d = 0;
    if (t.filter) rte_bpf_exec_burst(t.filter, reinterpret_cast<void**>(pkts + base), rc, m);
    for (uint16_t i = 0; i < m; ++i) {
      if (t.filter && rc[i] == 0) {
        __atomic_fetch_add(&t.stats->filtered, 1, __ATOMIC_RELAXED);
        continue;
      }
      rte_mbuf* p = t.pcapng ? rte_pcapng_copy(t.port, t.queue, pkts[base + i], t.mp, t.snaplen, ts, dir)
                             : rte_pktmbuf_copy(pkts[base + i], t.mp, 0, t.snaplen);
      if (p == nullptr)
        __atomic_fetch_add(&t.stats->nombuf, 1, __ATOMIC_RELAXED);
      else
        dup[d++] = p;
    }
    __atomic_fetch_add(&t.stats->accepted, d, __ATOMIC_RELAXED);
    unsigned q = rte_ring_enqueue_burst(t.ring, reinterpret_cast<void**>(dup), d, nullptr);
    if (q < d) {
      __atomic_fetch_add(&t.stats->ringfull, d - q, __ATOMIC_RELAXED);
      rte_pktmbuf_free_bulk(dup + q, d - q);
    }
  }
}

uint16_t onRx(uint16_t, uint16_t, rte_mbuf** pkts, uint16_t n, uint16_t, void* arg) {
  copyBurst(*static_cast<const CaptureServer::Tap*>(arg), pkts, n);
  return n;
}

uint16_t onTx(uint16_t, uint16_t, rte_mbuf** pkts, uint16_t n, void* arg) {
  copyBurst(*static_cast<const CaptureServer::Tap*>(arg), pkts, n);
  return n;
}

int onMessage(const rte_mp_msg* msg, const void* peer) {
  rte_mp_msg reply;
  std::memset(&reply, 0, sizeof reply);
  CaptureReplyWire r{};
  if (msg->len_param >= 4) {  // echo version and operation when there are any
    std::memcpy(&r.ver, msg->param, 2);
    std::memcpy(&r.res_op, msg->param + 2, 2);
  }
  {
    std::lock_guard<std::mutex> g(g_listener_mu);
    r.err_value = g_listener ? g_listener->handle(msg->param, size_t(std::max(msg->len_param, 0)),
                                                  static_cast<const char*>(peer))
                             : -ENODEV;
  }
  std::snprintf(reply.name, sizeof reply.name, "%s", kAction);
  reply.len_param = sizeof r;
  std::memcpy(reply.param, &r, sizeof r);
  return rte_mp_reply(&reply, static_cast<const char*>(peer)) < 0 ? -1 : 0;
}

struct FindMempool {
  const void* want;
  bool found = false;
};

void findMempool(rte_mempool* mp, void* arg) {
  auto* f = static_cast<FindMempool*>(arg);
  if (mp == f->want) f->found = true;
}

struct FindRing {
  const void* want;
  bool found = false;
};

void findRing(const rte_memzone* mz, void* arg) {
  auto* f = static_cast<FindRing*>(arg);
  if (mz->addr == f->want && std::strncmp(mz->name, RTE_RING_MZ_PREFIX, sizeof RTE_RING_MZ_PREFIX - 1) == 0)
    f->found = true;
}

// [p, p + n) lies in DPDK's memory (which a secondary process shares).
bool inDpdkMemory(const void* p, size_t n) {
  if (p == nullptr || n == 0) return false;
  const char* c = static_cast<const char*>(p);
  const rte_memseg_list* a = rte_mem_virt2memseg_list(c);
  return a != nullptr && rte_mem_virt2memseg_list(c + n - 1) == a &&
         rte_mem_virt2memseg(c, a) != nullptr && rte_mem_virt2memseg(c + n - 1, a) != nullptr;
}

std::string portName(uint16_t port, const std::string& device) {
  return "port " + std::to_string(port) + " (" + device + ")";
}

// True when the tool behind `p` is certainly gone: its multi-process socket
// accepts no connection (nothing is bound to the file a killed process
// leaves, or the file is gone), or, where the socket may not be asked
// (another user's), its pid no longer exists. Anything else (a connect that
// succeeds, an error that says nothing) counts as alive.
bool toolGone(const CapturePeer& p) {
  if (p.path.empty()) return false;
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, p.path.data(), std::min(p.path.size(), sizeof a.sun_path - 1));
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
  int e = errno;
  ::close(fd);
  if (rc == 0) return false;
  if (e == ECONNREFUSED || e == ENOENT) return true;
  if ((e == EACCES || e == EPERM) && p.pid > 0) return ::kill(p.pid, 0) != 0 && errno == ESRCH;
  return false;
}

}  // namespace

CaptureServer::CaptureServer(rte_rcu_qsbr* qsbr, std::vector<uint16_t> data_ports, Log log)
    : qsbr_(qsbr), data_ports_(std::move(data_ports)), log_(std::move(log)) {
  stats_mz_ = rte_memzone_lookup(kStatsZone);
  if (stats_mz_ == nullptr)
    stats_mz_ = rte_memzone_reserve(kStatsZone, sizeof(StatsZone), int(rte_socket_id()), 0);
  if (stats_mz_ == nullptr)
    throw std::runtime_error(std::string("packet capture: cannot reserve the ") + kStatsZone +
                             " memzone (" + std::to_string(sizeof(StatsZone) >> 20) +
                             " MiB): " + rte_strerror(rte_errno));
  if (stats_mz_->len < sizeof(StatsZone))
    throw std::runtime_error(std::string("packet capture: memzone ") + kStatsZone + " is too small");
  auto* z = static_cast<StatsZone*>(stats_mz_->addr);
  std::memset(z, 0, sizeof *z);
  z->mz = stats_mz_;
}

CaptureServer::~CaptureServer() {
  if (listening_) {
    rte_mp_action_unregister(kAction);
    std::lock_guard<std::mutex> g(g_listener_mu);  // waits for a request being handled
    g_listener = nullptr;
  }
  detachAll();
}

bool CaptureServer::listen(std::string& why) {
  std::lock_guard<std::mutex> g(g_listener_mu);
  if (g_listener != nullptr) {
    why = "another capture server answers mp_pdump in this process";
    return false;
  }
  g_listener = this;
  if (rte_mp_action_register(kAction, onMessage) != 0) {
    g_listener = nullptr;
    why = rte_errno == ENOTSUP ? "this EAL serves no secondary process (--in-memory or --no-shconf)"
                               : std::string("cannot register ") + kAction + ": " + rte_strerror(rte_errno);
    return false;
  }
  listening_ = true;
  return true;
}

int CaptureServer::handle(const void* param, size_t len, const char* peer) {
  std::unique_lock<std::mutex> lock(mu_);
  CaptureRequest r;
  int err = 0;
  std::string why;
  CapturePeer owner;
  // EAL's peer is a sockaddr_un's path (108 bytes).
  if (peer != nullptr && !parseCapturePeer(peer, sizeof(sockaddr_un::sun_path), owner, why))
    log_(1, "packet capture: " + why + ": a capture it starts is not detached if the tool dies");
  why.clear();
  if (!parseCaptureRequest(param, len, r, err, why)) {
    ++totals_.refused;
    log_(1, "packet capture: refused a request: " + why);
    return err;
  }
  uint16_t port = 0;
  if (rte_eth_dev_get_port_by_name(r.device.c_str(), &port) != 0) {
    ++totals_.refused;
    log_(1, "packet capture: refused a request for device \"" + r.device + "\": no such port");
    return -EINVAL;
  }
  if (std::find(data_ports_.begin(), data_ports_.end(), port) == data_ports_.end()) {
    ++totals_.refused;
    log_(1, "packet capture: refused " + portName(port, r.device) +
                ": not a data port (the exception path's taps are kernel interfaces: use tcpdump)");
    return -ENOTSUP;
  }
  err = r.op == CaptureOp::kStart ? start(r, port, owner, why, lock) : stop(r, port, why, lock);
  if (err != 0) {
    ++totals_.refused;
    log_(1, "packet capture: refused to " + std::string(r.op == CaptureOp::kStart ? "start" : "stop") +
                " on " + portName(port, r.device) + ": " + why);
  }
  return err;
}

int CaptureServer::start(const CaptureRequest& r, uint16_t port, const CapturePeer& owner,
                         std::string& why, std::unique_lock<std::mutex>& lock) {
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(port, &info); rc != 0) {
    why = std::string("no device info: ") + std::strerror(-rc);
    return rc;
  }
  FindMempool fm{reinterpret_cast<const void*>(r.mp)};
  rte_mempool_walk(findMempool, &fm);
  if (!fm.found) {
    why = "the mempool it names is not one DPDK knows";
    return -EINVAL;
  }
  FindRing fr{reinterpret_cast<const void*>(r.ring)};
  rte_memzone_walk(findRing, &fr);
  if (!fr.found) {
    why = "the ring it names is not one DPDK knows";
    return -EINVAL;
  }
  rte_bpf* filter = nullptr;
  if (r.prm) {
    // The tool can still write its filter while this runs: everything is
    // checked on a copy, and the copy is what gets loaded.
    if (!inDpdkMemory(reinterpret_cast<const void*>(r.prm), sizeof(rte_bpf_prm))) {
      why = "its filter is not in DPDK's shared memory";
      return -EINVAL;
    }
    rte_bpf_prm prm;
    std::memcpy(&prm, reinterpret_cast<const void*>(r.prm), sizeof prm);
    if (prm.prog_arg.type != RTE_BPF_ARG_PTR_MBUF) {
      why = "its filter does not take a packet (BPF argument type " +
            std::to_string(unsigned(prm.prog_arg.type)) + ")";
      return -EINVAL;
    }
    if (prm.nb_xsym != 0) {
      why = "its filter calls external functions (addresses of another process)";
      return -EINVAL;
    }
    if (prm.nb_ins == 0 || prm.nb_ins > 65536 ||
        !inDpdkMemory(prm.ins, size_t(prm.nb_ins) * sizeof(ebpf_insn))) {
      why = "its filter's " + std::to_string(prm.nb_ins) + " instructions are not in DPDK's shared memory";
      return -EINVAL;
    }
    std::vector<ebpf_insn> ins(prm.nb_ins);
    std::memcpy(ins.data(), prm.ins, ins.size() * sizeof(ebpf_insn));
    prm.ins = ins.data();
    prm.xsym = nullptr;
    // The argument is one packet: the verifier lets the program read the
    // rte_mbuf and nothing past it (a larger size would let it read beyond),
    // and data only through its bounded packet loads.
    prm.prog_arg.size = sizeof(rte_mbuf);
    prm.prog_arg.buf_size = 0;
    filter = rte_bpf_load(&prm);  // keeps its own copy of the instructions
    if (filter == nullptr) {
      why = std::string("its filter does not load: ") + rte_strerror(rte_errno);
      return -EINVAL;
    }
  }
  std::vector<Tap*> added;
  auto undo = [&](int e) {
    for (Tap* t : added) {
      if (t->rx) rte_eth_remove_rx_callback(t->port, t->queue, t->cb);
      else rte_eth_remove_tx_callback(t->port, t->queue, t->cb);
      taps_.erase(tapKey(t->port, t->queue, t->rx));
    }
    // The taps added here hold every reference to this request's filter:
    // retiring them destroys it; with none added it is destroyed here.
    const bool none = added.empty();
    retire(std::move(added), lock);
    if (filter && none) rte_bpf_destroy(filter);
    return e;
  };
  for (bool rx : {true, false}) {
    if (!(r.flags & (rx ? kCaptureRx : kCaptureTx))) continue;
    const uint16_t nq = rx ? info.nb_rx_queues : info.nb_tx_queues;
    uint16_t first = r.queue, end = uint16_t(r.queue + 1);
    if (r.queue == kCaptureAllQueues) first = 0, end = nq;
    if (nq == 0 || (r.queue != kCaptureAllQueues && r.queue >= nq)) {
      why = "queue " + std::to_string(r.queue) + ": the port has " + std::to_string(nq) + " " +
            (rx ? "rx" : "tx") + " queue(s)";
      return undo(-EINVAL);
    }
    auto* zone = static_cast<StatsZone*>(stats_mz_->addr);
    for (uint16_t q = first; q < end; ++q) {
      if (taps_.count(tapKey(port, q, rx))) {
        why = std::string(rx ? "rx" : "tx") + " queue " + std::to_string(q) + " is already being captured";
        return undo(-EEXIST);
      }
      auto* t = new Tap{port, q, rx, r.ver == 2, r.snaplen,
                        reinterpret_cast<rte_ring*>(r.ring), reinterpret_cast<rte_mempool*>(r.mp),
                        filter, rx ? &zone->rx[port][q] : &zone->tx[port][q], nullptr, r.device,
                        owner};
      std::memset(t->stats, 0, sizeof *t->stats);
      t->cb = rx ? rte_eth_add_first_rx_callback(port, q, onRx, t) : rte_eth_add_tx_callback(port, q, onTx, t);
      if (t->cb == nullptr) {
        why = std::string("cannot add the callback: ") + rte_strerror(rte_errno);
        delete t;
        return undo(-rte_errno ? -rte_errno : -EINVAL);
      }
      taps_[tapKey(port, q, rx)] = t;
      added.push_back(t);
      if (filter) ++filters_[filter];
    }
  }
  ++totals_.started;
  log_(0, "packet capture: started on " + portName(port, r.device) + ", " +
              (r.flags == (kCaptureRx | kCaptureTx) ? "rx and tx" : r.flags == kCaptureRx ? "rx" : "tx") +
              ", " + (r.queue == kCaptureAllQueues ? "every queue" : "queue " + std::to_string(r.queue)) +
              (filter ? ", filtered" : "") + (r.ver == 2 ? " (pcapng)" : ""));
  return 0;
}

int CaptureServer::stop(const CaptureRequest& r, uint16_t port, std::string& why,
                        std::unique_lock<std::mutex>& lock) {
  std::vector<Tap*> gone;
  for (bool rx : {true, false}) {
    if (!(r.flags & (rx ? kCaptureRx : kCaptureTx))) continue;
    for (auto it = taps_.begin(); it != taps_.end();) {
      Tap* t = it->second;
      if (t->port == port && t->rx == rx && (r.queue == kCaptureAllQueues || t->queue == r.queue)) {
        if (rx) rte_eth_remove_rx_callback(port, t->queue, t->cb);
        else rte_eth_remove_tx_callback(port, t->queue, t->cb);
        gone.push_back(t);
        it = taps_.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (gone.empty()) {
    why = "nothing is being captured there";
    return -EINVAL;
  }
  std::vector<const struct rte_pdump_stats*> stats;
  for (const Tap* t : gone) stats.push_back(t->stats);
  retire(std::move(gone), lock);  // no worker copies into these queues' counters now
  uint64_t copied = 0, lost = 0;
  for (const struct rte_pdump_stats* st : stats) {
    copied += __atomic_load_n(&st->accepted, __ATOMIC_RELAXED);
    lost += __atomic_load_n(&st->nombuf, __ATOMIC_RELAXED) + __atomic_load_n(&st->ringfull, __ATOMIC_RELAXED);
  }
  size_t n = stats.size();
  ++totals_.stopped;
  log_(0, "packet capture: stopped on " + portName(port, r.device) + " (" + std::to_string(n) +
              " queue callback(s), " + std::to_string(copied) + " packets copied, " + std::to_string(lost) +
              " not copied: the tool's mempool or ring was full)");
  return 0;
}

// The callbacks are unlinked (and out of taps_): once every worker has
// passed a quiescent state none is inside one, and their taps, callbacks and
// filters can go. The wait runs without mu_, so sessions() never waits for a
// worker.
void CaptureServer::retire(std::vector<Tap*> taps, std::unique_lock<std::mutex>& lock) {
  if (taps.empty()) return;
  lock.unlock();
  if (qsbr_) rte_rcu_qsbr_check(qsbr_, rte_rcu_qsbr_start(qsbr_), true);
  lock.lock();
  for (Tap* t : taps) freeTap(t);
}

void CaptureServer::freeTap(Tap* t) {
  rte_free(const_cast<rte_eth_rxtx_callback*>(t->cb));
  if (t->filter) {
    auto it = filters_.find(t->filter);
    if (it != filters_.end() && --it->second == 0) {
      rte_bpf_destroy(t->filter);
      filters_.erase(it);
    }
  }
  delete t;
}

template <typename Pick>
size_t CaptureServer::unlink(Pick pick, bool owner_gone) {
  Unlinked u;
  u.gone = owner_gone;
  for (auto it = taps_.begin(); it != taps_.end();) {
    Tap* t = it->second;
    if (!pick(*t)) {
      ++it;
      continue;
    }
    if (t->rx) rte_eth_remove_rx_callback(t->port, t->queue, t->cb);
    else rte_eth_remove_tx_callback(t->port, t->queue, t->cb);
    u.taps.push_back(t);
    it = taps_.erase(it);
  }
  size_t n = u.taps.size();
  if (n == 0) return 0;
  u.token = qsbr_ ? rte_rcu_qsbr_start(qsbr_) : 0;
  unlinked_.push_back(std::move(u));
  totals_.detached += n;
  return n;
}

void CaptureServer::freeUnlinked(bool wait) {
  for (auto it = unlinked_.begin(); it != unlinked_.end();) {
    if (qsbr_ && rte_rcu_qsbr_check(qsbr_, it->token, wait) != 1) {
      ++it;
      continue;
    }
    // (A dead tool's ring and mempool are left: freeing another process's
    // mempool here would call its callbacks at that process's addresses.)
    for (Tap* t : it->taps) freeTap(t);
    it = unlinked_.erase(it);
  }
}

size_t CaptureServer::detachGone() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, CapturePeer> owners;
  for (const auto& [k, t] : taps_)
    if (!t->owner.path.empty()) owners.emplace(t->owner.path, t->owner);
  size_t total = 0;
  for (const auto& [path, owner] : owners) {
    if (!toolGone(owner)) continue;
    std::string where;
    size_t n = unlink(
        [&](const Tap& t) {
          if (t.owner.path != path) return false;
          if (where.find(t.device) == std::string::npos) where += (where.empty() ? "" : ", ") + t.device;
          return true;
        },
        true);
    total += n;
    log_(1, "packet capture: the capture tool (pid " + std::to_string(owner.pid) + ", " + path +
                ") is gone: detached its " + std::to_string(n) + " queue callback(s) on " + where);
  }
  freeUnlinked(false);
  return total;
}

long CaptureServer::detach(const std::string& device, int queue, std::string& why) {
  std::lock_guard<std::mutex> lock(mu_);
  uint16_t port = 0;
  if (!device.empty() && rte_eth_dev_get_port_by_name(device.c_str(), &port) != 0) {
    why = "no port named '" + device + "'";
    return -1;
  }
  size_t n = unlink(
      [&](const Tap& t) {
        return (device.empty() || t.port == port) && (queue < 0 || t.queue == queue);
      },
      false);
  if (n > 0)
    log_(1, "packet capture: detached by hand: " + std::to_string(n) + " queue callback(s)" +
                (device.empty() ? "" : " on " + device) +
                (queue < 0 ? "" : ", queue " + std::to_string(queue)) +
                " (the tool gets nothing more; its own stop will be refused)");
  freeUnlinked(false);
  return long(n);
}

void CaptureServer::detachAll() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<Tap*> gone;
  for (auto& [key, t] : taps_) {
    if (t->rx) rte_eth_remove_rx_callback(t->port, t->queue, t->cb);
    else rte_eth_remove_tx_callback(t->port, t->queue, t->cb);
    gone.push_back(t);
  }
  taps_.clear();
  retire(std::move(gone), lock);
  freeUnlinked(true);
}

std::vector<CaptureServer::Session> CaptureServer::sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Session> out;
  for (const auto& [key, t] : taps_) {
    Session s;
    s.port = t->port;
    s.queue = t->queue;
    s.rx = t->rx;
    s.device = t->device;
    s.pcapng = t->pcapng;
    s.filtered = t->filter != nullptr;
    s.snaplen = t->snaplen;
    s.accepted = __atomic_load_n(&t->stats->accepted, __ATOMIC_RELAXED);
    s.filtered_out = __atomic_load_n(&t->stats->filtered, __ATOMIC_RELAXED);
    s.nombuf = __atomic_load_n(&t->stats->nombuf, __ATOMIC_RELAXED);
    s.ringfull = __atomic_load_n(&t->stats->ringfull, __ATOMIC_RELAXED);
    out.push_back(std::move(s));
  }
  return out;
}

CaptureServer::Totals CaptureServer::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

}  // namespace gwlb::dp
