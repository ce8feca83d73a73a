// Packet capture on the control thread (dataplane/capture.h): the once-a-
// second check that detaches the captures of a tool that is gone, and the
// control API's capture.stop (gwlbctl capture stop) that detaches by hand.
#include <spdlog/spdlog.h>

#include "control/api/api_params.h"
#include "control/daemon/daemon.h"

namespace gwlb::ctl {

using nlohmann::json;

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
