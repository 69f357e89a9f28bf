//===- Simulator.h - Cycle-level and analytical systolic simulator -*- C++ -*-//
//
// Two tiers over one timing model (docs/systolic.md):
// - simulate(): executes a program instruction by instruction with the
//   three decoupled queues, dependency tokens, queue depths and a shared
//   DRAM channel, so overlap and stalls come out of the simulation; with
//   SimOptions::functional it also computes the values in DRAM.
// - estimate(): the same program costed in one pass without queues or
//   tokens: max(execute busy time, DRAM transfer time) plus the first load
//   and the last store. With unlimited DRAM bandwidth it equals the
//   cycle-level total whenever the program's tokens let execution run back
//   to back (a property test checks this).
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_SIMULATOR_H
#define IGN_TARGETS_SYSTOLIC_SIMULATOR_H

#include "Config.h"
#include "Isa.h"
#include "Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ign::systolic {

struct SimOptions {
  /// Compute the values (needs a DRAM image); off: timing only.
  bool functional = true;
};

struct Report {
  ArrayConfig config;
  int64_t instructions = 0;
  /// First instruction start to last instruction end.
  int64_t totalCycles = 0;
  /// First execute-queue start to last execute-queue end (SCALE-Sim's
  /// "Total Cycles" is this span minus one: it numbers cycles from 0).
  int64_t computeSpan = 0;
  /// Cycles the array's input port was busy (preloads + streams).
  int64_t busyCycles = 0;
  /// computeSpan - cycles in which the array did useful work or drained:
  /// time the execute queue waited inside its span. Keyed
  /// "load.A"/"load.B"/"load.C" (waiting for an operand's MVIN),
  /// "store" (waiting for the accumulator to be emptied), "drain" (waiting
  /// for the previous computation to leave the array before new stationary
  /// values or a new output tile), "dispatch" (the queue was empty).
  std::map<std::string, int64_t> stalls;
  int64_t stallCycles = 0;
  int64_t macs = 0;       // useful multiply-accumulates
  int64_t peCycles = 0;   // rows*cols*computeSpan
  double utilization = 0; // macs / peCycles
  /// Mean over COMPUTE instructions of the PEs their tile occupies.
  double mappingEfficiency = 0;
  /// Element accesses.
  int64_t spadReads = 0, spadWrites = 0, accReads = 0, accWrites = 0;
  std::map<std::string, int64_t> spadReadsByOperand; // "A", "B"
  int64_t dramReadBytes = 0, dramWriteBytes = 0;
  std::map<std::string, int64_t> dramReadBytesByOperand;
  int64_t dramBusyCycles = 0;
  int64_t preloads = 0, computes = 0, mvins = 0, mvouts = 0;
  /// Energy estimate from the action counts (docs/systolic.md table).
  double energyPicojoules = 0;
  double microseconds() const;

  nlohmann::json toJSON() const;
};

/// Element \p i of type \p t at \p base, as a double; and the store (i8 and
/// i32 round half to even and saturate, f16 rounds to nearest even).
double loadElement(const uint8_t *base, ElemType t, int64_t i);
void storeElement(uint8_t *base, ElemType t, int64_t i, double v);

/// IEEE half precision bits of a float, round to nearest even.
uint16_t floatToHalfBits(float f);

/// A machine with its DRAM image.
class Machine {
public:
  explicit Machine(ArrayConfig config) : config_(std::move(config)) {}
  const ArrayConfig &config() const { return config_; }
  std::vector<uint8_t> &dram() { return dram_; }

  /// Checks every instruction against the machine (addresses, tile shapes,
  /// dataflows, token balance) before running; an error names the first
  /// bad instruction by index.
  Status verify(const Program &program) const;
  Result<Report> simulate(const Program &program,
                          const SimOptions &options = {});
  Result<Report> estimate(const Program &program) const;

private:
  ArrayConfig config_;
  std::vector<uint8_t> dram_;
};

} // namespace ign::systolic

#endif
