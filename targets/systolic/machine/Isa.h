//===- Isa.h - The systolic machine's instruction set -----------*- C++ -*-===//
//
// A Gemmini-like instruction set. Every instruction is three 64-bit words;
// the encoding is documented in docs/systolic-isa.md. Instructions go to one
// of three in-order queues (load: MVIN, CONFIG_LD; execute: PRELOAD,
// COMPUTE_*, CONFIG_EX; store: MVOUT, CONFIG_ST) and synchronize through
// explicit dependency tokens between neighbouring queues, as in VTA: an
// instruction may wait for (pop) a token from the previous or next queue
// before it starts and signal (push) one to either when it is done.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_SYSTOLIC_ISA_H
#define IGN_TARGETS_SYSTOLIC_ISA_H

#include "Config.h"
#include "Result.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ign::systolic {

enum class Opcode : uint8_t {
  ConfigEx = 0,
  ConfigLd = 1,
  ConfigSt = 2,
  Mvin = 3,
  Mvout = 4,
  Preload = 5,
  ComputePreloaded = 6,
  ComputeAccumulated = 7,
  Flush = 8,
  /// Implicit im2col: the convolution geometry, then windows of an NCHW
  /// image moved straight into im2col rows of the scratchpad.
  ConfigIm2col = 9,
  MvinIm2col = 10,
};
const char *opcodeName(Opcode op);

enum class Queue : uint8_t { Load = 0, Execute = 1, Store = 2, None = 3 };
Queue queueOf(Opcode op);

/// Dependency token flags (word 0, bits 8-11).
enum DepFlags : uint8_t {
  PopPrev = 1,  // wait for a token from the previous queue
  PopNext = 2,  // wait for a token from the next queue
  PushPrev = 4, // signal the previous queue when done
  PushNext = 8, // signal the next queue when done
};

/// Instruction flags (word 0, bits 12-15).
enum InstrFlags : uint8_t {
  /// MVIN: the destination is the accumulator (bias, partial sums).
  /// COMPUTE: add to the accumulator instead of overwriting it.
  Accumulate = 1,
  /// MVOUT: apply ReLU.
  Relu = 2,
  /// MVIN: every row reads the same DRAM row (a bias broadcast).
  BroadcastRows = 4,
  /// COMPUTE (WS, IS) and PRELOAD (OS): add D, an m x n block of the
  /// accumulator, to the result (Gemmini's "D"): WS reads it at addrB, IS
  /// at addrA; in OS a PRELOAD puts D into the PEs for the next output tile.
  AddD = 8,
};

/// Which matrix a transfer moves, for stall and traffic statistics.
enum class Operand : uint8_t { A = 0, B = 1, C = 2 };
const char *operandName(Operand o);

struct Instr {
  Opcode op = Opcode::Flush;
  uint8_t deps = 0;
  uint8_t flags = 0;
  Operand operand = Operand::A;
  /// MVIN/MVOUT: rows x cols block; PRELOAD: stationary rows x cols;
  /// COMPUTE: m (rows), k (cols of A), n (cols of B).
  uint32_t rows = 0, cols = 0, n = 0;
  /// MVIN/MVOUT: DRAM byte address.
  uint64_t dram = 0;
  /// Local element addresses: MVIN/MVOUT local (spad or acc);
  /// PRELOAD addrA = stationary; COMPUTE addrA = A, addrB = B, addrC = C.
  uint32_t addrA = 0, addrB = 0, addrC = 0;
  /// CONFIG_*: stride and mode fields.
  Dataflow dataflow = Dataflow::WS;               // CONFIG_EX
  uint32_t strideA = 0, strideB = 0, strideC = 0; // element strides
  uint64_t dramStride = 0;                        // CONFIG_LD/ST, bytes
  float scale = 1.0f;                             // CONFIG_ST
  float clampMax = 0.0f; // CONFIG_ST: upper bound after ReLU (0: none)
  ElemType outType = ElemType::I8; // CONFIG_ST
  /// CONFIG_IM2COL: the image (channels x height x width, NCHW) and the
  /// window; MVIN_IM2COL: the first output pixel `p0` and window column
  /// `k0` of the rows x cols block.
  struct Im2col {
    uint32_t C = 0, H = 0, W = 0, kh = 0, kw = 0, sh = 1, sw = 1, ph = 0,
             pw = 0, dh = 1, dw = 1, OH = 0, OW = 0;
  } im2col;
  uint32_t p0 = 0, k0 = 0;

  std::array<uint64_t, 3> encode() const;
  static Result<Instr> decode(const std::array<uint64_t, 3> &w);
  std::string str() const;
};

/// A program: instructions plus the DRAM image size it needs.
struct Program {
  std::vector<Instr> instrs;
  uint64_t dramBytes = 0;

  std::vector<uint8_t> serialize() const;
  /// The program in \p size bytes at \p bytes (little-endian words).
  static Result<Program> deserialize(const uint8_t *bytes, size_t size);
  static Result<Program> deserialize(const std::vector<uint8_t> &bytes) {
    return deserialize(bytes.data(), bytes.size());
  }
};

// Builders, for program generators and tests.
Instr configEx(Dataflow df, uint32_t strideA, uint32_t strideB,
               uint32_t strideC);
Instr configLd(uint64_t dramStride, uint32_t localStride);
Instr configSt(uint64_t dramStride, uint32_t accStride, ElemType outType,
               float scale, bool relu, float clampMax = 0.0f);
Instr mvin(uint64_t dram, uint32_t local, uint32_t rows, uint32_t cols,
           Operand operand, bool toAcc = false, uint8_t deps = 0);
Instr mvout(uint64_t dram, uint32_t acc, uint32_t rows, uint32_t cols,
            uint8_t deps = 0);
Instr preload(uint32_t addr, uint32_t rows, uint32_t cols, uint8_t deps = 0);
Instr compute(bool preloaded, uint32_t a, uint32_t b, uint32_t c, uint32_t m,
              uint32_t k, uint32_t n, bool accumulate, uint8_t deps = 0);
Instr flush();
Instr configIm2col(const Instr::Im2col &geometry);
Instr mvinIm2col(uint64_t image, uint32_t local, uint32_t rows, uint32_t cols,
                 uint32_t p0, uint32_t k0, uint8_t deps = 0);

} // namespace ign::systolic

#endif
