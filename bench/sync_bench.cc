// Benchmark (never pass/fail): the flow sync wire format (common/sync_codec.h)
// as the control thread runs it. One thread, pinned:
//  - encode: full datagrams of 17 records, HMAC-SHA256 included (what the
//    sender does for every 17 new, moved or refreshed flows);
//  - decode: the same datagrams checked (length, MAC) and decoded (what the
//    receiver does before installing);
//  - bytes per flow: the UDP payload, and the frame on the wire (Ethernet,
//    IPv4, UDP headers, FCS, preamble and gap) divided by 17.
// Every round times each case once over N records (default 1,000,000, as a
// warm start of a 1 M-flow table streams them), a few untimed rounds first.
//
//   sync_bench [--records N] [--rounds R] [--cpu C]
// Prints a summary, then one JSON line (last line of stdout).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "common/sync_codec.h"

namespace gwlb::bench {
namespace {

using Clock = std::chrono::steady_clock;

sync::Record record(uint32_t i) {
  sync::Record r;
  r.key.a[0] = 198, r.key.a[1] = 18, r.key.a[2] = uint8_t(i >> 8), r.key.a[3] = uint8_t(i);
  r.key.b[0] = 203, r.key.b[1] = 0, r.key.b[2] = 113, r.key.b[3] = 1;
  r.key.port_a = uint16_t(1024 + i % 60000);
  r.key.port_b = 443;
  r.key.proto = 6;
  r.key.family = 4;
  r.key.kind = KeyKind::kFlow;
  r.flow_hash = i * 2654435761u;
  r.appliance = 0x0a000001u + i % 8;
  r.cookie = r.flow_hash | 1;
  r.kind = sync::RecordKind::kNew;
  r.idle_for_ms = 10;
  r.age_ms = 10;
  return r;
}

}  // namespace
}  // namespace gwlb::bench

int main(int argc, char** argv) {
  using namespace gwlb;
  using namespace gwlb::bench;
  size_t n = 1'000'000;
  int rounds = 7, cpu = defaultCpu();
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--records" && i + 1 < argc) n = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--cpu" && i + 1 < argc) cpu = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: sync_bench [--records N] [--rounds R] [--cpu C]\n");
      return 2;
    }
  }
  pinToCpu(cpu);

  sync::SyncKey key = sync::SyncKey::fromHashKey(0x0011223344556677ULL, 0x8899aabbccddeeffULL);
  const size_t per = sync::kMaxRecords;
  const size_t datagrams = (n + per - 1) / per;
  std::vector<sync::Record> recs(per);
  std::vector<std::vector<uint8_t>> wire(datagrams, std::vector<uint8_t>(sync::kMaxMessage));
  std::vector<size_t> lens(datagrams);
  sync::Header h;
  h.node = sync::nodeId("gw-1");
  h.epoch = 42;
  h.time_ms = 1'700'000'000'000ULL;

  auto encodeAll = [&] {
    uint32_t id = 0;
    for (size_t d = 0; d < datagrams; ++d) {
      size_t k = std::min(per, n - d * per);
      for (size_t j = 0; j < k; ++j) recs[j] = record(id++);
      h.seq = d + 1;
      lens[d] = sync::encode(key, h, recs.data(), k, wire[d].data(), wire[d].size());
    }
  };
  uint64_t sink = 0;
  auto decodeAll = [&] {
    sync::Header got;
    sync::Record out[sync::kMaxRecords];
    for (size_t d = 0; d < datagrams; ++d) {
      if (sync::decode(key, wire[d].data(), lens[d], got, out) != sync::Status::kOk) {
        std::fprintf(stderr, "sync_bench: datagram %zu does not decode\n", d);
        std::exit(1);
      }
      sink += out[0].flow_hash;
    }
  };
  auto timed = [](auto&& fn) {
    auto t0 = Clock::now();
    fn();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (int w = 0; w < 2; ++w) encodeAll(), decodeAll();
  std::vector<double> enc, dec;
  for (int r = 0; r < rounds; ++r) {
    enc.push_back(timed(encodeAll));
    dec.push_back(timed(decodeAll));
  }
  Stats e = stats(enc), d = stats(dec);
  double full = double(sync::kMaxMessage);
  // Ethernet 14 + FCS 4 + preamble/SFD 8 + gap 12, IPv4 20, UDP 8.
  double frame = full + 14 + 4 + 20 + 8, wire_bits = (frame + 8 + 12) * 8;
  double bytes_per_flow = full / double(per), frame_per_flow = frame / double(per);
  double enc_rps = double(n) / e.median, dec_rps = double(n) / d.median;
  // The sync needed at 100 k new flows/s, each sent to one peer.
  double need_dgs = 100000.0 / double(per), need_mbps = need_dgs * wire_bits / 1e6;
  std::printf("sync_bench: %zu records in %zu datagrams of %zu (%zu bytes), cpu %d, %d rounds\n", n,
              datagrams, per, sync::kMaxMessage, cpu, rounds);
  std::printf("  encode + HMAC: %.0f records/s (%.0f datagrams/s), %.1f ns/record (median; min %.1f)\n",
              enc_rps, enc_rps / double(per), e.median / double(n) * 1e9, e.min / double(n) * 1e9);
  std::printf("  verify + decode: %.0f records/s, %.1f ns/record (median; min %.1f)\n", dec_rps,
              d.median / double(n) * 1e9, d.min / double(n) * 1e9);
  std::printf("  bytes per flow: %.1f (UDP payload), %.1f with Ethernet/IPv4/UDP headers\n",
              bytes_per_flow, frame_per_flow);
  std::printf("  at 100k new flows/s per peer: %.0f datagrams/s, %.1f Mbit/s on the wire, "
              "%.1f %% of one core to encode\n",
              need_dgs, need_mbps, 100000.0 / enc_rps * 100);
  std::printf("  1 M flows: encode %.3f s + decode %.3f s (codec share of a warm start)\n",
              e.median * 1e6 / double(n), d.median * 1e6 / double(n));
  std::printf("{\"records\":%zu,\"per_datagram\":%zu,\"datagram_bytes\":%zu,"
              "\"encode_records_per_s\":%.0f,\"decode_records_per_s\":%.0f,"
              "\"encode_ns_per_record\":%.2f,\"decode_ns_per_record\":%.2f,"
              "\"bytes_per_flow\":%.2f,\"frame_bytes_per_flow\":%.2f,"
              "\"need_datagrams_per_s_at_100k\":%.0f,\"need_mbit_per_s_at_100k\":%.2f,\"sink\":%llu}\n",
              n, per, sync::kMaxMessage, enc_rps, dec_rps, e.median / double(n) * 1e9,
              d.median / double(n) * 1e9, bytes_per_flow, frame_per_flow, need_dgs, need_mbps,
              (unsigned long long)(sink & 1));
  return 0;
}
