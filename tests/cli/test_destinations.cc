// gwlbctl health-destinations / regions: rendering of the `destinations`
// result (shape: Daemon::destinationJson, docs/control-api.md) and the
// status worker loop columns.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "cli/destination_render.h"
#include "cli/render.h"
#include "cli/table.h"

using namespace gwlb::cli;

namespace {

constexpr double kNow = 1700000312.0;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// The line that starts with `prefix`, or "" (no such line).
std::string lineStarting(const std::string& text, const std::string& prefix) {
  for (const auto& l : lines(text))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

// Cells of a table line split on runs of two or more spaces.
std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    size_t j = line.find("  ", i);
    if (j == std::string::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
    while (i < line.size() && line[i] == ' ') ++i;
  }
  return out;
}

// A source as gwlbd's sourceJson() writes it.
Json source(const char* name, const char* group, const char* policy, int pct, int cnt, int appliances,
            int healthy, bool ok, const std::string& why) {
  return {{"name", name},          {"group", group},
          {"policy", policy},      {"min_healthy_percent", pct},
          {"min_healthy_count", cnt}, {"servers", appliances},
          {"healthy_servers", healthy}, {"healthy", ok},
          {"why", why}};
}

// fw-east failed (1 of 5 healthy): its composite is unhealthy, the
// destination is UNHEALTHY, new flows fail over to fw-west, judged by its
// own appliances; a dry-run composite covers fw-west too.
Json failedOver() {
  Json d = {
      {"name", "inspect"},
      {"implicit", false},
      {"healthy", false},
      {"healthy_with_dry_run", false},
      {"active_group", "fw-west"},
      {"would_be_active_group", "fw-west"},
      {"since", kNow - 42},
      {"reason", "every region before it is unhealthy"},
      {"failback_hold_s", 300},
      {"when_all_unhealthy", "fail_open"},
      {"regions",
       {{{"group", "fw-east"},
         {"healthy", false},
         {"healthy_with_dry_run", false},
         {"healthy_since", nullptr},
         {"composites", {"inspect-east"}},
         {"judged_by", "composites"}},
        {{"group", "fw-west"},
         {"healthy", true},
         {"healthy_with_dry_run", true},
         {"healthy_since", kNow - 3600},
         {"composites", {"inspect-west-strict"}},
         {"judged_by", "any healthy appliance (no acting composite)"},
         {"own_appliances", source("(any healthy appliance)", "fw-west", "(default)", 0, 1, 3, 3,
                                   true, "3 of 3 healthy; needs 1 (0 % and at least 1)")}}}},
      {"composites",
       {{{"name", "inspect-east"},
         {"dry_run", false},
         {"healthy", false},
         {"since", kNow - 42},
         {"changes", 1},
         {"sources",
          {source("src-east", "fw-east", "strict", 60, 2, 5, 1, false,
                  "1 of 5 healthy; needs 3 (60 % and at least 2)"),
           source("src-east-ids", "fw-east-ids", "(default)", 60, 1, 2, 2, true,
                  "2 of 2 healthy; needs 2 (60 % and at least 1)")}}},
        {{"name", "inspect-west-strict"},
         {"dry_run", true},
         {"healthy", true},
         {"since", kNow - 3600},
         {"changes", 0},
         {"sources",
          {source("src-west", "fw-west", "all", 100, 3, 3, 3, true,
                  "3 of 3 healthy; needs 3 (100 % and at least 3)")}}}}}};
  return d;
}

// Healthy, but a dry-run composite on fw-east is not: with it acting, the
// destination would be UNHEALTHY and new flows would go to fw-west.
Json dryRunDiffers() {
  Json d = {
      {"name", "inspect"},
      {"implicit", false},
      {"healthy", true},
      {"healthy_with_dry_run", false},
      {"active_group", "fw-east"},
      {"would_be_active_group", "fw-west"},
      {"since", kNow - 7200},
      {"reason", "the preferred region is healthy"},
      {"failback_hold_s", 0},
      {"when_all_unhealthy", "drop"},
      {"regions",
       {{{"group", "fw-east"},
         {"healthy", true},
         {"healthy_with_dry_run", false},
         {"healthy_since", kNow - 7200},
         {"composites", {"inspect-east", "inspect-east-strict"}},
         {"judged_by", "composites"}},
        {{"group", "fw-west"},
         {"healthy", true},
         {"healthy_with_dry_run", true},
         {"healthy_since", kNow - 7200},
         {"composites", Json::array()},
         {"judged_by", "any healthy appliance (no acting composite)"},
         {"own_appliances", source("(any healthy appliance)", "fw-west", "(default)", 0, 1, 3, 3,
                                   true, "3 of 3 healthy; needs 1 (0 % and at least 1)")}}}},
      {"composites",
       {{{"name", "inspect-east"},
         {"dry_run", false},
         {"healthy", true},
         {"since", kNow - 7200},
         {"changes", 0},
         {"sources",
          {source("src-east", "fw-east", "strict", 60, 2, 5, 4, true,
                  "4 of 5 healthy; needs 3 (60 % and at least 2)")}}},
        {{"name", "inspect-east-strict"},
         {"dry_run", true},
         {"healthy", false},
         {"since", kNow - 75},
         {"changes", 3},
         {"sources",
          {source("src-east-all", "fw-east", "all", 100, 5, 5, 4, false,
                  "4 of 5 healthy; needs 5 (100 % and at least 5)")}}}}}};
  return d;
}

// No listeners in the config: the implicit one over the first group, no composites.
Json implicitListener() {
  return {{"name", "default"},
          {"implicit", true},
          {"healthy", true},
          {"healthy_with_dry_run", true},
          {"active_group", "firewalls"},
          {"would_be_active_group", "firewalls"},
          {"since", kNow - 312},
          {"reason", "the preferred region is healthy"},
          {"failback_hold_s", 0},
          {"when_all_unhealthy", "fail_open"},
          {"regions",
           {{{"group", "firewalls"},
             {"healthy", true},
             {"healthy_with_dry_run", true},
             {"healthy_since", kNow - 312},
             {"composites", Json::array()},
             {"judged_by", "always (the only group)"},
             {"own_appliances",
              source("(any healthy appliance)", "firewalls", "(default)", 0, 1, 3, 3, true,
                     "3 of 3 healthy; needs 1 (0 % and at least 1)")}}}},
          {"composites", Json::array()}};
}

Json reply(std::initializer_list<Json> ds) {
  Json a = Json::array();
  for (const auto& d : ds) a.push_back(d);
  return {{"destinations", a}};
}

}  // namespace

TEST(Destinations, HealthyWithoutDifference) {
  Json d = dryRunDiffers();
  // The same, with the dry-run composite healthy too: nothing "would be" different.
  d["healthy_with_dry_run"] = true;
  d["would_be_active_group"] = "fw-east";
  d["regions"][0]["healthy_with_dry_run"] = true;
  d["composites"][1]["healthy"] = true;
  d["composites"][1]["sources"][0]["healthy"] = true;
  std::string t = renderDestinations(reply({d}), kNow);
  EXPECT_EQ(lineStarting(t, "destination"), "destination    inspect: HEALTHY") << t;
  EXPECT_EQ(lineStarting(t, "new flows"), "new flows      -> fw-east") << t;
  EXPECT_EQ(lineStarting(t, "since"), "since          2h0m ago") << t;
  EXPECT_EQ(lineStarting(t, "reason"), "reason         the preferred region is healthy") << t;
  EXPECT_EQ(lineStarting(t, "failback"), "failback       at once (no failback hold)") << t;
  EXPECT_EQ(lineStarting(t, "all unhealthy"), "all unhealthy  drop (new flows are dropped)") << t;
  EXPECT_FALSE(has(t, "dry run would")) << t;
  EXPECT_FALSE(has(t, "with dry run")) << t;
  EXPECT_FALSE(has(t, "(dry run: ")) << t;
}

TEST(Destinations, UnhealthyFailedOver) {
  std::string t = renderDestinations(reply({failedOver()}), kNow);
  EXPECT_EQ(lineStarting(t, "destination"), "destination    inspect: UNHEALTHY") << t;
  EXPECT_EQ(lineStarting(t, "new flows"), "new flows      -> fw-west") << t;
  EXPECT_EQ(lineStarting(t, "since"), "since          42s ago") << t;
  EXPECT_EQ(lineStarting(t, "reason"), "reason         every region before it is unhealthy") << t;
  EXPECT_EQ(lineStarting(t, "failback"), "failback       after 5m0s healthy (failback hold)") << t;
  EXPECT_EQ(lineStarting(t, "all unhealthy"),
            "all unhealthy  fail_open (new flows go to the preferred region)")
      << t;

  // Regions, in order of preference, with what judges each.
  EXPECT_TRUE(has(t, "\nregions, in order of preference:\nGROUP    HEALTHY  SINCE     JUDGED BY\n")) << t;
  EXPECT_EQ(cells(lineStarting(t, "fw-east ")),
            (std::vector<std::string>{"fw-east", "no", "-", "inspect-east"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "fw-west ")),
            (std::vector<std::string>{"fw-west", "yes", "1h0m ago",
                                      "any healthy appliance (no acting composite): 3/3 healthy; "
                                      "inspect-west-strict (dry run)"}))
      << t;

  // Composites: state and since on their first source's row, one row per source.
  std::string header = lineStarting(t, "COMPOSITE");
  EXPECT_EQ(cells(header), (std::vector<std::string>{"COMPOSITE", "STATE", "SINCE", "CHANGES",
                                                     "SOURCE", "GROUP", "POLICY", "HEALTHY/SERVERS",
                                                     "NEEDS", "OK", "WHY"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "inspect-east ")),
            (std::vector<std::string>{"inspect-east", "unhealthy", "42s ago", "1", "src-east",
                                      "fw-east", "strict", "1/5", "60 % and 2", "no",
                                      "1 of 5 healthy; needs 3 (60 % and at least 2)"}))
      << t;
  // The second source of inspect-east: its own row, composite cells empty.
  std::vector<std::string> ls = lines(t);
  auto it = std::find_if(ls.begin(), ls.end(),
                         [](const std::string& l) { return l.rfind("inspect-east ", 0) == 0; });
  ASSERT_NE(it, ls.end());
  ASSERT_NE(it + 1, ls.end());
  EXPECT_EQ(it[1].find_first_not_of(' '), header.find("SOURCE")) << t;
  EXPECT_EQ(cells(it[1]), (std::vector<std::string>{"src-east-ids", "fw-east-ids", "(default)",
                                                    "2/2", "60 % and 1", "yes",
                                                    "2 of 2 healthy; needs 2 (60 % and at least 1)"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "inspect-west-strict (dry run)")),
            (std::vector<std::string>{"inspect-west-strict (dry run)", "healthy", "1h0m ago", "0",
                                      "src-west", "fw-west", "all", "3/3", "100 % and 3", "yes",
                                      "3 of 3 healthy; needs 3 (100 % and at least 3)"}))
      << t;
  // HEALTHY/SERVERS and CHANGES are right-aligned under their headers.
  std::string row = lineStarting(t, "inspect-east ");
  EXPECT_EQ(row.find("1/5") + 3, header.find("HEALTHY/SERVERS") + 15) << t;
}

TEST(Destinations, DryRunDifference) {
  std::string t = renderDestinations(reply({dryRunDiffers()}), kNow);
  EXPECT_EQ(lineStarting(t, "destination"),
            "destination    inspect: HEALTHY (would be UNHEALTHY with dry run)")
      << t;
  EXPECT_EQ(lineStarting(t, "new flows"),
            "new flows      -> fw-east (dry run would send them to fw-west)")
      << t;
  EXPECT_EQ(cells(lineStarting(t, "fw-east ")),
            (std::vector<std::string>{"fw-east", "yes (dry run: no)", "2h0m ago",
                                      "inspect-east, inspect-east-strict (dry run)"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "fw-west ")),
            (std::vector<std::string>{"fw-west", "yes", "2h0m ago",
                                      "any healthy appliance (no acting composite): 3/3 healthy"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "inspect-east-strict (dry run)")),
            (std::vector<std::string>{"inspect-east-strict (dry run)", "unhealthy", "1m15s ago", "3",
                                      "src-east-all", "fw-east", "all", "4/5", "100 % and 5", "no",
                                      "4 of 5 healthy; needs 5 (100 % and at least 5)"}))
      << t;

  // Dropping new flows, and a dry run that would not.
  Json d = dryRunDiffers();
  d["active_group"] = nullptr;
  d["reason"] = "no region is healthy: when_all_unhealthy drop";
  t = renderDestinations(reply({d}), kNow);
  EXPECT_EQ(lineStarting(t, "new flows"),
            "new flows      dropped (no region takes them) (dry run would send them to fw-west)")
      << t;
  d["active_group"] = "fw-east";
  d["would_be_active_group"] = nullptr;
  t = renderDestinations(reply({d}), kNow);
  EXPECT_EQ(lineStarting(t, "new flows"), "new flows      -> fw-east (dry run would drop them)") << t;
}

TEST(Destinations, ImplicitListenerWithoutComposites) {
  std::string t = renderDestinations(reply({implicitListener()}), kNow);
  EXPECT_EQ(t,
            "destination    default (implicit: no listeners configured): HEALTHY\n"
            "new flows      -> firewalls\n"
            "since          5m12s ago\n"
            "reason         the preferred region is healthy\n"
            "failback       at once (no failback hold)\n"
            "all unhealthy  fail_open (new flows go to the preferred region)\n"
            "\n"
            "regions, in order of preference:\n"
            "GROUP      HEALTHY  SINCE      JUDGED BY\n"
            "firewalls  yes      5m12s ago  always (the only group): 3/3 healthy\n"
            "\n"
            "composite health checks: none\n");
}

TEST(Destinations, JudgementUnderAnotherKey) {
  // The first gwlbd with `destinations` called the object default_policy; a
  // later name is found by its shape.
  Json d = implicitListener();
  Json own = d["regions"][0]["own_appliances"];
  d["regions"][0].erase("own_appliances");
  d["regions"][0]["judged_by"] = "default policy (60 % / 1) on its own group";
  d["regions"][0]["default_policy"] = own;
  std::string t = renderDestinations(reply({d}), kNow);
  EXPECT_EQ(cells(lineStarting(t, "firewalls ")),
            (std::vector<std::string>{"firewalls", "yes", "5m12s ago",
                                      "default policy (60 % / 1) on its own group: 3/3 healthy"}))
      << t;
  d["regions"][0].erase("default_policy");
  d["regions"][0]["judgement"] = own;
  d["regions"][0]["judged_by"] = "own appliances";
  t = renderDestinations(reply({d}), kNow);
  EXPECT_EQ(cells(lineStarting(t, "firewalls ")),
            (std::vector<std::string>{"firewalls", "yes", "5m12s ago", "own appliances: 3/3 healthy"}))
      << t;
}

TEST(Destinations, SeveralEmptyAndOdd) {
  // Every destination, one block each, separated by a blank line, in the daemon's order.
  std::string t = renderDestinations(reply({failedOver(), implicitListener()}), kNow);
  size_t a = t.find("destination    inspect: UNHEALTHY");
  size_t b = t.find("\n\ndestination    default (implicit");
  EXPECT_NE(a, std::string::npos) << t;
  EXPECT_NE(b, std::string::npos) << t;
  EXPECT_LT(a, b) << t;
  EXPECT_EQ(renderDestinations(Json{{"destinations", Json::array()}}, kNow), "no destinations\n");
  EXPECT_EQ(renderDestinations(Json::object(), kNow), "no destinations\n");
  // Odd and missing fields: dashes, no throw.
  t = renderDestinations(Json::parse(R"({"destinations": [{"name": "x", "regions": [{}],
    "composites": [{"name": "c", "sources": [{}]}, {"name": "empty"}]}]})"),
                         kNow);
  EXPECT_EQ(lineStarting(t, "destination"), "destination  x: -") << t;
  EXPECT_EQ(lineStarting(t, "new flows"), "new flows    dropped (no region takes them)") << t;
  EXPECT_EQ(cells(lineStarting(t, "-  ")), (std::vector<std::string>{"-", "-", "-", "-"})) << t;
  EXPECT_EQ(cells(lineStarting(t, "c ")),
            (std::vector<std::string>{"c", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"}))
      << t;
  EXPECT_EQ(cells(lineStarting(t, "empty")), (std::vector<std::string>{"empty", "-", "-", "-"})) << t;
  EXPECT_NO_THROW(renderDestinations(Json::parse(R"({"destinations": [1, "x", null]})"), kNow));
}

TEST(Destinations, StatusWorkerLoops) {
  Json st = Json::parse(R"({"version": "0.1.0", "workers": [
    {"id": 0, "lcore": 1, "rx_queues": ["0/0"], "loops": 123456789, "max_loop_gap_ns": 12345678,
     "recent_max_loop_gap_ns": 45000},
    {"id": 1, "lcore": 2, "rx_queues": ["0/1"], "loops": 812, "max_loop_gap_ns": 2500000000,
     "recent_max_loop_gap_ns": 850},
    {"id": 2, "lcore": 3, "rx_queues": ["0/2"]}], "ports": []})");
  std::string t = renderStatus(st, 0);
  EXPECT_TRUE(has(t, "\nworkers:\nWORKER  LCORE  RX QUEUES (port/queue)  LOOPS  MAX GAP (recent)\n"))
      << t;
  EXPECT_TRUE(has(t, "\n     0      1  0/0                      123M       12ms (45us)\n")) << t;
  EXPECT_TRUE(has(t, "\n     1      2  0/1                       812      2.5s (850ns)\n")) << t;
  // An older gwlbd without the loop fields.
  EXPECT_TRUE(has(t, "\n     2      3  0/2                         -                 -\n")) << t;
}

TEST(Destinations, FormatNs) {
  EXPECT_EQ(formatNs(0), "0ns");
  EXPECT_EQ(formatNs(850), "850ns");
  EXPECT_EQ(formatNs(999.4), "999ns");
  EXPECT_EQ(formatNs(999.6), "1.0us");
  EXPECT_EQ(formatNs(4500), "4.5us");
  EXPECT_EQ(formatNs(45000), "45us");
  EXPECT_EQ(formatNs(1.2e6), "1.2ms");
  EXPECT_EQ(formatNs(12345678), "12ms");
  EXPECT_EQ(formatNs(250e6), "250ms");
  EXPECT_EQ(formatNs(999.6e6), "1.0s");
  EXPECT_EQ(formatNs(2.5e9), "2.5s");
  EXPECT_EQ(formatNs(75e9), "1m15s");
  EXPECT_EQ(formatNs(-1), "-");
}
