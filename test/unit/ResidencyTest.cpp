//===- ResidencyTest.cpp - which intermediates stay on a device
//------------===//
//
// libignrt's residency plan (lib/Runtime/Residency.h): an arena tensor
// stays on its device only when its producer and every reader are kernels
// of one driver naming exactly its range, with nothing else touching it in
// between; the last reader releases it.
//
//===----------------------------------------------------------------------===//

#include "Residency.h"

#include "ign/Runtime/ignrt.h"

#include <gtest/gtest.h>

using namespace ignrt_detail;

namespace {

ResidencyArg arena(uint64_t offset, size_t bytes) {
  return {true, offset, bytes};
}
const ResidencyArg kInput{false, 0, 64}; // a graph input or weight

ResidencyLaunch kernel(int driver, std::vector<ResidencyArg> inputs,
                       std::vector<ResidencyArg> outputs) {
  ResidencyLaunch l;
  l.driver = driver;
  l.inputs = inputs.size();
  l.args = std::move(inputs);
  l.args.insert(l.args.end(), outputs.begin(), outputs.end());
  return l;
}

constexpr unsigned char H = IGNRT_RESIDENT_HOST, R = IGNRT_RESIDENT,
                        L = IGNRT_RESIDENT_LAST;

TEST(Residency, AChainOfOneDriversKernelsStaysOnTheDevice) {
  auto plan =
      planResidency({kernel(0, {kInput}, {arena(0, 64)}),
                     kernel(0, {arena(0, 64)}, {arena(64, 64)}),
                     kernel(0, {arena(0, 64), arena(64, 64)}, {arena(128, 64)}),
                     kernel(-1, {arena(128, 64)}, {kInput})});
  EXPECT_EQ(plan[0], (std::vector<unsigned char>{H, R}));
  EXPECT_EQ(plan[1], (std::vector<unsigned char>{R, R}));
  // Its last reader releases each; the host reads the third, so its
  // producer copies it back.
  EXPECT_EQ(plan[2], (std::vector<unsigned char>{L, L, H}));
  EXPECT_EQ(plan[3], (std::vector<unsigned char>{H, H}));
}

TEST(Residency, AnyOtherUseKeepsItOnTheHost) {
  // Read by the host, by another driver, through a view, or never.
  for (ResidencyLaunch reader : {kernel(-1, {arena(0, 64)}, {kInput}),
                                 kernel(1, {arena(0, 64)}, {kInput}),
                                 kernel(0, {arena(16, 32)}, {kInput})}) {
    auto plan = planResidency({kernel(0, {kInput}, {arena(0, 64)}), reader,
                               kernel(0, {arena(0, 64)}, {kInput})});
    EXPECT_EQ(plan[0][1], H);
    EXPECT_EQ(plan[2][0], H);
  }
  auto unread = planResidency({kernel(0, {kInput}, {arena(0, 64)})});
  EXPECT_EQ(unread[0][1], H);
}

TEST(Residency, AWriteStartsANewVersion) {
  // The host overwrites part of the range: the device reader after it
  // reads the host's bytes; the first version had no reader.
  auto plan = planResidency({kernel(0, {kInput}, {arena(0, 64)}),
                             kernel(-1, {kInput}, {arena(32, 32)}),
                             kernel(0, {arena(0, 64)}, {kInput})});
  EXPECT_EQ(plan[0][1], H);
  EXPECT_EQ(plan[2][0], H);
  // A device overwrite of the same range: each version its own chain.
  plan = planResidency({kernel(0, {kInput}, {arena(0, 64)}),
                        kernel(0, {arena(0, 64)}, {arena(64, 64)}),
                        kernel(0, {arena(64, 64)}, {arena(0, 64)}),
                        kernel(0, {arena(0, 64)}, {kInput})});
  EXPECT_EQ(plan[0][1], R);
  EXPECT_EQ(plan[1], (std::vector<unsigned char>{L, R}));
  EXPECT_EQ(plan[2], (std::vector<unsigned char>{L, R}));
  EXPECT_EQ(plan[3][0], L);
}

TEST(Residency, ControlFlowKeepsEverythingOnTheHost) {
  ResidencyLaunch loop;
  loop.kernel = false;
  auto plan = planResidency({kernel(0, {kInput}, {arena(0, 64)}), loop,
                             kernel(0, {arena(0, 64)}, {kInput})});
  EXPECT_EQ(plan[0][1], H);
  EXPECT_EQ(plan[2][0], H);
}

} // namespace
