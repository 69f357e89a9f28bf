//===- SystolicKnobs.h - the names of the systolic mapping's knobs -*- C++ -*-//
//
// The one place the systolic target's knob names are spelled:
//
//   sys.dataflow    0 OS, 1 WS, 2 IS (those the chip runs)
//   sys.accumulate  partial sums kept in the accumulator (0: SCALE-Sim's
//                   store-every-fold)
//   sys.chunk_div   stream chunk = the streamed dimension / div
//   sys.stream_pct  scratchpad share of the streamed operand (0: what the
//                   stationary slots leave)
//   sys.resident    the stationary operand loaded once
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_SYSTOLIC_SYSTOLICKNOBS_H
#define IGN_TARGETS_SYSTOLIC_SYSTOLICKNOBS_H

#include <cstdint>

namespace ign::systolic::knobs {

constexpr const char *kDataflow = "sys.dataflow";
constexpr const char *kAccumulate = "sys.accumulate";
constexpr const char *kChunkDiv = "sys.chunk_div";
constexpr const char *kStreamPct = "sys.stream_pct";
constexpr const char *kResident = "sys.resident";

constexpr int64_t kChunkDivs[] = {1, 2, 4, 8, 16, 32};
constexpr int64_t kStreamPcts[] = {0, 25, 50, 75};

} // namespace ign::systolic::knobs

#endif // IGN_TARGETS_SYSTOLIC_SYSTOLICKNOBS_H
