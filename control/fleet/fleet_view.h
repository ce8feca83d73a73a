// Whether this gateway can know the appliance of a live connection it holds
// no flow record for (docs/fleet.md "A segment with no record"). A node of a
// fleet knows every flow its peers know only while their records reach it:
// a warm start that got no peer's table, or a peer whose messages stopped
// while it kept running (a cut or congested sync link), leaves records
// missing. Until the peers' refresh records and the flows' own idle expiry
// have replaced them, a TCP segment without SYN and without an entry may
// belong to a connection the fleet holds on another appliance than this
// node's Maglev table would pick; the workers then reset it
// (send_tcp_reset.on_fleet_view_incomplete) instead of guessing.
//
// Pure logic, time passed in (monotonic ns): no Asio, no DPDK. Control
// thread only; nothing here throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gwlb::ctl {

class FleetView {
 public:
  // A peer silent this long (it sends at least every second) may be sending
  // records that do not arrive.
  static constexpr uint64_t kSilentNs = 3'000'000'000ULL;

  // `peers`: the fleet.peers entries, by index.
  explicit FleetView(size_t peers) : peers_(peers) {}

  // How long missing records can matter: a flow that had packets after the
  // loss is re-sent by its peer within a third of its idle timeout (plus a
  // refresh scan pass), one that had none expires within its idle timeout.
  // The caller passes twice the longest TCP idle timeout of its groups.
  void setHorizon(uint64_t ns) { horizon_ns_ = ns; }
  uint64_t horizon() const { return horizon_ns_; }

  // Entry i reaches this node itself (or, `on` false, no longer does): never waited for.
  void ignore(size_t i, bool on = true) {
    if (i < peers_.size()) peers_[i].ignored = on;
  }
  // The warm start ended: with a peer's whole table, or without (timed out;
  // or no peer to ask, `any_peer` false: then there is nobody to miss).
  void warmStartEnded(bool got_table, bool any_peer, uint64_t now);
  // An authenticated message from peer i, sent by its run `epoch`.
  void heard(size_t i, uint64_t epoch, uint64_t now);

  // True when a segment with no record can be picked from this node's own
  // table; false while records may be missing.
  bool complete(uint64_t now) const { return why(now).empty(); }
  // Why the view is incomplete at `now` (empty: complete).
  std::string why(uint64_t now) const;
  // Until when records lost so far can matter (0: none lost).
  uint64_t uncertainUntil() const { return until_ns_; }

 private:
  struct Peer {
    uint64_t heard_ns = 0;  // 0: never
    uint64_t epoch = 0;
    bool ignored = false;
  };
  void extend(uint64_t now, const char* why);

  std::vector<Peer> peers_;
  uint64_t horizon_ns_ = 700'000'000'000ULL;  // twice the default 350 s TCP idle timeout
  bool warm_ended_ = false;
  uint64_t warm_end_ns_ = 0;
  // The warm start got no table: every peer must be heard before the
  // horizon starts running (a peer never heard within a horizon is gone).
  bool wait_all_ = false;
  uint64_t until_ns_ = 0;
  std::string until_why_;
};

}  // namespace gwlb::ctl
