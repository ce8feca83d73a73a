// Packet capture on the control thread (dataplane/capture.h): the capture
// server started with the control loop (the loop's once-a-second tick
// detaches the captures of a tool that is gone). The API shows and detaches
// them through a CaptureView (control/service/api_capture.cc).
#include <rte_eal.h>

#include <spdlog/spdlog.h>

#include <filesystem>

#include "control/daemon/daemon.h"

namespace gwlb::ctl {

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

}  // namespace gwlb::ctl