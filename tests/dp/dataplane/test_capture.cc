// Packet capture (dataplane/capture.h): the requests dpdk-dumpcap and
// dpdk-pdump send, handed to the server directly (the dp suite's EAL runs with
// --no-shconf, so no secondary process can attach here; tests/daemon/
// run_capture.sh runs the real dpdk-dumpcap against gwlbd). A net_ring port
// with two RX and two TX queues stands for a data port; the "tool" is a ring
// and a mempool of this process, as a secondary's would be in shared memory.
#define ALLOW_EXPERIMENTAL_API 1  // rte_bpf_convert

#include <gtest/gtest.h>
#include <pcap/pcap.h>
#include <rte_bpf.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pause.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/capture.h"
#include "dataplane/eal.h"
#include "tests/dp/dp_harness.h"

namespace gwlb::dptest {
namespace {

using dp::CaptureServer;
using dp::CaptureWire;

std::vector<uint8_t> request(uint16_t ver, uint16_t op, uint32_t flags, const std::string& dev,
                             uint16_t queue, const void* ring = nullptr, const void* mp = nullptr,
                             const void* prm = nullptr, uint32_t snaplen = 0) {
  CaptureWire w{};
  w.ver = ver;
  w.op = op;
  w.flags = flags;
  // At most sizeof - 1 bytes: `w` is zeroed, so the name stays NUL-terminated
  // as the wire format wants (a longer one is cut, never left unterminated).
  std::memcpy(w.device, dev.data(), std::min(dev.size(), sizeof w.device - 1));
  w.queue = queue;
  w.ring = uintptr_t(ring);
  w.mp = uintptr_t(mp);
  w.prm = uintptr_t(prm);
  w.snaplen = snaplen;
  std::vector<uint8_t> b(sizeof w);
  std::memcpy(b.data(), &w, sizeof w);
  return b;
}

// A started net_ring port: queue q receives what is enqueued on rx[q] and
// sends into tx[q].
struct RingPort {
  uint16_t id = 0;
  std::string name;
  rte_ring* rx[2] = {};
  rte_ring* tx[2] = {};
  explicit RingPort(const std::string& n) : name(n) {
    for (int q = 0; q < 2; ++q) {
      rx[q] = dp::createRing(n + "_rx" + std::to_string(q), 256, true);
      tx[q] = dp::createRing(n + "_tx" + std::to_string(q), 256, true);
    }
    int port = rte_eth_from_rings(n.c_str(), rx, 2, tx, 2, rte_socket_id());
    EXPECT_GE(port, 0);
    id = uint16_t(port);
    rte_eth_conf conf{};
    EXPECT_EQ(rte_eth_dev_configure(id, 2, 2, &conf), 0);
    for (uint16_t q = 0; q < 2; ++q) {
      EXPECT_EQ(rte_eth_rx_queue_setup(id, q, 256, rte_socket_id(), nullptr, testPool()), 0);
      EXPECT_EQ(rte_eth_tx_queue_setup(id, q, 256, rte_socket_id(), nullptr), 0);
    }
    EXPECT_EQ(rte_eth_dev_start(id), 0);
    char dev[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(id, dev);
    name = dev;
  }
  // Puts frames on RX queue q's ring (as the wire would).
  void arrive(uint16_t q, const std::vector<Bytes>& frames) {
    for (const Bytes& f : frames) {
      rte_mbuf* m = rte_pktmbuf_alloc(testPool());
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, uint16_t(f.size())), f.data(), f.size());
      ASSERT_EQ(rte_ring_enqueue(rx[q], m), 0);
    }
  }
  // One worker turn on queue q: receive a burst, send it out of the same queue.
  unsigned turn(uint16_t q) {
    rte_mbuf* pkts[32];
    uint16_t n = rte_eth_rx_burst(id, q, pkts, 32);
    uint16_t sent = rte_eth_tx_burst(id, q, pkts, n);
    for (uint16_t i = sent; i < n; ++i) rte_pktmbuf_free(pkts[i]);
    void* out[32];
    unsigned k;
    while ((k = rte_ring_dequeue_burst(tx[q], out, 32, nullptr)) != 0)
      for (unsigned i = 0; i < k; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(out[i]));
    return n;
  }
};

RingPort& dataPort() {
  static RingPort p("capture_data");
  return p;
}
RingPort& otherPort() {
  static RingPort p("capture_other");
  return p;
}

// What the capture tool owns: a ring and a mempool in DPDK memory.
struct Tool {
  rte_ring* ring;
  rte_mempool* mp;
  Tool() {
    static int n = 0;
    ++n;
    ring = dp::createRing("capture_tool_ring" + std::to_string(n), 1024);
    mp = dp::createMbufPool("capture_tool_pool" + std::to_string(n), 1023, 2048);
  }
  // Takes every copy the server enqueued; returns them (freed).
  std::vector<Bytes> take() {
    std::vector<Bytes> out;
    void* p;
    while (rte_ring_dequeue(ring, &p) == 0) {
      auto* m = static_cast<rte_mbuf*>(p);
      Bytes b(rte_pktmbuf_pkt_len(m));
      const void* d = rte_pktmbuf_read(m, 0, uint32_t(b.size()), b.data());
      if (d != b.data()) std::memcpy(b.data(), d, b.size());
      out.push_back(std::move(b));
      rte_pktmbuf_free(m);
    }
    return out;
  }
};

Net net;

Bytes udpFrame(uint16_t sport) {
  return ether(net.fromA(), kEthIpv4,
               ipv4(net.client4, net.server4, 17, udp(net.client4, net.server4, sport, 53, pattern(20))));
}
Bytes tcpFrame(uint16_t sport) {
  return ether(net.fromA(), kEthIpv4,
               ipv4(net.client4, net.server4, 6, tcp(net.client4, net.server4, sport, 80)));
}

struct Logged {
  std::vector<std::string> lines;
  CaptureServer::Log fn() {
    return [this](int, const std::string& l) { lines.push_back(l); };
  }
};

constexpr uint16_t kAll = dp::kCaptureAllQueues;

TEST(Capture, CopiesWhatAQueueReceivesAndSendsUntilStopped) {
  RingPort& port = dataPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  Tool tool;
  // dpdk-pdump's plain copies (version 1), 60 bytes kept, both directions.
  auto start = request(1, 2, 3, port.name, kAll, tool.ring, tool.mp, nullptr, 60);
  ASSERT_EQ(s.handle(start.data(), start.size()), 0);
  ASSERT_EQ(s.sessions().size(), 4u);  // 2 RX + 2 TX queues

  port.arrive(1, {udpFrame(1000), udpFrame(1001), tcpFrame(1002)});
  EXPECT_EQ(port.turn(1), 3u);
  std::vector<Bytes> got = tool.take();
  ASSERT_EQ(got.size(), 6u) << "each packet once received and once sent";
  Bytes first = udpFrame(1000);
  EXPECT_EQ(got[0], slice(first, 0, 60)) << "received copy, cut to the snapshot length";
  EXPECT_EQ(got[3], slice(first, 0, 60)) << "sent copy";
  uint64_t rx1 = 0, tx1 = 0, other = 0;
  for (const auto& ss : s.sessions()) {
    if (ss.queue == 1) (ss.rx ? rx1 : tx1) += ss.accepted;
    else other += ss.accepted;
  }
  EXPECT_EQ(rx1, 3u);
  EXPECT_EQ(tx1, 3u);
  EXPECT_EQ(other, 0u);

  auto stop = request(1, 1, 3, port.name, kAll);
  ASSERT_EQ(s.handle(stop.data(), stop.size()), 0);
  EXPECT_TRUE(s.sessions().empty());
  port.arrive(1, {udpFrame(1003)});
  EXPECT_EQ(port.turn(1), 1u);
  EXPECT_TRUE(tool.take().empty()) << "nothing is copied once stopped";
  CaptureServer::Totals t = s.totals();
  EXPECT_EQ(t.started, 1u);
  EXPECT_EQ(t.stopped, 1u);
  EXPECT_EQ(t.refused, 0u);
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_NE(log.lines[0].find("started on port"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[1].find("6 packets copied"), std::string::npos) << log.lines[1];
}

TEST(Capture, PcapngCopiesAndABpfFilterAsDumpcapSendsThem) {
  RingPort& port = dataPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  Tool tool;
  // dpdk-dumpcap -f udp: libpcap compiles the filter, DPDK converts it to
  // eBPF in its shared memory (rte_bpf_convert uses rte_malloc).
  pcap_t* dead = pcap_open_dead(DLT_EN10MB, 65535);
  bpf_program prog{};
  ASSERT_EQ(pcap_compile(dead, &prog, "udp", 1, PCAP_NETMASK_UNKNOWN), 0);
  rte_bpf_prm* prm = rte_bpf_convert(&prog);
  pcap_freecode(&prog);
  pcap_close(dead);
  ASSERT_NE(prm, nullptr);
  auto start = request(2, 2, 1, port.name, 0, tool.ring, tool.mp, prm, 0);
  ASSERT_EQ(s.handle(start.data(), start.size()), 0);
  port.arrive(0, {udpFrame(2000), tcpFrame(2001), udpFrame(2002)});
  EXPECT_EQ(port.turn(0), 3u);
  std::vector<Bytes> got = tool.take();
  ASSERT_EQ(got.size(), 2u) << "the TCP packet is filtered out";
  // A pcapng enhanced packet block (type 6) around the whole frame.
  Bytes frame = udpFrame(2000);
  ASSERT_GT(got[0].size(), frame.size());
  uint32_t type;
  std::memcpy(&type, got[0].data(), 4);
  EXPECT_EQ(type, 6u);
  EXPECT_NE(std::search(got[0].begin(), got[0].end(), frame.begin(), frame.end()), got[0].end());
  auto ss = s.sessions();
  ASSERT_EQ(ss.size(), 1u);
  EXPECT_TRUE(ss[0].filtered);
  EXPECT_EQ(ss[0].accepted, 2u);
  EXPECT_EQ(ss[0].filtered_out, 1u);
  auto stop = request(2, 1, 1, port.name, 0);
  ASSERT_EQ(s.handle(stop.data(), stop.size()), 0);
  rte_free(prm);
}

TEST(Capture, RefusesWhatItCannotServeSafelyAndKeepsNothingOfIt) {
  RingPort& port = dataPort();
  RingPort& other = otherPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  Tool tool;
  int on_stack = 0;
  rte_bpf_prm* calls_out = static_cast<rte_bpf_prm*>(rte_zmalloc("capture_prm", sizeof(rte_bpf_prm), 0));
  ebpf_insn* ins = static_cast<ebpf_insn*>(rte_zmalloc("capture_ins", sizeof(ebpf_insn) * 2, 0));
  calls_out->ins = ins;
  calls_out->nb_ins = 2;
  calls_out->nb_xsym = 1;
  calls_out->prog_arg.type = RTE_BPF_ARG_PTR_MBUF;
  struct Case {
    const char* what;
    std::vector<uint8_t> req;
    int want;
  };
  auto good = request(2, 2, 3, port.name, kAll, tool.ring, tool.mp);
  std::vector<Case> cases = {
      {"short", std::vector<uint8_t>(good.begin(), good.begin() + 100), -EINVAL},
      {"version 3", request(3, 2, 3, port.name, kAll, tool.ring, tool.mp), -EINVAL},
      {"operation 7", request(2, 7, 3, port.name, kAll), -EINVAL},
      {"flags 4", request(2, 2, 4, port.name, kAll, tool.ring, tool.mp), -EINVAL},
      {"no such device", request(2, 2, 3, "net_nope", kAll, tool.ring, tool.mp), -EINVAL},
      {"not a data port", request(2, 2, 3, other.name, kAll, tool.ring, tool.mp), -ENOTSUP},
      {"queue 2 of 2", request(2, 2, 1, port.name, 2, tool.ring, tool.mp), -EINVAL},
      {"ring on the stack", request(2, 2, 3, port.name, kAll, &on_stack, tool.mp), -EINVAL},
      {"mempool that is a ring", request(2, 2, 3, port.name, kAll, tool.ring, tool.ring), -EINVAL},
      {"filter on the stack", request(2, 2, 3, port.name, kAll, tool.ring, tool.mp, &on_stack), -EINVAL},
      {"filter calling out", request(2, 2, 3, port.name, kAll, tool.ring, tool.mp, calls_out), -EINVAL},
      {"stop with nothing started", request(2, 1, 3, port.name, kAll), -EINVAL},
  };
  for (const Case& c : cases) EXPECT_EQ(s.handle(c.req.data(), c.req.size()), c.want) << c.what;
  EXPECT_TRUE(s.sessions().empty());
  EXPECT_EQ(s.totals().refused, cases.size());
  EXPECT_EQ(log.lines.size(), cases.size()) << "one warning per refusal";
  for (const std::string& l : log.lines) EXPECT_NE(l.find("refused"), std::string::npos) << l;

  // TX queue 1 already captured: a start of RX+TX on every queue is refused
  // whole (the RX callbacks it added first are removed again).
  auto tx1 = request(2, 2, 2, port.name, 1, tool.ring, tool.mp);
  ASSERT_EQ(s.handle(tx1.data(), tx1.size()), 0);
  EXPECT_EQ(s.handle(good.data(), good.size()), -EEXIST);
  ASSERT_EQ(s.sessions().size(), 1u);
  port.arrive(0, {udpFrame(3000)});
  EXPECT_EQ(port.turn(0), 1u);
  EXPECT_TRUE(tool.take().empty()) << "no callback of the refused start is left on queue 0";
  s.detachAll();
  EXPECT_TRUE(s.sessions().empty());
  rte_free(ins);
  rte_free(calls_out);
}

// A filter's argument is one packet: the verifier lets a program read as much
// of it as prog_arg.size says. A request that claims 64 KiB must not let its
// program read 1 KiB past the start of an rte_mbuf (issue 24 item 10: the
// size is pinned to sizeof(rte_mbuf); before, this filter loaded and a worker
// would have run it over whatever follows each mbuf).
TEST(Capture, AFilterMayReadNoFurtherThanTheMbuf) {
  RingPort& port = dataPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  Tool tool;
  auto* prm = static_cast<rte_bpf_prm*>(rte_zmalloc("capture_prm_size", sizeof(rte_bpf_prm), 0));
  auto* ins = static_cast<ebpf_insn*>(rte_zmalloc("capture_ins_size", sizeof(ebpf_insn) * 2, 0));
  ASSERT_NE(prm, nullptr);
  ASSERT_NE(ins, nullptr);
  ins[0].code = BPF_LDX | BPF_MEM | EBPF_DW;  // r0 = *(u64 *)(r1 + 1024)
  ins[0].dst_reg = EBPF_REG_0;
  ins[0].src_reg = EBPF_REG_1;
  ins[0].off = 1024;
  ins[1].code = BPF_JMP | EBPF_EXIT;
  prm->ins = ins;
  prm->nb_ins = 2;
  prm->prog_arg.type = RTE_BPF_ARG_PTR_MBUF;
  prm->prog_arg.size = 65536;
  auto start = request(2, 2, 1, port.name, 0, tool.ring, tool.mp, prm);
  EXPECT_EQ(s.handle(start.data(), start.size()), -EINVAL) << "a filter reading past the mbuf loaded";
  EXPECT_TRUE(s.sessions().empty());
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("does not load"), std::string::npos) << log.lines[0];
  // The same program reading inside the mbuf is fine.
  ins[0].off = 8;
  EXPECT_EQ(s.handle(start.data(), start.size()), 0);
  s.detachAll();
  rte_free(ins);
  rte_free(prm);
}

// The reason this server exists: DPDK 22.11's answered a stop while a worker
// could still be copying into the tool's mempool, which the tool then freed.
// Here a worker is held inside rte_eth_rx_burst (in a callback after the
// capture's) and the stop must not return until it has left and passed a
// quiescent state.
struct Held {
  std::atomic<bool> hold{false}, inside{false}, stop{false};
  rte_rcu_qsbr* qsbr = nullptr;
  uint16_t port = 0;
};

uint16_t holdCallback(uint16_t, uint16_t, rte_mbuf**, uint16_t n, uint16_t, void* arg) {
  auto* h = static_cast<Held*>(arg);
  if (n && h->hold.load()) {
    h->inside.store(true);
    while (h->hold.load()) rte_pause();
    h->inside.store(false);
  }
  return n;
}

int heldWorker(void* arg) {
  auto* h = static_cast<Held*>(arg);
  rte_rcu_qsbr_thread_register(h->qsbr, 0);
  rte_rcu_qsbr_thread_online(h->qsbr, 0);
  rte_mbuf* pkts[32];
  while (!h->stop.load()) {
    uint16_t n = rte_eth_rx_burst(h->port, 0, pkts, 32);
    for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(pkts[i]);
    rte_rcu_qsbr_quiescent(h->qsbr, 0);
  }
  rte_rcu_qsbr_thread_offline(h->qsbr, 0);
  rte_rcu_qsbr_thread_unregister(h->qsbr, 0);
  return 0;
}

TEST(Capture, AStopWaitsUntilNoWorkerIsInsideACallback) {
  RingPort& port = dataPort();
  ASSERT_NE(workerLcore(), unsigned(RTE_MAX_LCORE)) << "needs the suite's second lcore";
  Held h;
  h.qsbr = dp::createQsbr(1);
  h.port = port.id;
  Logged log;
  CaptureServer s(h.qsbr, {port.id}, log.fn());
  Tool tool;
  auto start = request(2, 2, 1, port.name, 0, tool.ring, tool.mp);
  ASSERT_EQ(s.handle(start.data(), start.size()), 0);
  const rte_eth_rxtx_callback* cb = rte_eth_add_rx_callback(port.id, 0, holdCallback, &h);
  ASSERT_NE(cb, nullptr);
  ASSERT_EQ(rte_eal_remote_launch(heldWorker, &h, workerLcore()), 0);
  h.hold.store(true);
  port.arrive(0, {udpFrame(4000)});
  while (!h.inside.load()) rte_pause();  // the worker is in rx_burst, after the copy

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    auto stop = request(2, 1, 1, port.name, 0);
    EXPECT_EQ(s.handle(stop.data(), stop.size()), 0);
    stopped.store(true);
  });
  // However long the worker stays inside, the stop has not returned: there
  // is no timing here that could pass a server that does not wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(stopped.load()) << "the stop returned while a worker was inside a callback";
  h.hold.store(false);
  stopper.join();
  EXPECT_TRUE(stopped.load());
  EXPECT_EQ(tool.take().size(), 1u);
  h.stop.store(true);
  rte_eal_wait_lcore(workerLcore());
  rte_eth_remove_rx_callback(port.id, 0, cb);  // the worker is gone: safe to free
  rte_free(const_cast<rte_eth_rxtx_callback*>(cb));
  rte_free(h.qsbr);
}

// A secondary process's multi-process socket, bound where EAL binds one
// ("mp_socket_<pid>_<tsc>"); closing it is what a killed tool leaves: the
// file, with nothing bound to it.
struct FakeToolSocket {
  std::string dir, path;
  int fd = -1;
  char addr[sizeof(sockaddr_un::sun_path)] = {};  // as EAL hands it: sun_path
  const char* peer() const { return addr; }
  FakeToolSocket() {
    char tmpl[] = "/tmp/gwlb-capture-XXXXXX";
    dir = mkdtemp(tmpl);
    path = dir + "/mp_socket_" + std::to_string(getpid()) + "_1a2b3c";
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
    std::memcpy(addr, a.sun_path, sizeof addr);
  }
  void die() {
    if (fd >= 0) close(fd);
    fd = -1;
  }
  ~FakeToolSocket() {
    die();
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

// Issue 24 item 10: a tool killed while it captures sends no stop. Before,
// its callbacks stayed attached (the workers copied every packet into a ring
// nobody read) and every later capture of those queues was refused with
// EEXIST until gwlbd restarted. Now detachGone() sees that its socket is
// gone and detaches them.
TEST(Capture, TheCapturesOfAToolThatDiedAreDetached) {
  RingPort& port = dataPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  auto* tool = new Tool;
  std::string pool_name = tool->mp->name;
  FakeToolSocket sock;
  auto start = request(2, 2, 3, port.name, kAll, tool->ring, tool->mp);
  ASSERT_EQ(s.handle(start.data(), start.size(), sock.peer()), 0);
  ASSERT_EQ(s.sessions().size(), 4u);
  EXPECT_EQ(s.detachGone(), 0u) << "the tool is alive";
  port.arrive(0, {udpFrame(5000)});
  EXPECT_EQ(port.turn(0), 1u);
  EXPECT_EQ(tool->take().size(), 2u);

  sock.die();  // kill -9: no stop request
  EXPECT_EQ(s.detachGone(), 4u);
  EXPECT_TRUE(s.sessions().empty());
  EXPECT_EQ(s.totals().detached, 4u);
  EXPECT_EQ(s.totals().stopped, 0u);
  ASSERT_FALSE(log.lines.empty());
  EXPECT_NE(log.lines.back().find("pid " + std::to_string(getpid())), std::string::npos) << log.lines.back();
  EXPECT_NE(log.lines.back().find("is gone: detached its 4 queue callback(s)"), std::string::npos)
      << log.lines.back();
  // Its ring and mempool stay (gwlbd cannot free another process's mempool).
  EXPECT_NE(rte_mempool_lookup(pool_name.c_str()), nullptr);
  delete tool;

  // The next capture of the same queues starts.
  Tool next;
  auto again = request(2, 2, 3, port.name, kAll, next.ring, next.mp);
  ASSERT_EQ(s.handle(again.data(), again.size()), 0) << "still refused: the dead capture holds the queues";
  port.arrive(1, {udpFrame(5001)});
  EXPECT_EQ(port.turn(1), 1u);
  EXPECT_EQ(next.take().size(), 2u);
  EXPECT_EQ(s.detachGone(), 0u) << "a capture without a peer is never taken for gone";
  s.detachAll();
}

// gwlbctl capture stop: detaches by hand, by device and queue.
TEST(Capture, DetachByHand) {
  RingPort& port = dataPort();
  Logged log;
  CaptureServer s(nullptr, {port.id}, log.fn());
  Tool tool;
  FakeToolSocket sock;
  auto start = request(2, 2, 3, port.name, kAll, tool.ring, tool.mp);
  ASSERT_EQ(s.handle(start.data(), start.size(), sock.peer()), 0);
  std::string why;
  EXPECT_EQ(s.detach("net_nope", -1, why), -1);
  EXPECT_NE(why.find("net_nope"), std::string::npos) << why;
  EXPECT_EQ(s.detach(port.name, 1, why), 2) << "queue 1: its RX and TX callbacks";
  ASSERT_EQ(s.sessions().size(), 2u);
  for (const auto& ss : s.sessions()) EXPECT_EQ(ss.queue, 0);
  port.arrive(1, {udpFrame(6000)});
  EXPECT_EQ(port.turn(1), 1u);
  EXPECT_TRUE(tool.take().empty()) << "queue 1 is no longer copied";
  EXPECT_EQ(s.detach("", -1, why), 2);
  EXPECT_TRUE(s.sessions().empty());
  EXPECT_EQ(s.detach("", -1, why), 0);
  EXPECT_EQ(s.totals().detached, 4u);
  EXPECT_NE(rte_mempool_lookup(tool.mp->name), nullptr) << "a live tool's mempool is its own";
  // The tool's own stop finds nothing to stop.
  auto stop = request(2, 1, 3, port.name, kAll);
  EXPECT_EQ(s.handle(stop.data(), stop.size(), sock.peer()), -EINVAL);
}

// The peer address EAL gives: a secondary's socket names its pid.
TEST(Capture, ThePeerAddressNamesTheTool) {
  dp::CapturePeer p;
  std::string why;
  const char good[] = "/var/run/dpdk/gwlb/mp_socket_4242_5d1e0a3b9c";
  ASSERT_TRUE(dp::parseCapturePeer(good, sizeof good, p, why)) << why;
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.path, good);
  for (const char* bad : {"", "/var/run/dpdk/gwlb/mp_socket", "/var/run/dpdk/gwlb/mp_socket_x_1",
                          "/var/run/dpdk/gwlb/mp_socket_12", "/var/run/dpdk/gwlb/mp_socket_0_ab",
                          "/tmp/other_12_ab", "/var/run/dpdk/gwlb/mp_socket_99999999999_ab"}) {
    EXPECT_FALSE(dp::parseCapturePeer(bad, std::strlen(bad) + 1, p, why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  std::string longer(200, 'a');
  EXPECT_FALSE(dp::parseCapturePeer(longer.data(), longer.size(), p, why));
}

}  // namespace
}  // namespace gwlb::dptest
