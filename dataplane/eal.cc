#include "dataplane/eal.h"

#include <net/if.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace gwlb::dp {

void initEal(const std::string& prog, const std::vector<std::string>& args) {
  std::vector<std::string> store;
  store.push_back(prog);
  store.insert(store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : store) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (rte_eal_init(int(store.size()), argv.data()) < 0)
    throw std::runtime_error(std::string("rte_eal_init failed: ") + rte_strerror(rte_errno));
}

std::vector<std::string> unstartedVdevs() {
  std::vector<std::string> out;
  const rte_devargs* da = nullptr;
  RTE_EAL_DEVARGS_FOREACH("vdev", da) {
    uint16_t port = 0;
    if (rte_eth_dev_get_port_by_name(da->name, &port) == 0) continue;
    std::string what = da->name;
    // Input files the pcap driver needs (a missing one is the usual mistake).
    std::string args = da->args ? da->args : "";
    size_t pos = 0;
    while (pos < args.size()) {
      size_t end = args.find(',', pos);
      if (end == std::string::npos) end = args.size();
      std::string kv = args.substr(pos, end - pos);
      pos = end + 1;
      for (const char* key : {"rx_pcap=", "rx_tx_pcap="}) {
        if (kv.rfind(key, 0) != 0) continue;
        std::string file = kv.substr(std::strlen(key));
        if (::access(file.c_str(), R_OK) != 0)
          what += " (" + std::string(key, std::strlen(key) - 1) + " file " + file + ": " +
                  std::strerror(errno) + ")";
      }
    }
    out.push_back(what);
  }
  return out;
}

rte_mempool* createMbufPool(const std::string& name, unsigned n, unsigned data_room) {
  rte_mempool* p = rte_pktmbuf_pool_create(name.c_str(), n, 256, 0,
                                           uint16_t(data_room + RTE_PKTMBUF_HEADROOM),
                                           int(rte_socket_id()));
  if (!p)
    throw std::runtime_error("mbuf pool '" + name + "' (" + std::to_string(n) +
                             " mbufs): " + rte_strerror(rte_errno));
  return p;
}

rte_rcu_qsbr* createQsbr(unsigned max_threads) {
  size_t sz = rte_rcu_qsbr_get_memsize(max_threads);
  auto* v = static_cast<rte_rcu_qsbr*>(rte_zmalloc("gwlb_qsbr", sz, RTE_CACHE_LINE_SIZE));
  if (!v || rte_rcu_qsbr_init(v, max_threads) != 0)
    throw std::runtime_error("cannot create the RCU QSBR variable");
  return v;
}

rte_ring* createRing(const std::string& name, unsigned size, bool single_producer) {
  unsigned flags = RING_F_SC_DEQ | (single_producer ? RING_F_SP_ENQ : 0);
  rte_ring* r = rte_ring_create(name.c_str(), size, int(rte_socket_id()), flags);
  if (!r) throw std::runtime_error("ring '" + name + "': " + rte_strerror(rte_errno));
  return r;
}

namespace {

// Value of `key` in a vdev's argument string ("iface=x,framesz=2048,..."), or "".
std::string devArg(const rte_eth_dev_info& info, const std::string& key) {
  const rte_devargs* da = info.device ? rte_dev_devargs(info.device) : nullptr;
  if (!da || !da->args) return "";
  std::string args = da->args;
  size_t pos = 0;
  while (pos <= args.size()) {
    size_t end = args.find(',', pos);
    if (end == std::string::npos) end = args.size();
    std::string kv = args.substr(pos, end - pos);
    if (kv.rfind(key + "=", 0) == 0) return kv.substr(key.size() + 1);
    pos = end + 1;
  }
  return "";
}

// Sets the MTU of the kernel interface behind a port (what net_af_packet's and
// net_tap's own MTU operation does). Returns 0 or an errno value.
int setKernelMtu(const char* ifname, unsigned mtu) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0) return errno;
  ifreq ifr{};
  std::snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
  ifr.ifr_mtu = int(mtu);
  int rc = ioctl(fd, SIOCSIFMTU, &ifr) == 0 ? 0 : errno;
  if (rc == 0 && (ioctl(fd, SIOCGIFMTU, &ifr) != 0 || unsigned(ifr.ifr_mtu) != mtu)) rc = EIO;
  close(fd);
  return rc;
}

}  // namespace

std::string setPortMtu(uint16_t port, unsigned mtu, const std::string& key) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  rte_eth_dev_get_name_by_port(port, name);
  const std::string who = "port " + std::to_string(port) + " (" + name + ")";
  const std::string want = "MTU " + std::to_string(mtu) + " from " + key;
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0)
    throw std::runtime_error(who + ": cannot read device info");
  int rc = mtu > UINT16_MAX ? -EINVAL : rte_eth_dev_set_mtu(port, uint16_t(mtu));
  if (rc == 0) {
    uint16_t now = 0;
    rte_eth_dev_get_mtu(port, &now);
    return who + ": MTU " + std::to_string(now);
  }
  const std::string range = "DPDK says the device takes MTU " + std::to_string(info.min_mtu) +
                            ".." + std::to_string(info.max_mtu) + ", frames up to " +
                            std::to_string(info.max_rx_pktlen) + " bytes";
  // No MTU operation at all: a capture file or a sink has no frame size limit
  // to raise; accept what the device says it takes.
  if (rc == -ENOTSUP && mtu >= info.min_mtu && mtu <= info.max_mtu &&
      uint64_t(mtu) + 18 <= info.max_rx_pktlen)
    return who + ": no MTU setting on this device (" + range + "): MTU " + std::to_string(mtu) +
           " accepted";
  // A device over a kernel interface (net_af_packet, net_tap): DPDK 22.11
  // advertises 1518/1522-byte frames for them and refuses any larger MTU before
  // the driver is asked, although they carry what the kernel interface (and,
  // for net_af_packet, the ring's frame size) allows. Set the kernel
  // interface's MTU as their drivers do, after checking the ring for af_packet.
  char ifname[IF_NAMESIZE] = {};
  if (rc == -EINVAL && info.if_index != 0 && if_indextoname(info.if_index, ifname)) {
    const bool afp = std::string(name).rfind("net_af_packet", 0) == 0;
    if (afp) {
      std::string fs = devArg(info, "framesz");
      unsigned framesz = fs.empty() ? 2048 : unsigned(std::strtoul(fs.c_str(), nullptr, 0));
      // The ring frame holds the tpacket2 header (52 bytes) and the Ethernet
      // frame (MTU + 14, + 4 with a VLAN tag).
      constexpr unsigned kRingHeader = 52, kEthOverhead = 18;
      if (mtu + kEthOverhead + kRingHeader > framesz)
        throw std::runtime_error(
            who + " on " + ifname + " refused " + want + ": its ring frames (framesz " +
            std::to_string(framesz) + ") hold at most MTU " +
            std::to_string(framesz > kRingHeader + kEthOverhead ? framesz - kRingHeader - kEthOverhead
                                                                : 0) +
            ". Give the vdev framesz=" +
            std::to_string((mtu + kEthOverhead + kRingHeader + 15) / 16 * 16) +
            " (a multiple of 16; blocksz a multiple of 4096 holding it), or lower " + key);
    }
    int krc = setKernelMtu(ifname, mtu);
    if (krc == 0)
      return who + ": MTU " + std::to_string(mtu) + " set on kernel interface " + ifname +
             " (DPDK's own check refused it: " + range + ")";
    throw std::runtime_error(who + " refused " + want + ": " + range + ", and kernel interface " +
                             ifname + " refused it too (" + std::strerror(krc) + "). Lower " +
                             key);
  }
  throw std::runtime_error(who + " refused " + want + ": " + rte_strerror(-rc) + "; " + range +
                           ". Lower " + key + " or use a port that takes larger frames");
}

}  // namespace gwlb::dp
