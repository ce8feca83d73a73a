// gwlbctl table layout and human units.
#include <gtest/gtest.h>

#include "cli/table.h"

using namespace gwlb::cli;

TEST(Table, AlignsColumnsWithoutTrailingBlanks) {
  Table t({{"ADDRESS", Align::kLeft}, {"PACKETS", Align::kRight}, {"REASON", Align::kLeft}});
  t.addRow({"192.0.2.10", "5", "config"});
  t.addRow({"192.0.2.100", "12345", ""});
  t.addRow({"x"});  // padded
  EXPECT_EQ(t.render(),
            "ADDRESS      PACKETS  REASON\n"
            "192.0.2.10         5  config\n"
            "192.0.2.100    12345\n"
            "x\n");
}

TEST(Table, Utf8Width) {
  EXPECT_EQ(displayWidth("a\u2014b"), 3u);
  Table t({{"A", Align::kLeft}, {"B", Align::kLeft}});
  t.addRow({"\u2014", "x"});
  EXPECT_EQ(t.render(), "A  B\n\u2014  x\n");
}

TEST(Table, KeyValues) {
  EXPECT_EQ(renderKeyValues({{"version", "0.1.0"}, {"rx", "5 pps"}, {"multi", "a\nb"}}),
            "version  0.1.0\n"
            "rx       5 pps\n"
            "multi    a\n"
            "         b\n");
}

TEST(Units, Counts) {
  EXPECT_EQ(formatCount(0), "0");
  EXPECT_EQ(formatCount(9999), "9999");
  EXPECT_EQ(formatCount(12345), "12.3k");
  EXPECT_EQ(formatCount(123456), "123k");
  EXPECT_EQ(formatCount(1234567), "1.2M");
  EXPECT_EQ(formatCount(18446744073709551615ull), "18.4E");
}

TEST(Units, Bytes) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(10ull << 20), "10.0 MiB");
  EXPECT_EQ(formatBytes(500ull << 30), "500 GiB");
}

TEST(Units, Rates) {
  EXPECT_EQ(formatRate(0), "0");
  EXPECT_EQ(formatRate(-3), "0");
  EXPECT_EQ(formatRate(12.54), "12.5");
  EXPECT_EQ(formatRate(2500), "2.5k");
  EXPECT_EQ(formatRate(14.88e6), "14.9M");
}

TEST(Units, DurationsAndAges) {
  EXPECT_EQ(formatDuration(0), "0s");
  EXPECT_EQ(formatDuration(0.25), "0.2s");
  EXPECT_EQ(formatDuration(42), "42s");
  EXPECT_EQ(formatDuration(312), "5m12s");
  EXPECT_EQ(formatDuration(7260), "2h1m");
  EXPECT_EQ(formatDuration(90000), "1d1h");
  EXPECT_EQ(formatAge(1000, 1312.7), "5m12s ago");
  EXPECT_EQ(formatAge(0, 1312), "-");
  EXPECT_EQ(formatAge(1010, 1000), "in 10s");
  EXPECT_EQ(formatTime(1700000000), "2023-11-14 22:13:20Z");
}
