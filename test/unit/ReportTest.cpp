//===- ReportTest.cpp - statistics, digests and environments of reports ---===//

#include "Report.h"
#include "Digest.h"
#include "ReportMeasure.h"

#include <gtest/gtest.h>

namespace {

using namespace ign;
using namespace ign::report;

TEST(ReportStats, QuantilesInterpolate) {
  Stats s = statsOf({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_NEAR(s.p10, 1.4, 1e-12);
  EXPECT_NEAR(s.p90, 4.6, 1e-12);
  EXPECT_EQ(s.runs, 5u);
  EXPECT_EQ(statsOf({}).runs, 0u);
}

TEST(ReportStats, SpeedupIntervalBracketsTheRatioOfMedians) {
  std::vector<double> slow, fast;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(10 + (i % 7) * 0.3);
    fast.push_back(5 + (i % 5) * 0.2);
  }
  Interval i = speedupInterval(slow, fast, 1);
  EXPECT_NEAR(i.value, statsOf(slow).median / statsOf(fast).median, 1e-12);
  EXPECT_LE(i.lo, i.value);
  EXPECT_GE(i.hi, i.value);
  EXPECT_GT(i.lo, 1.5); // clearly faster: the interval excludes 1
  // Seeded: the same interval every time.
  Interval again = speedupInterval(slow, fast, 1);
  EXPECT_EQ(i.lo, again.lo);
  EXPECT_EQ(i.hi, again.hi);
  // Nothing measured, nothing claimed.
  EXPECT_EQ(speedupInterval({}, fast, 1).value, 0);
}

TEST(ReportDigest, Sha256OfKnownBytes) {
  EXPECT_EQ(sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256OfFile("/no/such/file"), "");
}

TEST(ReportEnvironment, NamesTheFieldsThatChangeSpeed) {
  nlohmann::json here = environment();
  EXPECT_FALSE(here["cpu_features"].empty());
  EXPECT_TRUE(environmentDifferences(here, here).empty());
  nlohmann::json other = here;
  other["cpu_model"] = "Another CPU";
  other["os"] = "Plan 9"; // informative, not compared
  EXPECT_EQ(environmentDifferences(here, other),
            std::vector<std::string>{"cpu_model"});
}

TEST(ReportFile, RefusesWhatIsNotAReport) {
  std::string error;
  std::string path = testing::TempDir() + "/ign-not-a-report.json";
  FILE *f = std::fopen(path.c_str(), "w");
  std::fputs("{\"format\": \"something else\"}", f);
  std::fclose(f);
  EXPECT_FALSE(readReportFile(path, error));
  EXPECT_NE(error.find("not an ignc report"), std::string::npos);
  EXPECT_FALSE(readReportFile("/no/such/report.json", error));
}

} // namespace
