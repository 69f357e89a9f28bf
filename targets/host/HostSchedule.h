//===- HostSchedule.h - the host's schedule space and its lowering -*- C++ -*-//
//
// Every host kernel is lowered the same way: loop nests ordered so their
// innermost loop walks memory contiguously, the root op tiled into
// workgroups (producers fused in) that the runtime spreads across threads,
// and contractions tiled into register tiles that are vectorized. The knobs
// of that lowering form the kernel's schedule space; their names are in
// HostKnobs.h.
//
// With no schedule given, the default heuristics choose every knob.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_TARGETS_HOST_HOSTSCHEDULE_H
#define IGN_TARGETS_HOST_HOSTSCHEDULE_H

#include "ign/Search/ScheduleSpace.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace ign::host {

/// What the schedule knows of the CPU it generates code for: register tiles
/// are sized from it (docs/host-schedule.md, "Register tiles").
struct HostMachine {
  /// Width of the widest vector registers (512 with AVX-512, 256 with AVX2,
  /// 128 with SSE or NEON).
  int64_t vectorBits = 128;
  /// Architectural vector registers (32 with AVX-512 or NEON, else 16).
  int64_t vectorRegisters = 16;
  /// Cores, when known (the compiling machine's for --chip host; 0 for a
  /// named CPU).
  int64_t cores = 0;
  /// Level-1 data cache per core.
  int64_t l1Bytes = 32 << 10;
  /// Level-2 cache per core.
  int64_t l2Bytes = 1 << 20;
  /// The CPU has AVX512-BF16's dot products of bfloat16 pairs.
  bool hasBf16Dot = false;
  /// The CPU has AVX512-VNNI's dot products of byte quads (vpdpbusd):
  /// quantized matmuls compute in integers (IntegerMatmuls.cpp).
  bool hasVnniDot = false;
  /// The CPU has dot products of 16-bit word pairs in its widest vectors
  /// (vpmaddwd: AVX2, or AVX512BW): without VNNI, quantized matmuls compute
  /// on their integers as words.
  bool hasWordDot = false;
  /// The CPU has AMX tiles with dot products of bfloat16 pairs (amx-tile,
  /// amx-bf16).
  bool hasAmxBf16 = false;
  /// Contractions round their inputs to bfloat16 and sum pairs of products
  /// in f32 (--precision=bf16 on a CPU with hasBf16Dot).
  bool bf16 = false;

  /// bfloat16 contractions take AMX tiles where they fit (AmxTiles.h).
  bool amx() const { return bf16 && hasAmxBf16; }
  /// bfloat16 register tiles of vdpbf16ps (GroupedDots.h, DirectConv.h):
  /// not where AMX is. There (Intel's cores) vdpbf16ps issues on one port,
  /// no more work per cycle than two FMAs, and pairing the operands costs
  /// on top: ResNet-50's 3x3 convolutions ran 1.3-1.7x slower than in fp32
  /// on a Sapphire Rapids (benchmarks/results/2026-12-06-session40.md), so
  /// what AMX tiles do not take computes in fp32.
  bool bf16Pairs() const { return bf16 && !hasAmxBf16; }

  /// f32 lanes of one vector register.
  int64_t lanes() const { return vectorBits >= 64 ? vectorBits / 32 : 1; }
  /// The default register tile's columns: two vectors.
  int64_t tileColumns() const { return 2 * lanes(); }
  /// The default tile's rows: as many as keep rows x 2 accumulators, one
  /// row of the streamed operand (2 vectors) and a broadcast in registers,
  /// at most 8 (6 on AVX2, 8 on AVX-512).
  int64_t tileRows() const;
};

/// The L1 bytes a default reduction chunk's panel is sized for at most
/// (defaultReductionChunk).
constexpr int64_t kMaxPanelL1Bytes = 32 << 10;

/// The default reduction chunk of a contraction whose register tile has
/// `cols` columns: none (0) when a whole panel of the streamed operand (the
/// reduction x `cols`, f32, or bf16 where the machine computes in it) fits
/// in the L1 cache, else the longest chunk from 64 to 512 dividing the
/// reduction whose panel fills at most two thirds of it (the broadcast rows
/// and the output tile use the rest). The L1 counts as at most `maxL1Bytes`.
int64_t defaultReductionChunk(int64_t reduction, int64_t cols,
                              const HostMachine &machine,
                              int64_t maxL1Bytes = kMaxPanelL1Bytes);

struct KernelSchedule {
  /// Tile of the root op's loops per workgroup (0: the loop is not split).
  std::vector<int64_t> workgroupTile;
  /// Register tile of the kernel's contraction (output rows x vector lanes,
  /// 1 elsewhere), when it has one that was vectorized.
  std::vector<int64_t> registerTile;
  /// Workgroups the kernel runs as; 1 when it runs on one thread.
  int64_t workgroups = 1;
  /// Steps the workgroups run in, one after the other (a recurrent layer's
  /// time steps: kTimeStepsAttr); 1 when they are all independent.
  int64_t timeSteps = 1;
  /// Why the kernel runs on one thread, when it does.
  std::string serialReason;
  /// The knob values applied (after clamping to what the kernel allows).
  search::Schedule knobs;
  /// "default" (heuristics) or "tuned" (knobs given).
  std::string kind = "default";
  /// Panels of constant weights it reads as packed at compile time
  /// (PrepackedPanels.h).
  int64_t prepackedPanels = 0;

  std::string toJson() const;
};

/// The schedule space of a kernel function on tensors (after the reference
/// lowering). Prepares the kernel in place (loop order, reshapes), so pass
/// a copy.
search::ScheduleSpace describeScheduleSpace(mlir::func::FuncOp kernel,
                                            const HostMachine &machine);

/// Applies a schedule to a kernel function on tensors (after the reference
/// lowering): `knobs` when given (missing knobs take the heuristics'
/// values; values the kernel does not allow are clamped to ones it does),
/// else the default heuristics. Never fails: a kernel it cannot tile stays
/// whole.
KernelSchedule applySchedule(mlir::func::FuncOp kernel,
                             const HostMachine &machine,
                             const search::Schedule *knobs = nullptr);

/// After bufferization: appends the `wg_begin, wg_end` index arguments to
/// the kernel and makes its workgroup loop iterate over that range. A kernel
/// whose body is more than one workgroup loop is run as one workgroup
/// (`schedule` is updated to say so).
void distributeWorkgroups(mlir::func::FuncOp kernel, KernelSchedule &schedule);

/// After bufferization and distribution, for every schedule but the
/// reference: keeps the output tiles of vectorized contractions in registers
/// across their reduction loops, transposes in blocks of `lanes` x `lanes`,
/// and lets LLVM contract multiply-adds into FMAs.
void finishSchedule(mlir::func::FuncOp kernel, int64_t lanes);

} // namespace ign::host

#endif // IGN_TARGETS_HOST_HOSTSCHEDULE_H
