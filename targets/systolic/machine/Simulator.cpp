//===- Simulator.cpp - Cycle-level and analytical systolic simulation -----===//
//
// Timing model (docs/systolic.md):
// - The front end issues instructions in program order into the load,
//   execute and store queues; an instruction waits while its queue holds
//   `depth` instructions that have not started. FLUSH waits for everything
//   before it.
// - Load and store units share one DRAM channel: a transfer of B bytes holds
//   it ceil(B / bandwidth) cycles, then its data lands `latency` later.
// - The array has an input port and a pipeline: PRELOAD holds the port R
//   cycles (stationary values shift down the R rows); a COMPUTE streaming L
//   vectors holds it L cycles and its last result leaves the array
//   L + R + C - 2 cycles after it started. New stationary values (PRELOAD,
//   unless the machine double-buffers them) and a new output-stationary tile
//   (COMPUTE_PRELOADED in OS) wait until the array has drained.
// - Dependency tokens: an execute instruction signals the load queue when
//   its inputs have entered the array and the store queue when its results
//   are in the accumulator.
//
//===----------------------------------------------------------------------===//

#include "Simulator.h"
#include "Text.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

namespace ign::systolic {

namespace {

Status instrError(size_t index, const Instr &in, const std::string &why) {
  return fail("instruction " + std::to_string(index) + " (" + in.str() +
              "): " + why);
}

// IEEE half <-> float, round to nearest even.
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { // subnormal
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (man & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | man << 13;
  } else {
    bits = sign | (exp + 112) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7FFFFFFF;
  if (absx >= 0x7F800000) // inf or nan
    return sign | 0x7C00 | (absx > 0x7F800000 ? 0x200 : 0);
  if (absx >= 0x477FF000) // rounds to >= 65520: overflow
    return sign | 0x7C00;
  if (absx < 0x33000001) // < 2^-25: rounds to zero
    return sign;
  int exp = int(absx >> 23);
  uint32_t man = (absx & 0x7FFFFF) | 0x800000;
  int shift = exp < 113 ? 126 - exp : 13; // subnormal or normal
  uint32_t kept = man >> shift, rest = man & ((1u << shift) - 1),
           half = 1u << (shift - 1);
  if (rest > half || (rest == half && (kept & 1)))
    ++kept;
  if (exp < 113)
    return sign | uint16_t(kept);
  // A rounding carry out of the mantissa moves into the exponent.
  return sign | uint16_t(((exp - 112) << 10) + (kept - 0x400));
}

/// Reads element \p i of type \p t at \p base as a double.
double loadElem(const uint8_t *base, ElemType t, int64_t i) {
  switch (t) {
  case ElemType::I8:
    return double(int8_t(base[i]));
  case ElemType::F16: {
    uint16_t h;
    std::memcpy(&h, base + 2 * i, 2);
    return halfToFloat(h);
  }
  case ElemType::F32: {
    float f;
    std::memcpy(&f, base + 4 * i, 4);
    return f;
  }
  case ElemType::I32: {
    int32_t v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  }
  return 0;
}

void storeElem(uint8_t *base, ElemType t, int64_t i, double v) {
  switch (t) {
  case ElemType::I8: {
    double r = std::nearbyint(v);
    base[i] = uint8_t(int8_t(std::clamp(r, -128.0, 127.0)));
    break;
  }
  case ElemType::F16: {
    uint16_t h = floatToHalf(float(v));
    std::memcpy(base + 2 * i, &h, 2);
    break;
  }
  case ElemType::F32: {
    float f = float(v);
    std::memcpy(base + 4 * i, &f, 4);
    break;
  }
  case ElemType::I32: {
    double r = std::nearbyint(v);
    int32_t x = int32_t(std::clamp(r, -2147483648.0, 2147483647.0));
    std::memcpy(base + 4 * i, &x, 4);
    break;
  }
  }
}

/// Per-queue configuration state, as the CONFIG_* instructions set it.
struct QueueState {
  Dataflow dataflow = Dataflow::WS;
  uint32_t strideA = 0, strideB = 0, strideC = 0;
  uint64_t ldDramStride = 0;
  uint32_t ldLocalStride = 0;
  uint64_t stDramStride = 0;
  uint32_t stAccStride = 0;
  ElemType outType = ElemType::I8;
  float scale = 1.0f;
  bool relu = false;
  float clampMax = 0.0f;
  // What the array holds: rows x cols of stationary values, or none.
  bool stationary = false;
  uint32_t statRows = 0, statCols = 0;
  bool tileOpen = false; // OS: an output tile is accumulating in the PEs
  bool pendingD = false; // OS: a PRELOAD put D into the PEs
  uint32_t dAddr = 0, dRows = 0, dCols = 0;
  bool hasIm2col = false; // CONFIG_IM2COL seen
  Instr::Im2col im2col;

  void apply(const Instr &in) {
    switch (in.op) {
    case Opcode::ConfigEx:
      dataflow = in.dataflow;
      strideA = in.strideA;
      strideB = in.strideB;
      strideC = in.strideC;
      stationary = tileOpen = false;
      break;
    case Opcode::ConfigLd:
      ldDramStride = in.dramStride;
      ldLocalStride = in.strideA;
      break;
    case Opcode::ConfigIm2col:
      hasIm2col = true;
      im2col = in.im2col;
      break;
    case Opcode::ConfigSt:
      stDramStride = in.dramStride;
      stAccStride = in.strideC;
      outType = in.outType;
      scale = in.scale;
      relu = in.flags & Relu;
      clampMax = in.clampMax;
      break;
    default:
      break;
    }
  }
};

/// Streamed length and PE footprint of a COMPUTE under a dataflow.
int64_t streamLength(Dataflow df, const Instr &in) {
  switch (df) {
  case Dataflow::WS:
    return in.rows; // m vectors of A
  case Dataflow::IS:
    return in.n; // n vectors of B
  case Dataflow::OS:
    return in.cols; // k steps
  }
  return 0;
}
int64_t peFootprint(Dataflow df, const Instr &in) {
  switch (df) {
  case Dataflow::WS:
    return int64_t(in.cols) * in.n;
  case Dataflow::IS:
    return int64_t(in.cols) * in.rows;
  case Dataflow::OS:
    return int64_t(in.rows) * in.n;
  }
  return 0;
}

bool blockFits(uint64_t addr, uint64_t rows, uint64_t cols, uint64_t stride,
               uint64_t limit) {
  if (rows == 0 || cols == 0)
    return true;
  if (stride == 0)
    stride = cols;
  if (stride < cols)
    return false;
  return addr + (rows - 1) * stride + cols <= limit;
}

/// Bytes an MVIN_IM2COL reads: whole image rows, for every channel and
/// input row its windows touch (a line-based DMA; overlapping windows
/// share the rows).
uint64_t im2colDramBytes(const Instr::Im2col &g, const Instr &in, uint64_t eb) {
  if (!in.rows || !in.cols)
    return 0;
  int64_t window = int64_t(g.kh) * g.kw;
  int64_t k0 = in.k0, k1 = int64_t(in.k0 + in.cols) - 1;
  int64_t ch0 = k0 / window, ch1 = k1 / window;
  int64_t kyMin = 0, kyMax = int64_t(g.kh) - 1;
  if (ch0 == ch1) { // within one channel: the rows of the columns used
    kyMin = k0 % window / g.kw;
    kyMax = k1 % window / g.kw;
  }
  int64_t oy0 = int64_t(in.p0) / g.OW,
          oy1 = int64_t(in.p0 + in.rows - 1) / g.OW;
  int64_t y0 = std::max<int64_t>(0, oy0 * g.sh - g.ph + kyMin * g.dh);
  int64_t y1 =
      std::min<int64_t>(int64_t(g.H) - 1, oy1 * g.sh - g.ph + kyMax * g.dh);
  if (y1 < y0)
    return 0;
  return uint64_t(ch1 - ch0 + 1) * uint64_t(y1 - y0 + 1) * g.W * eb;
}

double macPicojoules(ElemType t) {
  switch (t) {
  case ElemType::I8:
    return 0.23;
  case ElemType::F16:
    return 1.5;
  default:
    return 4.6;
  }
}

} // namespace

uint16_t floatToHalfBits(float f) { return floatToHalf(f); }
double loadElement(const uint8_t *base, ElemType t, int64_t i) {
  return loadElem(base, t, i);
}
void storeElement(uint8_t *base, ElemType t, int64_t i, double v) {
  storeElem(base, t, i, v);
}

double Report::microseconds() const {
  return double(totalCycles) / config.clockMHz;
}

nlohmann::json Report::toJSON() const {
  using json = nlohmann::json;
  json stallObj = json::object();
  for (auto &[k, v] : stalls)
    stallObj[k] = v;
  json spadOp = json::object(), dramOp = json::object();
  for (auto &[k, v] : spadReadsByOperand)
    spadOp[k] = v;
  for (auto &[k, v] : dramReadBytesByOperand)
    dramOp[k] = v;
  double cyc = std::max<int64_t>(totalCycles, 1);
  return json{
      {"machine", config.describe()},
      {"instructions", instructions},
      {"total_cycles", totalCycles},
      {"compute_cycles", computeSpan - stallCycles},
      {"compute_span", computeSpan},
      {"busy_cycles", busyCycles},
      {"stall_cycles", stallCycles},
      {"stalls", std::move(stallObj)},
      {"utilization", utilization},
      {"mapping_efficiency", mappingEfficiency},
      {"macs", macs},
      {"time_us", microseconds()},
      {"sram", json{{"spad_reads", spadReads},
                    {"spad_writes", spadWrites},
                    {"spad_reads_by_operand", std::move(spadOp)},
                    {"acc_reads", accReads},
                    {"acc_writes", accWrites}}},
      {"dram",
       json{{"read_bytes", dramReadBytes},
            {"write_bytes", dramWriteBytes},
            {"read_bytes_by_operand", std::move(dramOp)},
            {"busy_cycles", dramBusyCycles},
            {"bytes_per_cycle", double(dramReadBytes + dramWriteBytes) / cyc}}},
      {"actions", json{{"mac", macs},
                       {"pe_cycles", peCycles},
                       {"preload", preloads},
                       {"compute", computes},
                       {"mvin", mvins},
                       {"mvout", mvouts},
                       {"spad_access", spadReads + spadWrites},
                       {"acc_access", accReads + accWrites},
                       {"dram_bytes", dramReadBytes + dramWriteBytes}}},
      {"energy_uj", energyPicojoules * 1e-6},
  };
}

namespace {

/// Machine::verify's walk: the state the CONFIG_* instructions set so far
/// and the token counts per channel.
class Verifier {
public:
  Verifier(const ArrayConfig &c, const Program &program)
      : c_(c), program_(program), spadElems_(c.spadElems()),
        accElems_(c.accElems()), eb_(elemBytes(c.inType)),
        ab_(elemBytes(c.accType())) {
    st_.dataflow = c.dataflow;
    st_.outType = c.inType;
  }

  Status run() {
    for (index_ = 0; index_ < program_.instrs.size(); ++index_) {
      in_ = &program_.instrs[index_];
      if (Status s = countTokens(*in_); !s.ok())
        return s;
      if (Status s = check(*in_); !s.ok())
        return s;
    }
    return checkBalance();
  }

private:
  enum Channel { LdToEx, ExToLd, ExToSt, StToEx };

  Status bad(const std::string &why) const {
    return instrError(index_, *in_, why);
  }

  // Token balance per channel, in program order per queue: a pop needs a
  // push somewhere in the program (order across queues is checked at run
  // time, where a shortage is a deadlock).
  Status countTokens(const Instr &in) {
    Queue q = queueOf(in.op);
    if (in.deps) {
      if (q == Queue::None)
        return bad("flush cannot carry dependency flags");
      if (q == Queue::Load && (in.deps & (PopPrev | PushPrev)))
        return bad("the load queue has no previous queue");
      if (q == Queue::Store && (in.deps & (PopNext | PushNext)))
        return bad("the store queue has no next queue");
    }
    if (q == Queue::Load) {
      if (in.deps & PopNext)
        ++pops_[ExToLd];
      if (in.deps & PushNext)
        ++pushes_[LdToEx];
    } else if (q == Queue::Execute) {
      if (in.deps & PopPrev)
        ++pops_[LdToEx];
      if (in.deps & PopNext)
        ++pops_[StToEx];
      if (in.deps & PushPrev)
        ++pushes_[ExToLd];
      if (in.deps & PushNext)
        ++pushes_[ExToSt];
    } else if (q == Queue::Store) {
      if (in.deps & PopPrev)
        ++pops_[ExToSt];
      if (in.deps & PushPrev)
        ++pushes_[StToEx];
    }
    return Status();
  }

  Status check(const Instr &in) {
    switch (in.op) {
    case Opcode::ConfigEx:
      if (!c_.supports(in.dataflow))
        return bad("machine '" + c_.name + "' cannot run dataflow " +
                   dataflowName(in.dataflow));
      st_.apply(in);
      return Status();
    case Opcode::ConfigIm2col: {
      const Instr::Im2col &g = in.im2col;
      if (!g.C || !g.H || !g.W || !g.kh || !g.kw || !g.sh || !g.sw || !g.dh ||
          !g.dw || !g.OH || !g.OW)
        return bad("im2col geometry has a zero size, stride or dilation");
      st_.apply(in);
      return Status();
    }
    case Opcode::ConfigLd:
    case Opcode::ConfigSt:
      if (in.op == Opcode::ConfigSt && in.outType == ElemType::I8 &&
          c_.inType != ElemType::I8)
        return bad("i8 output needs an i8 machine");
      if (in.op == Opcode::ConfigSt &&
          (!std::isfinite(in.scale) || !std::isfinite(in.clampMax) ||
           in.clampMax < 0))
        return bad("scale or clamp is not finite, or the clamp is negative");
      st_.apply(in);
      return Status();
    case Opcode::MvinIm2col:
      return checkMvinIm2col(in);
    case Opcode::Mvin:
      return checkMvin(in);
    case Opcode::Mvout:
      return checkMvout(in);
    case Opcode::Preload:
      return st_.dataflow == Dataflow::OS ? checkPreloadD(in)
                                          : checkPreload(in);
    case Opcode::ComputePreloaded:
    case Opcode::ComputeAccumulated:
      return checkCompute(in);
    case Opcode::Flush:
      return Status();
    }
    return Status();
  }

  /// The DRAM image's size, for messages.
  std::string imageBytes() const { return std::to_string(program_.dramBytes); }

  Status checkMvinIm2col(const Instr &in) const {
    if (!st_.hasIm2col)
      return bad("MVIN_IM2COL before CONFIG_IM2COL");
    const Instr::Im2col &g = st_.im2col;
    if (uint64_t(in.p0) + in.rows > uint64_t(g.OH) * g.OW ||
        uint64_t(in.k0) + in.cols > uint64_t(g.C) * g.kh * g.kw)
      return bad(strFormat("pixels %u+%u or window columns %u+%u leave the "
                           "%ux%u output and %ux%ux%u window",
                           in.p0, in.rows, in.k0, in.cols, g.OH, g.OW, g.C,
                           g.kh, g.kw));
    if (!blockFits(in.addrA, in.rows, in.cols, st_.ldLocalStride, spadElems_))
      return bad("block leaves the scratchpad");
    if (in.dram + uint64_t(g.C) * g.H * g.W * eb_ > program_.dramBytes)
      return bad("the image leaves the " + imageBytes() + "-byte DRAM image");
    return Status();
  }

  Status checkMvin(const Instr &in) const {
    bool toAcc = in.flags & Accumulate;
    uint64_t b = toAcc ? ab_ : eb_;
    if (!blockFits(in.addrA, in.rows, in.cols, st_.ldLocalStride,
                   toAcc ? accElems_ : spadElems_))
      return bad(
          strFormat("block leaves the %s (%llu elements)",
                    toAcc ? "accumulator" : "scratchpad",
                    (unsigned long long)(toAcc ? accElems_ : spadElems_)));
    uint64_t dstride = st_.ldDramStride ? st_.ldDramStride : in.cols * b;
    uint64_t dramRows = (in.flags & BroadcastRows) ? 1 : in.rows;
    if (in.rows && in.cols &&
        (dstride < in.cols * b ||
         in.dram + (dramRows - 1) * dstride + in.cols * b > program_.dramBytes))
      return bad("DRAM block leaves the " + imageBytes() + "-byte image");
    return Status();
  }

  Status checkMvout(const Instr &in) const {
    if (!blockFits(in.addrA, in.rows, in.cols, st_.stAccStride, accElems_))
      return bad(strFormat("block leaves the accumulator (%llu elements)",
                           (unsigned long long)accElems_));
    uint64_t b = elemBytes(st_.outType);
    uint64_t dstride = st_.stDramStride ? st_.stDramStride : in.cols * b;
    if (in.rows && in.cols &&
        (dstride < in.cols * b ||
         in.dram + (in.rows - 1) * dstride + in.cols * b > program_.dramBytes))
      return bad("DRAM block leaves the " + imageBytes() + "-byte image");
    return Status();
  }

  /// Output stationary: PRELOAD puts D into the PEs of the next tile.
  Status checkPreloadD(const Instr &in) {
    if (!(in.flags & AddD))
      return bad("in the output-stationary dataflow PRELOAD only puts D "
                 "into the PEs (flag add_d); COMPUTE_PRELOADED opens a "
                 "new output tile");
    if (in.rows < 1 || in.cols < 1 || in.rows > uint64_t(c_.rows) ||
        in.cols > uint64_t(c_.cols))
      return bad(strFormat("D %ux%u does not fit the %lldx%lld array", in.rows,
                           in.cols, (long long)c_.rows, (long long)c_.cols));
    if (!blockFits(in.addrA, in.rows, in.cols, 0, accElems_))
      return bad("D leaves the accumulator");
    st_.pendingD = true;
    st_.dRows = in.rows;
    st_.dCols = in.cols;
    return Status();
  }

  Status checkPreload(const Instr &in) {
    if (in.flags & AddD)
      return bad("add_d on PRELOAD is for the output-stationary dataflow");
    // WS holds B (k x n): k <= rows, n <= cols. IS holds A (m x k):
    // k <= rows, m <= cols.
    uint64_t kDim = st_.dataflow == Dataflow::WS ? in.rows : in.cols;
    uint64_t other = st_.dataflow == Dataflow::WS ? in.cols : in.rows;
    if (kDim < 1 || other < 1 || kDim > uint64_t(c_.rows) ||
        other > uint64_t(c_.cols))
      return bad(strFormat("stationary %ux%u does not fit the %lldx%lld "
                           "array in %s",
                           in.rows, in.cols, (long long)c_.rows,
                           (long long)c_.cols, dataflowName(st_.dataflow)));
    uint32_t stride = st_.dataflow == Dataflow::WS ? st_.strideB : st_.strideA;
    if (!blockFits(in.addrA, in.rows, in.cols, stride, spadElems_))
      return bad("stationary block leaves the scratchpad");
    st_.stationary = true;
    st_.statRows = in.rows;
    st_.statCols = in.cols;
    return Status();
  }

  /// The operands of a COMPUTE: the output tile (OS) or the stationary
  /// values it streams against (WS, IS).
  Status checkComputeOperands(const Instr &in) {
    using ull = unsigned long long;
    uint64_t m = in.rows, k = in.cols, n = in.n;
    Dataflow df = st_.dataflow;
    if (df == Dataflow::OS) {
      if (m > uint64_t(c_.rows) || n > uint64_t(c_.cols))
        return bad(strFormat("output tile %llux%llu does not fit the "
                             "%lldx%lld array",
                             ull(m), ull(n), (long long)c_.rows,
                             (long long)c_.cols));
      if (in.op != Opcode::ComputePreloaded && !st_.tileOpen)
        return bad("COMPUTE_ACCUMULATED without an open output tile");
      st_.tileOpen = true;
      if (!blockFits(in.addrA, m, k, st_.strideA, spadElems_) ||
          !blockFits(in.addrB, k, n, st_.strideB, spadElems_))
        return bad("operand block leaves the scratchpad");
      return Status();
    }
    if (!st_.stationary)
      return bad("no stationary values: PRELOAD first");
    bool ws = df == Dataflow::WS;
    if (ws ? (st_.statRows != k || st_.statCols != n)
           : (st_.statRows != m || st_.statCols != k))
      return bad(strFormat("the preloaded %ux%u tile does not match "
                           "m=%llu k=%llu n=%llu in %s",
                           st_.statRows, st_.statCols, ull(m), ull(k), ull(n),
                           dataflowName(df)));
    if (ws ? !blockFits(in.addrA, m, k, st_.strideA, spadElems_)
           : !blockFits(in.addrB, k, n, st_.strideB, spadElems_))
      return bad("streamed block leaves the scratchpad");
    return Status();
  }

  Status checkCompute(const Instr &in) {
    using ull = unsigned long long;
    uint64_t m = in.rows, k = in.cols, n = in.n;
    if (!m || !k || !n)
      return bad("empty computation");
    Dataflow df = st_.dataflow;
    if (Status s = checkComputeOperands(in); !s.ok())
      return s;
    if (!blockFits(in.addrC, m, n, st_.strideC, accElems_))
      return bad(strFormat("result block leaves the accumulator (%llu "
                           "elements)",
                           ull(accElems_)));
    if (in.flags & AddD) {
      if (df == Dataflow::OS)
        return bad("in the output-stationary dataflow D comes with a "
                   "PRELOAD");
      uint32_t d = df == Dataflow::WS ? in.addrB : in.addrA;
      if (!blockFits(d, m, n, 0, accElems_))
        return bad("D leaves the accumulator");
    }
    if (df == Dataflow::OS && in.op == Opcode::ComputePreloaded &&
        st_.pendingD) {
      if (st_.dRows != m || st_.dCols != n)
        return bad(strFormat("the preloaded D %ux%u does not match the "
                             "%llux%llu output tile",
                             st_.dRows, st_.dCols, ull(m), ull(n)));
      st_.pendingD = false;
    }
    return Status();
  }

  Status checkBalance() const {
    const char *names[4] = {"load->execute", "execute->load", "execute->store",
                            "store->execute"};
    for (int ch = 0; ch < 4; ++ch)
      if (pops_[ch] > pushes_[ch])
        return fail(strFormat("program waits for %lld %s tokens but only "
                              "%lld are ever signalled: it would deadlock",
                              (long long)pops_[ch], names[ch],
                              (long long)pushes_[ch]));
    return Status();
  }

  const ArrayConfig &c_;
  const Program &program_;
  const uint64_t spadElems_, accElems_, eb_, ab_;
  QueueState st_;
  int64_t pushes_[4] = {0, 0, 0, 0}, pops_[4] = {0, 0, 0, 0};
  size_t index_ = 0;
  const Instr *in_ = nullptr;
};

} // namespace

Status Machine::verify(const Program &program) const {
  if (Status s = config_.validate(); !s.ok())
    return s;
  return Verifier(config_, program).run();
}

namespace {

/// A dependency token: when it is signalled, by a transfer of which
/// operand, and whether its producer waited for the front end to issue it.
struct Token {
  int64_t time;
  Operand operand;
  bool issueBound;
};

/// One instruction's times: start, end, and when it signals the previous
/// and the next queue.
struct StepTimes {
  int64_t s, e, pushPrevAt, pushNextAt;
};

/// What an instruction's start waited for: the tokens it consumed (-1:
/// none) and its unit's and the DRAM channel's state before it.
struct Consumed {
  int64_t ld = -1, st = -1;
  Operand operand = Operand::A;
  bool issueBound = false;
  int64_t unitFreeBefore = 0, chanFreeBefore = 0;
};

/// Machine::simulate: the front end, the three queues, the DRAM channel and
/// the array, one instruction at a time in start order.
class CycleSim {
public:
  CycleSim(const ArrayConfig &c, std::vector<uint8_t> &dram,
           const Program &program, const SimOptions &options)
      : c_(c), dram_(dram), program_(program), options_(options),
        n_(program.instrs.size()), R_(c.rows), C_(c.cols),
        bw_(c.dramBytesPerCycle), dispatch_(n_, -1), start_(n_, -1),
        end_(n_, -1), posInQueue_(n_, 0) {
    if (options.functional) {
      spad_.assign(c.spadBytes, 0);
      acc_.assign(c.accBytes, 0);
    }
    for (size_t i = 0; i < n_; ++i) {
      Queue q = queueOf(program.instrs[i].op);
      if (q != Queue::None) {
        posInQueue_[i] = queueInstrs_[unsigned(q)].size();
        queueInstrs_[unsigned(q)].push_back(i);
      }
    }
    st_.dataflow = c.dataflow;
    st_.outType = c.inType;
    r_.config = c;
    r_.instructions = int64_t(n_);
  }

  Result<Report> run() {
    while (done_ < n_) {
      issue();
      if (done_ == n_)
        break;
      int64_t t0 = 0;
      int q = pickQueue(t0);
      if (q < 0)
        return fail("deadlock: no queue can proceed" + deadlockDetail());
      step(q, t0);
    }
    return finish();
  }

private:
  int64_t transferCycles(uint64_t bytes) const {
    if (bw_ <= 0 || bytes == 0)
      return 0;
    return int64_t(std::ceil(double(bytes) / bw_));
  }

  /// Front end: issues in program order while the queues have room.
  void issue() {
    const int64_t depth[3] = {c_.loadQueueDepth, c_.exQueueDepth,
                              c_.storeQueueDepth};
    while (nextDispatch_ < n_) {
      size_t i = nextDispatch_;
      const Instr &in = program_.instrs[i];
      Queue q = queueOf(in.op);
      int64_t t = lastDispatch_;
      if (q == Queue::None) { // FLUSH: everything before it has finished
        bool allDone = true;
        for (size_t j = 0; j < i && allDone; ++j)
          allDone =
              end_[j] >= 0 || queueOf(program_.instrs[j].op) == Queue::None;
        if (!allDone)
          break;
        for (size_t j = 0; j < i; ++j)
          t = std::max(t, end_[j]);
        dispatch_[i] = start_[i] = end_[i] = t;
        ++done_;
      } else {
        size_t pos = posInQueue_[i];
        if (int64_t(pos) >= depth[unsigned(q)]) {
          size_t leaving = queueInstrs_[unsigned(q)][pos - depth[unsigned(q)]];
          if (start_[leaving] < 0)
            break;
          t = std::max(t, start_[leaving]);
        }
        dispatch_[i] = t;
      }
      lastDispatch_ = t;
      ++nextDispatch_;
    }
  }

  /// The ready queue head with the earliest start, or -1.
  int pickQueue(int64_t &bestStart) const {
    int best = -1;
    for (int q = 0; q < 3; ++q) {
      if (head_[q] >= queueInstrs_[q].size())
        continue;
      size_t i = queueInstrs_[q][head_[q]];
      if (dispatch_[i] < 0)
        continue;
      const Instr &in = program_.instrs[i];
      int64_t t = std::max(dispatch_[i], unitFree_[q]);
      auto need = [&](const std::deque<Token> &fifo, bool want) {
        if (!want)
          return true;
        if (fifo.empty())
          return false;
        t = std::max(t, fifo.front().time);
        return true;
      };
      bool ready = true;
      if (q == 0) {
        ready = need(exToLd_, in.deps & PopNext);
      } else if (q == 1) {
        ready = need(ldToEx_, in.deps & PopPrev) &&
                need(stToEx_, in.deps & PopNext);
      } else {
        ready = need(exToSt_, in.deps & PopPrev);
      }
      if (!ready)
        continue;
      if (best < 0 || t < bestStart) {
        best = q;
        bestStart = t;
      }
    }
    return best;
  }

  std::string deadlockDetail() const {
    std::string waits;
    const char *qn[3] = {"load", "execute", "store"};
    for (int q = 0; q < 3; ++q)
      if (head_[q] < queueInstrs_[q].size()) {
        size_t i = queueInstrs_[q][head_[q]];
        waits += std::string("; ") + qn[q] + " queue at instruction " +
                 std::to_string(i) + " (" + program_.instrs[i].str() + ")";
      }
    if (nextDispatch_ < n_)
      waits += "; instruction " + std::to_string(nextDispatch_) +
               " waits to be issued";
    return waits;
  }

  Consumed consumeTokens(int q, const Instr &in) {
    Consumed tok;
    tok.unitFreeBefore = unitFree_[q];
    tok.chanFreeBefore = chanFree_;
    if (q == 0 && (in.deps & PopNext))
      exToLd_.pop_front();
    if (q == 1 && (in.deps & PopPrev)) {
      tok.ld = ldToEx_.front().time;
      tok.operand = ldToEx_.front().operand;
      tok.issueBound = ldToEx_.front().issueBound;
      ldToEx_.pop_front();
    }
    if (q == 1 && (in.deps & PopNext)) {
      tok.st = stToEx_.front().time;
      stToEx_.pop_front();
    }
    if (q == 2 && (in.deps & PopPrev))
      exToSt_.pop_front();
    return tok;
  }

  /// Runs the head of queue \p q, ready at \p t0.
  void step(int q, int64_t t0) {
    const size_t i = queueInstrs_[q][head_[q]];
    const Instr &in = program_.instrs[i];
    Consumed tok = consumeTokens(q, in);
    StepTimes t{t0, t0, t0, t0};
    const int64_t prevPortFree = portFree_, prevDrain = drainDone_;
    execute(in, t);
    if (q == 1 && in.op != Opcode::ConfigEx)
      accountStall(in, t, t0, tok, prevPortFree, prevDrain);
    complete(q, i, in, t, tok);
  }

  void execute(const Instr &in, StepTimes &t) {
    switch (in.op) {
    case Opcode::ConfigEx:
    case Opcode::ConfigLd:
    case Opcode::ConfigSt:
    case Opcode::ConfigIm2col:
      st_.apply(in);
      break;
    case Opcode::MvinIm2col:
      execMvinIm2col(in, t);
      break;
    case Opcode::Mvin:
      execMvin(in, t);
      break;
    case Opcode::Mvout:
      execMvout(in, t);
      break;
    case Opcode::Preload:
      if (st_.dataflow == Dataflow::OS)
        execPreloadD(in, t);
      else
        execPreload(in, t);
      break;
    case Opcode::ComputePreloaded:
    case Opcode::ComputeAccumulated:
      execCompute(in, t);
      break;
    case Opcode::Flush:
      break;
    }
  }

  /// A load of \p bytes on the DRAM channel (its data lands `latency`
  /// after the transfer).
  void load(uint64_t bytes, StepTimes &t) {
    t.s = bw_ > 0 ? std::max(t.s, chanFree_) : t.s; // unlimited: no queueing
    int64_t xfer = transferCycles(bytes);
    chanFree_ = t.s + xfer;
    r_.dramBusyCycles += xfer;
    t.e = chanFree_ + (bytes ? c_.dramLatency : 0);
    unitFree_[0] = chanFree_;
    t.pushNextAt = t.e;
    r_.dramReadBytes += bytes;
  }

  void execMvinIm2col(const Instr &in, StepTimes &t) {
    uint64_t eb = elemBytes(c_.inType);
    uint64_t bytes = im2colDramBytes(st_.im2col, in, eb);
    load(bytes, t);
    r_.dramReadBytesByOperand["A"] += bytes;
    r_.spadWrites += int64_t(in.rows) * in.cols;
    ++r_.mvins;
    if (!options_.functional)
      return;
    const Instr::Im2col &g = st_.im2col;
    uint64_t lstride = st_.ldLocalStride ? st_.ldLocalStride : in.cols;
    const uint8_t *image = dram_.data() + in.dram;
    int64_t window = int64_t(g.kh) * g.kw;
    for (uint64_t row = 0; row < in.rows; ++row) {
      int64_t p = int64_t(in.p0 + row), oy = p / g.OW, ox = p % g.OW;
      uint8_t *dst = spad_.data() + (in.addrA + row * lstride) * eb;
      for (uint64_t col = 0; col < in.cols; ++col) {
        int64_t kk = int64_t(in.k0 + col), ch = kk / window,
                ky = kk % window / g.kw, kx = kk % g.kw;
        int64_t y = oy * g.sh - g.ph + ky * g.dh;
        int64_t x = ox * g.sw - g.pw + kx * g.dw;
        if (y < 0 || y >= int64_t(g.H) || x < 0 || x >= int64_t(g.W))
          std::memset(dst + col * eb, 0, eb);
        else
          std::memcpy(dst + col * eb, image + ((ch * g.H + y) * g.W + x) * eb,
                      eb);
      }
    }
  }

  void execMvin(const Instr &in, StepTimes &t) {
    bool toAcc = in.flags & Accumulate;
    bool broadcast = in.flags & BroadcastRows;
    uint64_t b = elemBytes(toAcc ? c_.accType() : c_.inType);
    uint64_t bytes = uint64_t(broadcast ? 1 : in.rows) * in.cols * b;
    load(bytes, t);
    r_.dramReadBytesByOperand[operandName(in.operand)] += bytes;
    (toAcc ? r_.accWrites : r_.spadWrites) += int64_t(in.rows) * in.cols;
    ++r_.mvins;
    if (!options_.functional)
      return;
    uint64_t dstride = st_.ldDramStride ? st_.ldDramStride : in.cols * b;
    uint64_t lstride = st_.ldLocalStride ? st_.ldLocalStride : in.cols;
    uint8_t *dst = toAcc ? acc_.data() : spad_.data();
    for (uint64_t row = 0; row < in.rows; ++row)
      std::memcpy(dst + (in.addrA + row * lstride) * b,
                  dram_.data() + in.dram + (broadcast ? 0 : row) * dstride,
                  in.cols * b);
  }

  void execMvout(const Instr &in, StepTimes &t) {
    uint64_t ob = elemBytes(st_.outType);
    uint64_t bytes = uint64_t(in.rows) * in.cols * ob;
    t.s = bw_ > 0 ? std::max(t.s, chanFree_) : t.s; // unlimited: no queueing
    int64_t xfer = transferCycles(bytes);
    chanFree_ = t.s + xfer;
    r_.dramBusyCycles += xfer;
    t.e = chanFree_;
    unitFree_[2] = chanFree_;
    t.pushPrevAt = t.e;
    r_.dramWriteBytes += bytes;
    r_.accReads += int64_t(in.rows) * in.cols;
    ++r_.mvouts;
    if (!options_.functional)
      return;
    uint64_t dstride = st_.stDramStride ? st_.stDramStride : in.cols * ob;
    uint64_t astride = st_.stAccStride ? st_.stAccStride : in.cols;
    for (uint64_t row = 0; row < in.rows; ++row)
      for (uint64_t col = 0; col < in.cols; ++col) {
        double v = loadElem(acc_.data(), c_.accType(),
                            in.addrA + row * astride + col) *
                   st_.scale;
        if (st_.relu && v < 0)
          v = 0;
        if (st_.clampMax > 0 && v > st_.clampMax)
          v = st_.clampMax;
        storeElem(dram_.data() + in.dram + row * dstride, st_.outType, col, v);
      }
  }

  /// Output stationary: D shifts into the PEs of a new output tile, after
  /// the drain.
  void execPreloadD(const Instr &in, StepTimes &t) {
    int64_t earliest = std::max(t.s, portFree_);
    t.s = std::max(earliest, drainDone_);
    t.e = t.s + R_;
    portFree_ = t.e;
    t.pushPrevAt = t.pushNextAt = t.e;
    r_.busyCycles += R_;
    ++r_.preloads;
    r_.accReads += int64_t(in.rows) * in.cols;
    st_.pendingD = true;
    st_.dAddr = in.addrA;
    st_.dRows = in.rows;
    st_.dCols = in.cols;
  }

  void execPreload(const Instr &in, StepTimes &t) {
    int64_t earliest = std::max(t.s, portFree_);
    t.s = c_.overlapPreload ? earliest : std::max(earliest, drainDone_);
    t.e = t.s + R_;
    portFree_ = t.e;
    t.pushPrevAt = t.e;
    t.pushNextAt = t.e;
    r_.busyCycles += R_;
    ++r_.preloads;
    r_.spadReads += int64_t(in.rows) * in.cols;
    r_.spadReadsByOperand[st_.dataflow == Dataflow::WS ? "B" : "A"] +=
        int64_t(in.rows) * in.cols;
    st_.stationary = true;
    st_.statRows = in.rows;
    st_.statCols = in.cols;
    if (!options_.functional)
      return;
    uint32_t stride = st_.dataflow == Dataflow::WS ? st_.strideB : st_.strideA;
    if (!stride)
      stride = in.cols;
    stationaryVals_.resize(size_t(in.rows) * in.cols);
    for (uint64_t row = 0; row < in.rows; ++row)
      for (uint64_t col = 0; col < in.cols; ++col)
        stationaryVals_[row * in.cols + col] =
            loadElem(spad_.data(), c_.inType, in.addrA + row * stride + col);
  }

  void execCompute(const Instr &in, StepTimes &t) {
    Dataflow df = st_.dataflow;
    bool newTile = df == Dataflow::OS && in.op == Opcode::ComputePreloaded;
    int64_t earliest = std::max(t.s, portFree_);
    t.s = newTile ? std::max(earliest, drainDone_) : earliest;
    int64_t len = streamLength(df, in);
    portFree_ = t.s + len;
    t.e = t.s + len + R_ + C_ - 2;
    drainDone_ = std::max(drainDone_, t.e);
    t.pushPrevAt = portFree_;
    t.pushNextAt = t.e;
    r_.busyCycles += len;
    ++r_.computes;
    int64_t m = in.rows, k = in.cols, nn = in.n;
    r_.macs += m * k * nn;
    if (in.op == Opcode::ComputePreloaded) {
      mapEffSum_ += double(peFootprint(df, in)) / double(R_ * C_);
      ++tiles_;
    }
    int64_t aReads = df == Dataflow::IS ? 0 : m * k;
    int64_t bReads = df == Dataflow::WS ? 0 : k * nn;
    r_.spadReads += aReads + bReads;
    if (aReads)
      r_.spadReadsByOperand["A"] += aReads;
    if (bReads)
      r_.spadReadsByOperand["B"] += bReads;
    bool accumulate = in.flags & Accumulate;
    r_.accWrites += m * nn;
    if (accumulate)
      r_.accReads += m * nn;
    int64_t dBase = -1; // D, dense m x n in the accumulator
    if (df == Dataflow::OS) {
      if (in.op == Opcode::ComputePreloaded && st_.pendingD) {
        dBase = st_.dAddr;
        st_.pendingD = false;
      }
    } else if (in.flags & AddD) {
      dBase = df == Dataflow::WS ? in.addrB : in.addrA;
      r_.accReads += m * nn;
    }
    if (options_.functional)
      computeValues(in, dBase);
  }

  /// C (+)= A B (+ D at \p dBase when not -1) into the accumulator.
  void computeValues(const Instr &in, int64_t dBase) {
    Dataflow df = st_.dataflow;
    bool accumulate = in.flags & Accumulate;
    int64_t m = in.rows, k = in.cols, nn = in.n;
    uint32_t sa = st_.strideA ? st_.strideA : k;
    uint32_t sb = st_.strideB ? st_.strideB : nn;
    uint32_t sc = st_.strideC ? st_.strideC : nn;
    std::vector<double> A(m * k), B(k * nn);
    for (int64_t x = 0; x < m; ++x)
      for (int64_t y = 0; y < k; ++y)
        A[x * k + y] = df == Dataflow::IS ? stationaryVals_[x * k + y]
                                          : loadElem(spad_.data(), c_.inType,
                                                     in.addrA + x * sa + y);
    for (int64_t x = 0; x < k; ++x)
      for (int64_t y = 0; y < nn; ++y)
        B[x * nn + y] = df == Dataflow::WS ? stationaryVals_[x * nn + y]
                                           : loadElem(spad_.data(), c_.inType,
                                                      in.addrB + x * sb + y);
    bool isInt = c_.inType == ElemType::I8;
    uint8_t *acc = acc_.data();
    for (int64_t x = 0; x < m; ++x)
      for (int64_t y = 0; y < nn; ++y) {
        int64_t idx = in.addrC + x * sc + y;
        if (isInt) {
          int64_t sum = 0;
          for (int64_t z = 0; z < k; ++z)
            sum += int64_t(A[x * k + z]) * int64_t(B[z * nn + y]);
          if (accumulate)
            sum += int64_t(loadElem(acc, ElemType::I32, idx));
          if (dBase >= 0)
            sum += int64_t(loadElem(acc, ElemType::I32, dBase + x * nn + y));
          int32_t wrapped = int32_t(uint32_t(uint64_t(sum)));
          std::memcpy(acc + 4 * idx, &wrapped, 4);
        } else {
          float sum =
              accumulate ? float(loadElem(acc, ElemType::F32, idx)) : 0.0f;
          for (int64_t z = 0; z < k; ++z)
            sum += float(A[x * k + z]) * float(B[z * nn + y]);
          if (dBase >= 0)
            sum += float(loadElem(acc, ElemType::F32, dBase + x * nn + y));
          std::memcpy(acc + 4 * idx, &sum, 4);
        }
      }
  }

  /// Stall accounting: time the array's input port stood idle inside the
  /// compute span for a reason other than the pipeline drain. The start is
  /// max(t0, base), so any wait beyond base is t0's: a token or the
  /// dispatch.
  void accountStall(const Instr &in, const StepTimes &t, int64_t t0,
                    const Consumed &tok, int64_t prevPortFree,
                    int64_t prevDrain) {
    if (firstExec_ < 0) {
      firstExec_ = t.s;
    } else {
      bool waitsForDrain =
          (in.op == Opcode::Preload &&
           (!c_.overlapPreload || st_.dataflow == Dataflow::OS)) ||
          (st_.dataflow == Dataflow::OS && in.op == Opcode::ComputePreloaded);
      int64_t base =
          waitsForDrain ? std::max(prevPortFree, prevDrain) : prevPortFree;
      int64_t stall = t.s - base;
      if (stall > 0) {
        // Ties go to the store queue (the accumulator slot), then to the
        // operand's load unless the front end held that load back.
        std::string cause = "dispatch";
        if (tok.st == t0)
          cause = "store";
        else if (tok.ld == t0 && !tok.issueBound)
          cause = std::string("load.") + operandName(tok.operand);
        r_.stalls[cause] += stall;
        r_.stallCycles += stall;
      }
    }
    lastExecEnd_ = std::max(lastExecEnd_, t.e);
  }

  /// Complete: tokens and bookkeeping.
  void complete(int q, size_t i, const Instr &in, const StepTimes &t,
                const Consumed &tok) {
    if (q == 0 && (in.deps & PushNext)) {
      // Issue-bound: the load started when the front end issued it, later
      // than its unit and the channel would have allowed (a token arriving
      // at the same time counts as the front end's).
      bool issueBound = dispatch_[i] == t.s && t.s > tok.unitFreeBefore &&
                        (bw_ <= 0 || t.s > tok.chanFreeBefore);
      ldToEx_.push_back({t.pushNextAt, in.operand, issueBound});
    }
    if (q == 1 && (in.deps & PushPrev))
      exToLd_.push_back({t.pushPrevAt, Operand::A, false});
    if (q == 1 && (in.deps & PushNext))
      exToSt_.push_back({t.pushNextAt, Operand::C, false});
    if (q == 2 && (in.deps & PushPrev))
      stToEx_.push_back({t.pushPrevAt, Operand::C, false});
    start_[i] = t.s;
    end_[i] = std::max(t.e, t.s);
    if (q == 1)
      unitFree_[1] = std::max(unitFree_[1], t.s); // in order: starts never pass
    firstStart_ = std::min(firstStart_, t.s);
    lastEnd_ = std::max(lastEnd_, end_[i]);
    ++head_[q];
    ++done_;
  }

  Report finish() {
    Report &r = r_;
    r.totalCycles = lastEnd_ - std::min(firstStart_, lastEnd_);
    r.computeSpan = firstExec_ < 0 ? 0 : lastExecEnd_ - firstExec_;
    r.peCycles = R_ * C_ * r.computeSpan;
    r.utilization = r.peCycles ? double(r.macs) / double(r.peCycles) : 0;
    r.mappingEfficiency = tiles_ ? mapEffSum_ / double(tiles_) : 0;
    double sramBytes =
        double(r.spadReads + r.spadWrites) * elemBytes(c_.inType) +
        double(r.accReads + r.accWrites) * elemBytes(c_.accType());
    r.energyPicojoules = double(r.macs) * macPicojoules(c_.inType) +
                         sramBytes * 1.25 +
                         double(r.dramReadBytes + r.dramWriteBytes) * 160.0;
    return r;
  }

  const ArrayConfig &c_;
  std::vector<uint8_t> &dram_;
  const Program &program_;
  const SimOptions &options_;
  const size_t n_;
  const int64_t R_, C_;
  const double bw_;
  std::vector<uint8_t> spad_, acc_;
  std::vector<double> stationaryVals_;
  // Per-queue instruction lists and the front end's and queues' progress.
  std::vector<size_t> queueInstrs_[3];
  std::vector<int64_t> dispatch_, start_, end_;
  std::vector<size_t> posInQueue_;
  size_t head_[3] = {0, 0, 0};
  size_t nextDispatch_ = 0, done_ = 0;
  int64_t lastDispatch_ = 0;
  std::deque<Token> ldToEx_, exToLd_, exToSt_, stToEx_;
  QueueState st_;
  Report r_;
  int64_t unitFree_[3] = {0, 0, 0};
  int64_t chanFree_ = 0;
  int64_t portFree_ = 0, drainDone_ = 0;
  int64_t firstExec_ = -1, lastExecEnd_ = 0;
  int64_t firstStart_ = std::numeric_limits<int64_t>::max(), lastEnd_ = 0;
  double mapEffSum_ = 0;
  int64_t tiles_ = 0;
};

} // namespace

Result<Report> Machine::simulate(const Program &program,
                                 const SimOptions &options) {
  if (Status s = verify(program); !s.ok())
    return s;
  if (options.functional && dram_.size() < program.dramBytes)
    dram_.resize(program.dramBytes, 0);
  return CycleSim(config_, dram_, program, options).run();
}

Result<Report> Machine::estimate(const Program &program) const {
  if (Status s = verify(program); !s.ok())
    return s;
  const ArrayConfig &c = config_;
  const int64_t R = c.rows, C = c.cols;
  Report r;
  r.config = c;
  r.instructions = int64_t(program.instrs.size());
  QueueState st;
  st.dataflow = c.dataflow;
  st.outType = c.inType;
  // The execute queue's recurrence (port, drain) and the accumulator slots
  // it shares with the store queue; loads only through the DRAM bound.
  int64_t portFree = 0, drainDone = 0, first = -1, execEnd = 0;
  int64_t storeFree = 0, storeWaits = 0;
  std::deque<int64_t> exToSt, stToEx;
  double dramCycles = 0, prologue = 0, mapEff = 0;
  int64_t tiles = 0;
  bool seenExec = false;
  const double bw = c.dramBytesPerCycle;
  auto xfer = [&](uint64_t bytes) {
    return bw > 0 ? std::ceil(double(bytes) / bw) : 0.0;
  };
  for (const Instr &in : program.instrs) {
    switch (in.op) {
    case Opcode::MvinIm2col: {
      uint64_t bytes = im2colDramBytes(st.im2col, in, elemBytes(c.inType));
      dramCycles += xfer(bytes);
      r.dramReadBytes += bytes;
      if (!seenExec)
        prologue += xfer(bytes);
      break;
    }
    case Opcode::Mvin: {
      uint64_t b = elemBytes((in.flags & Accumulate) ? c.accType() : c.inType);
      uint64_t bytes =
          uint64_t((in.flags & BroadcastRows) ? 1 : in.rows) * in.cols * b;
      dramCycles += xfer(bytes);
      r.dramReadBytes += bytes;
      if (!seenExec)
        prologue += xfer(bytes);
      break;
    }
    case Opcode::Mvout: {
      uint64_t bytes = uint64_t(in.rows) * in.cols * elemBytes(st.outType);
      double cyc = xfer(bytes);
      dramCycles += cyc;
      r.dramWriteBytes += bytes;
      int64_t t = storeFree;
      if ((in.deps & PopPrev) && !exToSt.empty()) {
        t = std::max(t, exToSt.front());
        exToSt.pop_front();
      }
      storeFree = t + int64_t(cyc);
      if (in.deps & PushPrev)
        stToEx.push_back(storeFree);
      break;
    }
    case Opcode::Preload:
    case Opcode::ComputePreloaded:
    case Opcode::ComputeAccumulated: {
      bool pre = in.op == Opcode::Preload;
      bool waitsForDrain =
          pre ? (!c.overlapPreload || st.dataflow == Dataflow::OS)
              : st.dataflow == Dataflow::OS &&
                    in.op == Opcode::ComputePreloaded;
      int64_t s = waitsForDrain ? std::max(portFree, drainDone) : portFree;
      if ((in.deps & PopNext) && !stToEx.empty()) {
        if (stToEx.front() > s) {
          storeWaits += stToEx.front() - s;
          s = stToEx.front();
        }
        stToEx.pop_front();
      }
      if (first < 0)
        first = s;
      int64_t len = pre ? R : streamLength(st.dataflow, in);
      int64_t end = pre ? s + R : s + len + R + C - 2;
      portFree = s + len;
      if (!pre) {
        drainDone = std::max(drainDone, end);
        r.macs += int64_t(in.rows) * in.cols * in.n;
        if (in.op == Opcode::ComputePreloaded) {
          mapEff += double(peFootprint(st.dataflow, in)) / double(R * C);
          ++tiles;
        }
      }
      if (in.deps & PushNext)
        exToSt.push_back(end);
      r.busyCycles += len;
      execEnd = std::max(execEnd, end);
      seenExec = true;
      break;
    }
    default:
      st.apply(in);
      break;
    }
  }
  int64_t execSpan = first < 0 ? 0 : execEnd - first;
  int64_t tail = std::max<int64_t>(0, storeFree - execEnd);
  // The DRAM channel overlaps the array except for the loads before the
  // first computation and the stores after the last.
  int64_t latency = r.dramReadBytes ? c.dramLatency : 0;
  int64_t dramInside =
      std::max<int64_t>(0, int64_t(dramCycles - prologue) - tail);
  r.computeSpan = std::max(execSpan, dramInside);
  r.totalCycles = int64_t(prologue) + latency + r.computeSpan + tail;
  r.stallCycles = storeWaits + (r.computeSpan - execSpan);
  if (storeWaits)
    r.stalls["store"] = storeWaits;
  if (r.computeSpan > execSpan)
    r.stalls["bandwidth"] = r.computeSpan - execSpan;
  r.dramBusyCycles = int64_t(dramCycles);
  r.peCycles = R * C * r.computeSpan;
  r.utilization = r.peCycles ? double(r.macs) / double(r.peCycles) : 0;
  r.mappingEfficiency = tiles ? mapEff / double(tiles) : 0;
  return r;
}

} // namespace ign::systolic
