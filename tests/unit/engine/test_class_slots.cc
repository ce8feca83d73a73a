// Traffic class counter slots (control/engine/class_slots.h) and the class
// explanation (control/engine/class_explain.h), which must answer as the
// workers' ClassTable does.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "common/traffic_class.h"
#include "control/engine/class_explain.h"
#include "control/engine/class_slots.h"
#include "control/engine/snapshot_builder.h"

namespace gwlb::ctl {
namespace {

TEST(ClassSlots, ANameKeepsItsSlotWhenTheOrderChanges) {
  ClassSlots s;
  std::vector<uint16_t> a = s.assign({"web", "dns", "rest"}, nullptr);
  std::vector<uint16_t> b = s.assign({"rest", "web", "dns"}, nullptr);
  EXPECT_EQ(b[0], a[2]);
  EXPECT_EQ(b[1], a[0]);
  EXPECT_EQ(b[2], a[1]);
  EXPECT_EQ(s.slotOf("dns"), a[1]);
}

TEST(ClassSlots, ARenamedClassTakesAnUnusedSlotAndTheOldNameIsGone) {
  ClassSlots s;
  std::vector<uint16_t> a = s.assign({"web", "dns"}, nullptr);
  std::vector<uint16_t> b = s.assign({"web", "names"}, nullptr);
  EXPECT_EQ(b[0], a[0]);
  EXPECT_NE(b[1], a[1]);
  EXPECT_EQ(s.slotOf("dns"), kNoClass);
  EXPECT_EQ(s.freed(), 1u);
}

TEST(ClassSlots, AReusedSlotStartsFromItsBaseline) {
  ClassSlots s;
  std::vector<std::string> names;
  for (size_t i = 0; i < ClassSlots::kSlots; ++i) names.push_back("c" + std::to_string(i));
  s.assign(names, nullptr);
  const uint16_t old = s.slotOf("c7");
  // Every slot is taken: a new name gets the one "c7" frees, with the counts
  // in it as its baseline.
  names[7] = "fresh";
  ClassCount raw{500, 64000};
  std::vector<uint16_t> b = s.assign(names, [&](uint16_t slot) {
    EXPECT_EQ(slot, old);
    return raw;
  });
  EXPECT_EQ(b[7], old);
  ClassCount since = s.since(old, raw);
  EXPECT_EQ(since.packets, 0u);
  EXPECT_EQ(since.bytes, 0u);
  since = s.since(old, {raw.packets + 3, raw.bytes + 180});
  EXPECT_EQ(since.packets, 3u);
  EXPECT_EQ(since.bytes, 180u);
  // Names that kept their slots keep no baseline.
  EXPECT_EQ(s.since(s.slotOf("c8"), raw).packets, 500u);
}

TEST(ClassSlots, TheSlotFreedLongestAgoIsReusedFirst) {
  ClassSlots s;
  std::vector<std::string> names;
  for (size_t i = 0; i < ClassSlots::kSlots; ++i) names.push_back("c" + std::to_string(i));
  s.assign(names, nullptr);
  const uint16_t first = s.slotOf("c1"), second = s.slotOf("c2");
  names.erase(names.begin() + 1);  // c1 leaves
  s.assign(names, nullptr);
  names.erase(names.begin() + 1);  // c2 leaves
  s.assign(names, nullptr);
  names.push_back("n1");
  EXPECT_EQ(s.assign(names, nullptr).back(), first);
  names.push_back("n2");
  EXPECT_EQ(s.assign(names, nullptr).back(), second);
}

// --- explainClasses against ClassTable::classify.

TrafficClassConfig cls(const std::string& name) {
  TrafficClassConfig c;
  c.name = name;
  return c;
}

TEST(ClassExplain, NamesTheMatchingFieldsAndTheEarlierClassesThatFailed) {
  std::vector<TrafficClassConfig> cs = {cls("tenant-a"), cls("backups"), cls("rest")};
  cs[0].match.vlans = {100, 200};
  cs[1].match.prefixes = {{*IpAddr::parse("10.9.0.0"), 16}};
  cs[1].match.protocols = {6};
  cs[1].match.l4_ports = {{873, 873}};
  cs[1].action = ClassAction::kBypass;
  ClassQuery q;
  q.vlan = 300;
  q.tuple = {*IpAddr::parse("192.0.2.7"), *IpAddr::parse("10.9.1.1"), 6, 40000, 873};
  ClassExplanation e = explainClasses(cs, q);
  ASSERT_EQ(e.matched, 1);
  nlohmann::json j = explanationJson(cs, e);
  EXPECT_EQ(j["name"], "backups");
  EXPECT_EQ(j["action"], "bypass");
  EXPECT_TRUE(j["listener"].is_null());
  EXPECT_EQ(j["matched"], nlohmann::json({"prefixes: dst 10.9.1.1 is in 10.9.0.0/16", "protocols: tcp is in tcp",
                                          "l4_ports: dport 873 is in 873"}));
  ASSERT_EQ(j["skipped"].size(), 1u);
  EXPECT_EQ(j["skipped"][0]["why"], "vlans: vlan 300 is not in 100, 200");
  EXPECT_EQ(j["reason"],
            "class 'backups' (traffic_classes[1]) matches (prefixes: dst 10.9.1.1 is in 10.9.0.0/16; "
            "protocols: tcp is in tcp; l4_ports: dport 873 is in 873): bypassed: sent back to the "
            "router it came from, not inspected");
  cs.pop_back();
  q.tuple.dport = 22;
  j = explanationJson(cs, explainClasses(cs, q));
  EXPECT_TRUE(j["name"].is_null());
  EXPECT_EQ(j["reason"], "no class matches: dropped as unclassified (drop_unclassified)");
  EXPECT_EQ(j["skipped"][1]["why"], "l4_ports: neither port 40000 nor 22 is in 873");
}

TEST(ClassExplain, WithoutThePortAClassListingIngressPortsIsSkippedAndSaidSo) {
  std::vector<TrafficClassConfig> cs = {cls("uplink"), cls("rest")};
  cs[0].match.ingress_ports = {1};
  ClassQuery q;
  q.tuple = {*IpAddr::parse("192.0.2.7"), *IpAddr::parse("10.9.1.1"), 17, 1, 2};
  ClassExplanation e = explainClasses(cs, q);
  EXPECT_EQ(e.matched, 1);
  EXPECT_TRUE(e.port_unknown);
  EXPECT_TRUE(explanationJson(cs, e).contains("note"));
  q.port = 1;
  e = explainClasses(cs, q);
  EXPECT_EQ(e.matched, 0);
  EXPECT_FALSE(e.port_unknown);
}

TEST(ClassExplain, MatchSummary) {
  TrafficClassMatch m;
  EXPECT_EQ(matchSummary(m), "every packet");
  m.vlans = {100, 200};
  m.protocols = {6, 47};
  m.l4_ports = {{443, 443}, {8000, 8080}};
  EXPECT_EQ(matchSummary(m), "vlans 100,200; protocols tcp,47; l4_ports 443,8000-8080");
}

// Random rule sets and packets: the explanation names the class the
// workers' table picks, every time.
TEST(ClassExplain, AgreesWithTheWorkersClassTable) {
  std::mt19937 rng(27);
  auto pick = [&](int n) { return int(rng() % uint32_t(n)); };
  const char* v4[] = {"10.0.0.0", "10.1.0.0", "192.0.2.0", "0.0.0.0"};
  const char* v6[] = {"2001:db8::", "2001:db8:1::", "fd00::"};
  for (int round = 0; round < 300; ++round) {
    std::vector<TrafficClassConfig> cs;
    std::vector<ClassRule> rules;
    const int n = 1 + pick(8);
    for (int i = 0; i < n; ++i) {
      TrafficClassConfig c = cls("c" + std::to_string(i));
      if (pick(3) == 0) c.match.ingress_ports = {uint16_t(pick(3))};
      if (pick(3) == 0) c.match.vlans = {uint16_t(pick(3) * 100)};
      if (pick(3) == 0) c.match.protocols = {uint8_t(pick(2) ? 6 : 17)};
      if (pick(3) == 0) {
        uint16_t lo = uint16_t(pick(4) * 100);
        c.match.l4_ports = {{lo, uint16_t(lo + pick(150))}};
      }
      if (pick(3) == 0) {
        if (pick(2)) c.match.prefixes.push_back({*IpAddr::parse(v4[pick(4)]), uint8_t(pick(3) == 0 ? 0 : 16)});
        else c.match.prefixes.push_back({*IpAddr::parse(v6[pick(3)]), 48});
      }
      cs.push_back(c);
      rules.push_back(classRule(c));  // what the snapshot builder compiles
    }
    ClassTable table(rules);
    for (int k = 0; k < 50; ++k) {
      ClassQuery q;
      q.port = uint16_t(pick(3));
      q.vlan = uint16_t(pick(3) * 100);
      const bool six = pick(2);
      auto addr = [&]() {
        if (six) {
          IpAddr a = *IpAddr::parse(v6[pick(3)]);
          a.b[15] = uint8_t(pick(256));
          return a;
        }
        IpAddr a = *IpAddr::parse(v4[pick(3)]);
        a.b[3] = uint8_t(pick(256));
        return a;
      };
      q.tuple = {addr(), addr(), uint8_t(pick(2) ? 6 : 17), uint16_t(pick(500)), uint16_t(pick(500))};
      const uint16_t want = table.classify(*q.port, q.vlan, q.tuple);
      const int got = explainClasses(cs, q).matched;
      ASSERT_EQ(got, want == kNoClass ? -1 : int(want)) << "round " << round << " packet " << k;
    }
  }
}

}  // namespace
}  // namespace gwlb::ctl
