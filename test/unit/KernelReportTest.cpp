//===- KernelReportTest.cpp - the kernel table of --emit=kernels/inspect --===//

#include "KernelReport.h" // lib/Driver (internal)

#include <gtest/gtest.h>

namespace {

// The descriptive kernel fields of a manifest are not checked by the
// runtime: a bundle whose fields have the wrong types, or none (older
// bundles), still prints, reading them as 0 or empty.
TEST(KernelReport, ToleratesMissingAndMistypedFields) {
  nlohmann::json kernels = nlohmann::json::parse(R"([
    {"name": "k0", "ops": ["ign.add"]},
    {"name": 7, "task": [], "launches": "x", "flops": -3, "ops": "ign.mul",
     "op_shapes": [1, "ign.mul 2xf32 -> 2xf32"], "bytes_read": {}},
    3
  ])");
  std::string table;
  ASSERT_NO_THROW(table = ign::kernelTable(kernels));
  EXPECT_NE(table.find("k0: ign.add"), std::string::npos);
  EXPECT_NE(table.find("?: \n"), std::string::npos);
  EXPECT_NE(table.find("    ign.mul 2xf32 -> 2xf32"), std::string::npos);
  // Three entries (one not an object, skipped); the first kernel counts one
  // launch by default, the second none (its count is not a number).
  EXPECT_NE(table.find("total: 3 kernels, 1 launches, 0.000 GFLOP"),
            std::string::npos);
}

TEST(KernelReport, CountsPerLaunch) {
  ign::KernelSummary k;
  k.name = "k1_ign_matmul";
  k.task = "00000000000000ab";
  k.launches = 3;
  k.ops = {"ign.matmul"};
  k.flops = 1000000;
  k.bytesRead = 2048;
  k.bytesWritten = 2048;
  nlohmann::json j = ign::kernelsJson({k});
  EXPECT_DOUBLE_EQ(j[0]["intensity"].get<double>(), 1000000.0 / 4096.0);
  std::string table = ign::kernelTable(j);
  EXPECT_NE(table.find("00000000000000ab        3       1.00        2.0        "
                       "2.0    244.14  k1_ign_matmul: ign.matmul"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("total: 1 kernels, 3 launches, 0.003 GFLOP, 0.01 MB"),
            std::string::npos)
      << table;
}

} // namespace
