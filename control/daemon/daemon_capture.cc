// Packet capture on the control thread (dataplane/capture.h): the capture
// server started with the control loop, the captures as the API shows them,
// the once-a-second check that detaches the captures of a tool that is gone,
// and the control API's capture.stop (gwlbctl capture stop) that detaches by hand.
#include <rte_eal.h>

#include <spdlog/spdlog.h>

#include <filesystem>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"

namespace gwlb::ctl {

using nlohmann::json;

// Packet capture: dpdk-dumpcap / dpdk-pdump attach as secondary processes,
// which needs the EAL's shared memory (hugepages, no --in-memory or
// --no-shconf). Captures may cover every queue of the data ports.
void Daemon::startCapture() {
  std::vector<uint16_t> ports;
  for (uint16_t p = 0; p < n_ports_; ++p) ports.push_back(p);
  try {
    capture_ = std::make_unique<dp::CaptureServer>(
        qsbr_, std::move(ports), [](int level, const std::string& line) {
          spdlog::log(level ? spdlog::level::warn : spdlog::level::info, "{}", line);
        });
  } catch (const std::exception& e) {
    capture_why_ = e.what();
    spdlog::warn("{}", capture_why_);
    return;
  }
  if (!capture_->listen(capture_why_)) {
    capture_.reset();
    spdlog::info("packet capture: off: {}", capture_why_);
  } else if (!rte_eal_has_hugepages()) {
    capture_why_ = "the EAL runs without hugepages (--no-huge): no secondary process can attach";
    spdlog::info("packet capture: off: {}", capture_why_);
  } else {
    spdlog::info("packet capture: dpdk-dumpcap can attach (--file-prefix {})",
                 std::filesystem::path(rte_eal_get_runtime_dir()).filename().string());
  }
}

// Packet captures attached by dpdk-dumpcap / dpdk-pdump (dataplane/capture.h).
json Daemon::captureJson() const {
  json c = {{"available", capture_ && capture_why_.empty()}};
  if (!capture_why_.empty()) c["why_not"] = capture_why_;
  json sessions = json::array();
  if (capture_) {
    for (const dp::CaptureServer::Session& s : capture_->sessions())
      sessions.push_back({{"port", s.port},
                          {"device", s.device},
                          {"queue", s.queue},
                          {"direction", s.rx ? "rx" : "tx"},
                          {"format", s.pcapng ? "pcapng" : "mbuf"},
                          {"filter", s.filtered},
                          {"snaplen", s.snaplen},
                          {"copied", s.accepted},
                          {"filtered_out", s.filtered_out},
                          {"no_mbuf", s.nombuf},
                          {"ring_full", s.ringfull}});
    dp::CaptureServer::Totals t = capture_->totals();
    c["started"] = t.started;
    c["stopped"] = t.stopped;
    c["refused"] = t.refused;
    c["detached"] = t.detached;
  }
  c["sessions"] = sessions;
  return c;
}

void Daemon::detachGoneCaptures() {
  if (capture_) capture_->detachGone();
}

json Daemon::apiCaptureStop(const json& p) {
  Params pr(p, {"device", "queue"});
  std::string device = pr.has("device") ? pr.str("device") : std::string();
  int queue = pr.has("queue") ? int(pr.num("queue", 0, 65534)) : -1;
  if (!capture_) notFound("packet capture is off" + (capture_why_.empty() ? "" : ": " + capture_why_));
  std::string why;
  long n = capture_->detach(device, queue, why);
  if (n < 0) notFound(why);
  return {{"detached", n}, {"capture", captureJson()}};
}

}  // namespace gwlb::ctl