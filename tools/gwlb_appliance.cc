// gwlb-appliance: a small reference appliance for testing a gateway.
//
// Receives Geneve on UDP 6081 (a kernel socket), validates the Geneve header
// (version 0, option length inside the packet, O bit clear, a protocol type
// it knows: 0x0800 / 0x86DD for the aws format, 0x6558 for the ethernet
// format), parses the inner packet, applies the optional drop rules and sends
// every passed packet back to the sender's address on UDP 6081 with the
// Geneve header and payload copied verbatim (the kernel swaps the outer
// addresses because it replies from its own socket). With --tun NAME it
// hands each inner packet to the kernel instead, through a tun device, and
// returns what the kernel forwards (tools/appliance_tun.h). It counts everything,
// per rule and per flow direction, and serves HTTP:
//   GET /health          200 "ok" or 503 "unhealthy"
//   POST|GET /health/fail   from now on /health answers 503
//   POST|GET /health/ok     from now on /health answers 200
//   GET /stats           JSON counters (see --help)
//   POST|GET /stats/reset   zero every counter and forget the flows
//
// Usage: gwlb-appliance [--listen ADDR] [--port N] [--reply-port N]
//                       [--http ADDR:PORT] [--drop-dport N]... [--drop-proto P]...
//                       [--unhealthy] [--blackhole] [--name NAME] [--max-flows N] [--quiet]
//                       [--tun NAME [--tun-flows N] [--tun-idle SECONDS]]
//                       [--mirror-sink FILE] [--option-class C]
//                       [--bypass-after-bytes N [--bypass-seconds S]]
// With --mirror-sink FILE it is a passive tool behind a mirror group: it
// writes what each copy carried to FILE (pcap) and sends nothing back.
// gwlb's own options (class --option-class) are read on every packet: the
// mirror option's class id and direction, the tag option's value, counted
// in /stats.
//
// --bypass-after-bytes is an IDS's stream depth: once a flow's packets have
// brought N bytes (inner packets, both directions), every packet of it it
// returns carries gwlb's bypass option, asking the gateway to stop sending it
// the flow for S seconds (0: the flow's life; docs/product-rules.md
// "Appliance-requested bypass"). With --tun the same: what the kernel
// forwards of the flow goes back with the option from then on.
#include <utility>  // before Boost 1.74 Asio under C++20 (std::exchange)

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/geneve.h"
#include "tools/appliance_options.h"
#include "tools/appliance_packet.h"
#include "tools/appliance_tun.h"
#include "version.h"

namespace asio = boost::asio;
using asio::ip::tcp;
using asio::ip::udp;
using gwlb::appliance::Endpoint;
using gwlb::appliance::FlowKey;
using gwlb::appliance::Inner;
using gwlb::appliance::parseIp;

namespace {

struct Rule {
  enum Kind { DPort, Proto } kind;
  unsigned value;
  uint64_t drops = 0;
  std::string describe() const {
    return kind == DPort ? "dport " + std::to_string(value) : "proto " + std::to_string(value);
  }
};

struct Options {
  std::string listen = "0.0.0.0";
  uint16_t port = 6081;
  uint16_t reply_port = 6081;
  std::string http_addr = "0.0.0.0";
  uint16_t http_port = 8080;
  bool http = true;
  bool unhealthy = false;
  bool blackhole = false;  // forwards nothing, while its HTTP health stays as it is
  std::string name = "appliance";
  size_t max_flows = 100000;
  bool quiet = false;
  std::vector<Rule> rules;
  gwlb::appliance::TunOptions tun;  // tun.device empty: no tun mode
  std::string mirror_sink;          // pcap path: a passive tool (nothing sent back)
  uint64_t bypass_after_bytes = 0;  // 0: never asks for a bypass
  uint32_t bypass_seconds = 0;      // 0: for the flow's life
  uint16_t option_class = gwlb::kGwlbOptionClassDefault;
};

struct FlowStats {
  uint64_t a_to_b = 0, b_to_a = 0, bytes = 0, dropped = 0;
  uint64_t bypass_asked = 0;  // returned packets that carried the bypass option
  std::string first_src;  // the side that sent the first packet seen
  std::string format;
};

class Appliance {
 public:
  Appliance(asio::io_context& io, Options opt)
      : io_(io), opt_(std::move(opt)), sock_(io), acceptor_(io), signals_(io, SIGINT, SIGTERM) {
    unhealthy_ = opt_.unhealthy;
  }

  void start() {
    udp::endpoint ep(asio::ip::make_address(opt_.listen), opt_.port);
    sock_.open(ep.protocol());
    sock_.set_option(asio::socket_base::reuse_address(true));
    sock_.set_option(asio::socket_base::receive_buffer_size(4 << 20));
    sock_.set_option(asio::socket_base::send_buffer_size(4 << 20));
    sock_.bind(ep);
    if (opt_.http) {
      tcp::endpoint hep(asio::ip::make_address(opt_.http_addr), opt_.http_port);
      acceptor_.open(hep.protocol());
      acceptor_.set_option(asio::socket_base::reuse_address(true));
      acceptor_.bind(hep);
      acceptor_.listen();
      accept();
    }
    if (!opt_.tun.device.empty()) {
      opt_.tun.reply_port = opt_.reply_port;
      tun_ = std::make_unique<gwlb::appliance::TunPath>(io_, sock_, opt_.tun);
      tun_->start();
    }
    signals_.async_wait([this](const boost::system::error_code&, int sig) {
      spdlog::info("{}: signal {}, stopping; {}", opt_.name, sig, stats().dump());
      io_.stop();
    });
    std::string rules;
    for (auto& r : opt_.rules) rules += (rules.empty() ? "" : ", ") + r.describe();
    spdlog::info("{}: Geneve on {}:{} (replies to sender:{}), HTTP on {}, drop rules: {}{}{}",
                 opt_.name, opt_.listen, opt_.port, opt_.reply_port,
                 opt_.http ? opt_.http_addr + ":" + std::to_string(opt_.http_port) : "off",
                 rules.empty() ? "none" : rules, unhealthy_ ? ", health 503" : "",
                 opt_.blackhole ? ", blackhole: forwards nothing" : "");
    if (!opt_.mirror_sink.empty()) {
      if (!sink_.open(opt_.mirror_sink.c_str()))
        throw std::runtime_error("--mirror-sink: cannot write " + opt_.mirror_sink);
      spdlog::info("{}: mirror sink: copies written to {}, nothing sent back", opt_.name, opt_.mirror_sink);
    }
    if (tun_) spdlog::info("{}: tun mode: inner packets through tun device {} (the kernel forwards them)",
                           opt_.name, opt_.tun.device);
    receive();
  }

 private:
  void receive() {
    sock_.async_receive_from(asio::buffer(buf_), from_, [this](boost::system::error_code ec, size_t n) {
      if (!ec) handle(n);
      else if (ec == asio::error::operation_aborted) return;
      else spdlog::warn("{}: receive: {}", opt_.name, ec.message());
      receive();
    });
  }

  void malformed(const char* why) {
    ++malformed_[why];
    if (!opt_.quiet && malformed_[why] <= 3)
      spdlog::warn("{}: malformed Geneve from {}: {}", opt_.name, from_.address().to_string(), why);
  }

  void handle(size_t n) {
    ++packets_;
    bytes_ += n;
    const uint8_t* p = buf_.data();
    if (n < 8) return malformed("truncated");
    unsigned ver = p[0] >> 6;
    size_t optlen = size_t(p[0] & 0x3f) * 4;
    if (ver != 0) return malformed("bad_version");
    if (8 + optlen > n) return malformed("options_truncated");
    if (p[1] & 0x80) return malformed("control_packet");
    uint16_t ptype = uint16_t((p[2] << 8) | p[3]);
    const uint8_t* in = p + 8 + optlen;
    size_t inlen = n - 8 - optlen;
    gwlb::appliance::GwlbOptions go;
    if (!gwlb::appliance::readGwlbOptions(p + 8, optlen, opt_.option_class, go))
      return malformed("gwlb_option");
    if (go.tag) ++tags_[go.tag_value][go.tag_reverse ? 1 : 0];
    if (go.nsi) ++nsi_profiles_[go.nsi_profile][go.nsi_egress ? 1 : 0];
    if (!opt_.mirror_sink.empty()) return sink(go, ptype, in, inlen);
    Inner inner;
    const char* format = go.nsi ? "nsi" : "aws";
    size_t l2_len = 0;  // the ethernet format's inner Ethernet header
    if (ptype == 0x0800 || ptype == 0x86DD) {
      if (!parseIp(in, inlen, inner) || (ptype == 0x0800) != !inner.src.v6)
        return malformed("inner_ip");
    } else if (ptype == 0x6558) {
      format = "ethernet";
      if (inlen < 14) return malformed("inner_ethernet");
      size_t off = 12;
      uint16_t et = uint16_t((in[off] << 8) | in[off + 1]);
      if (et == 0x8100 || et == 0x88a8) {
        if (inlen < 18) return malformed("inner_ethernet");
        off += 4;
        et = uint16_t((in[off] << 8) | in[off + 1]);
      }
      off += 2;
      l2_len = off;
      if (et == 0x0800 || et == 0x86DD) {
        if (!parseIp(in + off, inlen - off, inner)) return malformed("inner_ip");
      } else {
        ++non_ip_;  // ARP and the like: passed back, not in a flow
        return reply(n);
      }
    } else {
      return malformed("bad_protocol");
    }
    ++formats_[format];
    if (opt_.blackhole) {  // a dead forwarding plane behind a live web server
      ++dropped_;
      return;
    }

    // The flow, canonical, and the direction of this packet.
    FlowKey key{inner.proto, inner.src, inner.dst};
    bool forward = true;
    if (inner.dst < inner.src) { std::swap(key.a, key.b); forward = false; }
    FlowStats* fs = nullptr;
    auto it = flows_.find(key);
    if (it != flows_.end()) fs = &it->second;
    else if (flows_.size() < opt_.max_flows) {
      fs = &flows_[key];
      fs->first_src = inner.src.str();
      fs->format = format;
    } else {
      ++flows_overflow_;
    }
    if (fs) {
      (forward ? fs->a_to_b : fs->b_to_a)++;
      fs->bytes += inlen;
    }

    for (auto& r : opt_.rules) {
      bool hit = r.kind == Rule::Proto ? inner.proto == r.value
                                       : inner.has_ports && (inner.dst.port == r.value || inner.src.port == r.value);
      if (hit) {
        ++r.drops;
        ++dropped_;
        if (fs) ++fs->dropped;
        return;
      }
    }
    const bool bypass = opt_.bypass_after_bytes && fs && fs->bytes >= opt_.bypass_after_bytes;
    if (tun_) {
      // The kernel forwards it; its return takes this direction's header,
      // with the bypass option once past the stream depth (counted here as
      // asked: which return carries it is the kernel's doing; tun's
      // bypass_returned counts those).
      const gwlb::appliance::BypassAsk ask{opt_.option_class, opt_.bypass_seconds};
      if (bypass) ++fs->bypass_asked, ++bypass_asked_;
      return tun_->fromGeneve(p, n, 8 + optlen, l2_len, inner, from_, bypass ? &ask : nullptr);
    }
    if (bypass) {
      // Past the stream depth: this return asks the gateway for a bypass.
      size_t m = gwlb::addBypassOption(p, n, out_.data(), out_.size(), opt_.option_class,
                                       opt_.bypass_seconds);
      if (m) {
        ++fs->bypass_asked;
        ++bypass_asked_;
        return send(out_.data(), m);
      }
    }
    reply(n);
  }

  // A passive tool: the copy's inner packet to the pcap, nothing back.
  void sink(const gwlb::appliance::GwlbOptions& go, uint16_t ptype, const uint8_t* in, size_t inlen) {
    if (!go.mirror) return void(++sink_not_mirror_);
    std::vector<uint8_t> f = gwlb::appliance::sinkFrame(ptype, in, inlen);
    if (f.empty()) return malformed("bad_protocol");
    const uint64_t us = uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(
                                     std::chrono::system_clock::now().time_since_epoch()).count());
    if (!sink_.write(f, us)) return void(++sink_write_errors_);
    ++sink_copies_[go.mirror_class][go.mirror_reverse ? 1 : 0];
  }

  void reply(size_t n) { send(buf_.data(), n); }

  void send(const uint8_t* data, size_t n) {
    boost::system::error_code ec;
    udp::endpoint to(from_.address(), opt_.reply_port);
    sock_.send_to(asio::buffer(data, n), to, 0, ec);
    if (ec) { ++send_errors_; return; }
    ++passed_;
    bytes_out_ += n;
  }

  nlohmann::json stats() const {
    nlohmann::json j;
    j["name"] = opt_.name;
    j["healthy"] = !unhealthy_;
    j["packets"] = packets_;
    j["bytes"] = bytes_;
    j["passed"] = passed_;
    j["bytes_out"] = bytes_out_;
    j["dropped"] = dropped_;
    j["send_errors"] = send_errors_;
    j["non_ip"] = non_ip_;
    j["bypass_asked"] = bypass_asked_;
    j["malformed"] = nlohmann::json::object();
    for (auto& [k, v] : malformed_) j["malformed"][k] = v;
    j["formats"] = nlohmann::json::object();
    for (auto& [k, v] : formats_) j["formats"][k] = v;
    j["rules"] = nlohmann::json::array();
    for (auto& r : opt_.rules) j["rules"].push_back({{"rule", r.describe()}, {"drops", r.drops}});
    j["flows_overflow"] = flows_overflow_;
    if (tun_) j["tun"] = tun_->stats();
    // Per tag (the tag option's value): packets in each direction.
    j["tags"] = nlohmann::json::object();
    for (auto& [t, c] : tags_) j["tags"][std::to_string(t)] = {{"forward", c[0]}, {"reverse", c[1]}};
    // The nsi format's profile IDs (a class's tag there), by the network ID's D bit.
    j["nsi_profiles"] = nlohmann::json::object();
    for (auto& [t, c] : nsi_profiles_)
      j["nsi_profiles"][std::to_string(t)] = {{"ingress", c[0]}, {"egress", c[1]}};
    if (!opt_.mirror_sink.empty()) {
      nlohmann::json m = {{"not_mirror", sink_not_mirror_}, {"write_errors", sink_write_errors_},
                          {"classes", nlohmann::json::object()}};
      for (auto& [k, c] : sink_copies_)
        m["classes"][std::to_string(k)] = {{"forward", c[0]}, {"reverse", c[1]}};
      j["mirror_sink"] = m;
    }
    j["flows"] = nlohmann::json::array();
    for (auto& [k, f] : flows_) {
      j["flows"].push_back({{"proto", k.proto}, {"a", k.a.str()}, {"b", k.b.str()},
                            {"a_to_b", f.a_to_b}, {"b_to_a", f.b_to_a}, {"bytes", f.bytes},
                            {"dropped", f.dropped}, {"first_src", f.first_src}, {"format", f.format},
                            {"bypass_asked", f.bypass_asked}});
    }
    return j;
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) serve(std::make_shared<tcp::socket>(std::move(s)));
      accept();
    });
  }

  void serve(std::shared_ptr<tcp::socket> s) {
    auto req = std::make_shared<std::string>();
    auto chunk = std::make_shared<std::array<char, 2048>>();
    auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(5));
    timer->async_wait([s](boost::system::error_code ec) {
      if (!ec) { boost::system::error_code ig; s->close(ig); }
    });
    readMore(s, req, chunk, timer);
  }

  void readMore(std::shared_ptr<tcp::socket> s, std::shared_ptr<std::string> req,
                std::shared_ptr<std::array<char, 2048>> chunk, std::shared_ptr<asio::steady_timer> timer) {
    s->async_read_some(asio::buffer(*chunk), [=, this](boost::system::error_code ec, size_t n) {
      if (ec) { timer->cancel(); return; }
      req->append(chunk->data(), n);
      if (req->find("\r\n\r\n") == std::string::npos && req->find("\n\n") == std::string::npos) {
        if (req->size() > 16384) { timer->cancel(); return; }
        return readMore(s, req, chunk, timer);
      }
      timer->cancel();
      respond(s, *req);
    });
  }

  void respond(std::shared_ptr<tcp::socket> s, const std::string& req) {
    std::string line = req.substr(0, req.find_first_of("\r\n"));
    std::string method = line.substr(0, line.find(' '));
    std::string path;
    if (auto sp = line.find(' '); sp != std::string::npos) {
      auto sp2 = line.find(' ', sp + 1);
      path = line.substr(sp + 1, sp2 == std::string::npos ? std::string::npos : sp2 - sp - 1);
    }
    if (auto q = path.find('?'); q != std::string::npos) path.resize(q);
    int code = 200;
    std::string body, ctype = "text/plain";
    bool get = method == "GET" || method == "HEAD", post = method == "POST";
    if (path == "/health" && get) {
      code = unhealthy_ ? 503 : 200;
      body = unhealthy_ ? "unhealthy\n" : "ok\n";
    } else if (path == "/health/fail" && (get || post)) {
      if (!unhealthy_) spdlog::info("{}: health set to 503", opt_.name);
      unhealthy_ = true;
      body = "health now 503\n";
    } else if (path == "/health/ok" && (get || post)) {
      if (unhealthy_) spdlog::info("{}: health set to 200", opt_.name);
      unhealthy_ = false;
      body = "health now 200\n";
    } else if (path == "/stats" && get) {
      body = stats().dump(1) + "\n";
      ctype = "application/json";
    } else if (path == "/stats/reset" && (get || post)) {
      packets_ = bytes_ = passed_ = bytes_out_ = dropped_ = send_errors_ = non_ip_ = flows_overflow_ = 0;
      bypass_asked_ = 0;
      malformed_.clear();
      formats_.clear();
      flows_.clear();
      tags_.clear();
      nsi_profiles_.clear();
      sink_copies_.clear();
      sink_not_mirror_ = sink_write_errors_ = 0;
      for (auto& r : opt_.rules) r.drops = 0;
      if (tun_) tun_->reset();
      body = "reset\n";
    } else if (path == "/health" || path == "/stats" || path == "/health/fail" || path == "/health/ok" ||
               path == "/stats/reset") {
      code = 405;
      body = "method not allowed\n";
    } else {
      code = 404;
      body = "not found\n";
    }
    const char* reason = code == 200 ? "OK" : code == 503 ? "Service Unavailable"
                       : code == 405 ? "Method Not Allowed" : "Not Found";
    auto out = std::make_shared<std::string>(
        "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\nContent-Type: " + ctype +
        "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
        (method == "HEAD" ? std::string() : body));
    asio::async_write(*s, asio::buffer(*out), [s, out](boost::system::error_code, size_t) {
      boost::system::error_code ig;
      s->shutdown(tcp::socket::shutdown_both, ig);
      s->close(ig);
    });
  }

  asio::io_context& io_;
  Options opt_;
  udp::socket sock_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  std::array<uint8_t, 65536> buf_{};
  std::array<uint8_t, 65536 + 8> out_{};  // a return with the bypass option added
  udp::endpoint from_;
  bool unhealthy_ = false;
  uint64_t packets_ = 0, bytes_ = 0, passed_ = 0, bytes_out_ = 0, dropped_ = 0, send_errors_ = 0,
           non_ip_ = 0, flows_overflow_ = 0, bypass_asked_ = 0;
  std::map<std::string, uint64_t> malformed_, formats_;
  std::map<FlowKey, FlowStats> flows_;
  std::unique_ptr<gwlb::appliance::TunPath> tun_;
  std::map<uint32_t, std::array<uint64_t, 2>> tags_;         // tag -> packets forward, reverse
  std::map<uint64_t, std::array<uint64_t, 2>> nsi_profiles_;  // nsi profile ID -> ingress, egress
  std::map<uint16_t, std::array<uint64_t, 2>> sink_copies_;  // mirror class id -> copies
  uint64_t sink_not_mirror_ = 0, sink_write_errors_ = 0;
  gwlb::appliance::PcapSink sink_;
};

[[noreturn]] void usage(int rc) {
  std::fprintf(rc ? stderr : stdout, R"(usage: gwlb-appliance [options]
  --listen ADDR        address of the Geneve socket (default 0.0.0.0)
  --port N             Geneve UDP port (default 6081)
  --reply-port N       UDP port replies go to on the sender (default 6081)
  --http ADDR:PORT     HTTP health/stats endpoint (default 0.0.0.0:8080); "off" disables it
  --drop-dport N       drop TCP/UDP/SCTP packets to or from port N (both directions of
                       a flow to port N); repeatable
  --drop-proto P       drop packets of IP protocol P (tcp, udp, icmp, icmpv6 or 0..255); repeatable
  --unhealthy          start with GET /health answering 503
  --blackhole          forward nothing (counted as dropped); GET /health still answers
  --name NAME          name in logs and /stats (default appliance)
  --max-flows N        most flows tracked in /stats (default 100000)
  --quiet              log only errors
  --tun NAME           tun mode: write each inner IP packet to tun device NAME
                       for the kernel to forward (and filter), and wrap what comes out
                       of it again with its flow's Geneve header (docs/lab.md); the
                       ethernet format's inner Ethernet header goes with the Geneve one
  --tun-flows N        most flows the tun mode remembers (default 65536)
  --tun-idle SECONDS   a tun flow idle this long is forgotten (default 350)
  --mirror-sink FILE   a passive tool: write the inner packet of each mirror copy to FILE
                       (pcap; aws format behind a zero Ethernet header) and send nothing back
  --bypass-after-bytes N  once a flow brought N bytes (inner packets, both ways), return
                       its packets with gwlb's bypass option (an IDS's stream depth)
  --bypass-seconds S   the bypass asked for lasts S seconds (default 0: the flow's life)
  --option-class C     Geneve class of gwlb's options (default 0xFF01: node.geneve_option_class)
  --version            print the version and exit
HTTP: GET /health (200 or 503), GET|POST /health/fail, GET|POST /health/ok,
      GET /stats (JSON), GET|POST /stats/reset
)");
  std::exit(rc);
}

unsigned parseNum(const std::string& opt, const std::string& v, unsigned lo, unsigned hi) {
  try {
    size_t pos = 0;
    unsigned long x = std::stoul(v, &pos, 10);
    if (pos == v.size() && x >= lo && x <= hi && v[0] != '-' && v[0] != '+') return unsigned(x);
  } catch (...) {
  }
  std::fprintf(stderr, "gwlb-appliance: %s: '%s' is not an integer in %u..%u\n", opt.c_str(), v.c_str(), lo, hi);
  std::exit(2);
}

std::string checkAddr(const std::string& opt, const std::string& v) {
  boost::system::error_code ec;
  asio::ip::make_address(v, ec);
  if (ec) {
    std::fprintf(stderr, "gwlb-appliance: %s: '%s' is not an IP address\n", opt.c_str(), v.c_str());
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "gwlb-appliance: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return args[++i];
    };
    if (a == "-h" || a == "--help") usage(0);
    else if (a == "--version") {
      std::printf("gwlb-appliance %s\n", gwlb::versionText());
      std::exit(0);
    }
    else if (a == "--listen") opt.listen = checkAddr(a, value());
    else if (a == "--port") opt.port = uint16_t(parseNum(a, value(), 1, 65535));
    else if (a == "--reply-port") opt.reply_port = uint16_t(parseNum(a, value(), 1, 65535));
    else if (a == "--http") {
      std::string v = value();
      if (v == "off") { opt.http = false; continue; }
      auto c = v.rfind(':');
      if (c == std::string::npos || c == 0) {
        std::fprintf(stderr, "gwlb-appliance: --http: '%s' is not ADDR:PORT (or off)\n", v.c_str());
        return 2;
      }
      std::string host = v.substr(0, c);
      if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      opt.http_addr = checkAddr(a, host);
      opt.http_port = uint16_t(parseNum(a, v.substr(c + 1), 1, 65535));
    } else if (a == "--drop-dport") {
      opt.rules.push_back({Rule::DPort, parseNum(a, value(), 1, 65535)});
    } else if (a == "--drop-proto") {
      std::string v = value();
      unsigned p;
      if (v == "tcp") p = 6;
      else if (v == "udp") p = 17;
      else if (v == "icmp") p = 1;
      else if (v == "icmpv6") p = 58;
      else p = parseNum(a, v, 0, 255);
      opt.rules.push_back({Rule::Proto, p});
    } else if (a == "--unhealthy") opt.unhealthy = true;
    else if (a == "--blackhole") opt.blackhole = true;
    else if (a == "--name") opt.name = value();
    else if (a == "--max-flows") opt.max_flows = parseNum(a, value(), 0, 10000000);
    else if (a == "--quiet") opt.quiet = true;
    else if (a == "--tun") opt.tun.device = value();
    else if (a == "--tun-flows") opt.tun.max_flows = parseNum(a, value(), 1, 10000000);
    else if (a == "--tun-idle") opt.tun.idle_seconds = parseNum(a, value(), 1, 86400);
    else if (a == "--mirror-sink") opt.mirror_sink = value();
    else if (a == "--bypass-after-bytes") opt.bypass_after_bytes = parseNum(a, value(), 1, 4000000000u);
    else if (a == "--bypass-seconds") opt.bypass_seconds = parseNum(a, value(), 0, 3600);
    else if (a == "--option-class") {
      std::string v = value();
      char* end = nullptr;
      unsigned long c = std::strtoul(v.c_str(), &end, 0);
      if (v.empty() || *end || c > 0xFFFF) {
        std::fprintf(stderr, "gwlb-appliance: --option-class: '%s' is not 0..0xFFFF\n", v.c_str());
        return 2;
      }
      opt.option_class = uint16_t(c);
    } else {
      std::fprintf(stderr, "gwlb-appliance: unknown argument '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
  if (opt.quiet) spdlog::set_level(spdlog::level::err);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  try {
    asio::io_context io;
    Appliance app(io, opt);
    app.start();
    io.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gwlb-appliance: %s\n", e.what());
    return 1;
  }
  return 0;
}
