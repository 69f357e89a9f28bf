//===- Config.h - Systolic-array machine description ------------*- C++ -*-===//
//
// The machine the systolic target compiles for and the simulator runs: an
// array of rows x cols processing elements, an explicitly managed scratchpad
// (operands) and accumulator (results), a DMA engine on a DRAM channel, and
// three decoupled instruction queues (load, execute, store). See
// docs/systolic.md.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_CONFIG_H
#define IGN_TARGETS_SYSTOLIC_CONFIG_H

#include "Result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ign::systolic {

enum class Dataflow : uint8_t { OS = 0, WS = 1, IS = 2 };
enum class ElemType : uint8_t { I8 = 0, F16 = 1, F32 = 2, I32 = 3 };

const char *dataflowName(Dataflow df);                // "os", "ws", "is"
bool parseDataflow(std::string_view s, Dataflow &df); // case-insensitive
const char *elemTypeName(ElemType t);
bool parseElemType(std::string_view s, ElemType &t);
unsigned elemBytes(ElemType t);
/// The accumulator type of an input type: i32 for i8, f32 for floats.
ElemType accumulatorType(ElemType in);

struct ArrayConfig {
  std::string name = "custom";
  int64_t rows = 16, cols = 16;
  /// The dataflow a program gets when it does not configure one, and the
  /// one SCALE-Sim's fixed mapping uses.
  Dataflow dataflow = Dataflow::WS;
  /// Bit (1 << Dataflow) set for each dataflow the array can run.
  unsigned dataflows = 0b111;
  ElemType inType = ElemType::I8;
  int64_t spadBytes = 256 * 1024;
  int64_t accBytes = 64 * 1024;
  int64_t spadBanks = 4, accBanks = 2;
  /// DRAM bytes per cycle; 0 means unlimited (transfers take no time).
  double dramBytesPerCycle = 16;
  /// Cycles from a DMA request to its first byte (pipelined: not a channel
  /// occupancy).
  int64_t dramLatency = 0;
  int64_t loadQueueDepth = 8, exQueueDepth = 8, storeQueueDepth = 8;
  /// Whether a PRELOAD of new stationary values may start while the
  /// previous computation still drains (double-buffered PE registers).
  bool overlapPreload = false;
  double clockMHz = 1000;

  ElemType accType() const { return accumulatorType(inType); }
  int64_t spadElems() const { return spadBytes / elemBytes(inType); }
  int64_t accElems() const { return accBytes / elemBytes(accType()); }
  bool supports(Dataflow df) const { return dataflows & (1u << unsigned(df)); }
  /// An error naming the first field out of range, or success.
  Status validate() const;
  /// One-line summary for reports.
  std::string describe() const;
};

/// The machine as JSON (every field) and back; fromJSON validates.
nlohmann::json toJSON(const ArrayConfig &config);
Result<ArrayConfig> configFromJSON(const nlohmann::json &value);

/// The named machines: gemmini-16, gemmini-16-f32, tpu-v1, scale-32.
Result<ArrayConfig> presetConfig(const std::string &name);
std::vector<std::string> presetNames();

/// A SCALE-Sim configuration file (v2 or v3 format): the array, its three
/// SRAMs and the interface bandwidth.
struct ScaleSimConfig {
  std::string runName;
  int64_t rows = 0, cols = 0;
  int64_t ifmapKB = 0, filterKB = 0, ofmapKB = 0;
  Dataflow dataflow = Dataflow::WS;
  /// InterfaceBandwidth USER: words per cycle; CALC: 0 (unlimited).
  double bandwidth = 0;
  bool userBandwidth = false;
};
Result<ScaleSimConfig> parseScaleSimConfig(const std::string &path);
/// The machine that runs SCALE-Sim's mapping for \p cfg: word size 1 byte,
/// the ifmap and filter SRAMs as one scratchpad, the ofmap SRAM as the
/// accumulator (counted in words), preloads that wait for the drain.
ArrayConfig machineForScaleSim(const ScaleSimConfig &cfg);

} // namespace ign::systolic

#endif
