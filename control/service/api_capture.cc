// Packet captures as the control API shows them (dataplane/capture.h): the
// `capture` part of `status`, and `capture.stop` (gwlbctl capture stop),
// which detaches captures by hand. Control thread.
#include "control/api/api_params.h"
#include "control/service/process_methods.h"

namespace gwlb::ctl {

using nlohmann::json;

json captureJson(const CaptureView& v) {
  const dp::CaptureServer* capture = v.server.get();
  json c = {{"available", capture && v.why_not.empty()}};
  if (!v.why_not.empty()) c["why_not"] = v.why_not;
  json sessions = json::array();
  if (capture) {
    for (const dp::CaptureServer::Session& s : capture->sessions())
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
    dp::CaptureServer::Totals t = capture->totals();
    c["started"] = t.started;
    c["stopped"] = t.stopped;
    c["refused"] = t.refused;
    c["detached"] = t.detached;
  }
  c["sessions"] = sessions;
  return c;
}

json captureStopMethod(const CaptureView& v, const json& p) {
  Params pr(p, {"device", "queue"});
  std::string device = pr.has("device") ? pr.str("device") : std::string();
  int queue = pr.has("queue") ? int(pr.num("queue", 0, 65534)) : -1;
  if (!v.server) notFound("packet capture is off" + (v.why_not.empty() ? "" : ": " + v.why_not));
  std::string why;
  long n = v.server->detach(device, queue, why);
  if (n < 0) notFound(why);
  return {{"detached", n}, {"capture", captureJson(v)}};
}

}  // namespace gwlb::ctl
