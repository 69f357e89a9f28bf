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

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

using namespace llvm;

namespace ign::systolic {

namespace {

Error instrError(size_t index, const Instr &in, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           formatv("instruction {0} ({1}): ", index, in.str()) +
                               why);
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

json::Value Report::toJSON() const {
  json::Object stallObj;
  for (auto &[k, v] : stalls)
    stallObj[k] = v;
  json::Object spadOp, dramOp;
  for (auto &[k, v] : spadReadsByOperand)
    spadOp[k] = v;
  for (auto &[k, v] : dramReadBytesByOperand)
    dramOp[k] = v;
  double cyc = std::max<int64_t>(totalCycles, 1);
  return json::Object{
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
      {"sram", json::Object{{"spad_reads", spadReads},
                            {"spad_writes", spadWrites},
                            {"spad_reads_by_operand", std::move(spadOp)},
                            {"acc_reads", accReads},
                            {"acc_writes", accWrites}}},
      {"dram", json::Object{{"read_bytes", dramReadBytes},
                            {"write_bytes", dramWriteBytes},
                            {"read_bytes_by_operand", std::move(dramOp)},
                            {"busy_cycles", dramBusyCycles},
                            {"bytes_per_cycle",
                             double(dramReadBytes + dramWriteBytes) / cyc}}},
      {"actions", json::Object{{"mac", macs},
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

Error Machine::verify(const Program &program) const {
  if (Error e = config_.validate())
    return e;
  const ArrayConfig &c = config_;
  uint64_t spadElems = c.spadElems(), accElems = c.accElems();
  QueueState st;
  st.dataflow = c.dataflow;
  st.outType = c.inType;
  // Token balance per channel, in program order per queue: a pop needs a
  // push somewhere in the program (order across queues is checked at run
  // time, where a shortage is a deadlock).
  int64_t pushes[4] = {0, 0, 0, 0}, pops[4] = {0, 0, 0, 0};
  enum { LdToEx, ExToLd, ExToSt, StToEx };
  for (size_t i = 0; i < program.instrs.size(); ++i) {
    const Instr &in = program.instrs[i];
    auto fail = [&](const Twine &why) { return instrError(i, in, why); };
    Queue q = queueOf(in.op);
    if (in.deps) {
      if (q == Queue::None)
        return fail("flush cannot carry dependency flags");
      if (q == Queue::Load && (in.deps & (PopPrev | PushPrev)))
        return fail("the load queue has no previous queue");
      if (q == Queue::Store && (in.deps & (PopNext | PushNext)))
        return fail("the store queue has no next queue");
    }
    if (q == Queue::Load) {
      if (in.deps & PopNext)
        ++pops[ExToLd];
      if (in.deps & PushNext)
        ++pushes[LdToEx];
    } else if (q == Queue::Execute) {
      if (in.deps & PopPrev)
        ++pops[LdToEx];
      if (in.deps & PopNext)
        ++pops[StToEx];
      if (in.deps & PushPrev)
        ++pushes[ExToLd];
      if (in.deps & PushNext)
        ++pushes[ExToSt];
    } else if (q == Queue::Store) {
      if (in.deps & PopPrev)
        ++pops[ExToSt];
      if (in.deps & PushPrev)
        ++pushes[StToEx];
    }
    uint64_t eb = elemBytes(c.inType), ab = elemBytes(c.accType());
    switch (in.op) {
    case Opcode::ConfigEx:
      if (!c.supports(in.dataflow))
        return fail(formatv("machine '{0}' cannot run dataflow {1}", c.name,
                            dataflowName(in.dataflow)));
      st.apply(in);
      break;
    case Opcode::ConfigIm2col: {
      const Instr::Im2col &g = in.im2col;
      if (!g.C || !g.H || !g.W || !g.kh || !g.kw || !g.sh || !g.sw || !g.dh ||
          !g.dw || !g.OH || !g.OW)
        return fail("im2col geometry has a zero size, stride or dilation");
      st.apply(in);
      break;
    }
    case Opcode::MvinIm2col: {
      if (!st.hasIm2col)
        return fail("MVIN_IM2COL before CONFIG_IM2COL");
      const Instr::Im2col &g = st.im2col;
      if (uint64_t(in.p0) + in.rows > uint64_t(g.OH) * g.OW ||
          uint64_t(in.k0) + in.cols > uint64_t(g.C) * g.kh * g.kw)
        return fail(formatv("pixels {0}+{1} or window columns {2}+{3} leave "
                            "the {4}x{5} output and {6}x{7}x{8} window",
                            in.p0, in.rows, in.k0, in.cols, g.OH, g.OW, g.C,
                            g.kh, g.kw));
      if (!blockFits(in.addrA, in.rows, in.cols, st.ldLocalStride, spadElems))
        return fail("block leaves the scratchpad");
      if (in.dram + uint64_t(g.C) * g.H * g.W * eb > program.dramBytes)
        return fail(formatv("the image leaves the {0}-byte DRAM image",
                            program.dramBytes));
      break;
    }
    case Opcode::ConfigLd:
    case Opcode::ConfigSt:
      if (in.op == Opcode::ConfigSt && in.outType == ElemType::I8 &&
          c.inType != ElemType::I8)
        return fail("i8 output needs an i8 machine");
      if (in.op == Opcode::ConfigSt &&
          (!std::isfinite(in.scale) || !std::isfinite(in.clampMax) ||
           in.clampMax < 0))
        return fail("scale or clamp is not finite, or the clamp is negative");
      st.apply(in);
      break;
    case Opcode::Mvin: {
      bool toAcc = in.flags & Accumulate;
      uint64_t b = toAcc ? ab : eb;
      if (!blockFits(in.addrA, in.rows, in.cols, st.ldLocalStride,
                     toAcc ? accElems : spadElems))
        return fail(formatv("block leaves the {0} ({1} elements)",
                            toAcc ? "accumulator" : "scratchpad",
                            toAcc ? accElems : spadElems));
      uint64_t dstride = st.ldDramStride ? st.ldDramStride : in.cols * b;
      uint64_t dramRows = (in.flags & BroadcastRows) ? 1 : in.rows;
      if (in.rows && in.cols &&
          (dstride < in.cols * b ||
           in.dram + (dramRows - 1) * dstride + in.cols * b >
               program.dramBytes))
        return fail(
            formatv("DRAM block leaves the {0}-byte image", program.dramBytes));
      break;
    }
    case Opcode::Mvout: {
      if (!blockFits(in.addrA, in.rows, in.cols, st.stAccStride, accElems))
        return fail(
            formatv("block leaves the accumulator ({0} elements)", accElems));
      uint64_t b = elemBytes(st.outType);
      uint64_t dstride = st.stDramStride ? st.stDramStride : in.cols * b;
      if (in.rows && in.cols &&
          (dstride < in.cols * b ||
           in.dram + (in.rows - 1) * dstride + in.cols * b > program.dramBytes))
        return fail(
            formatv("DRAM block leaves the {0}-byte image", program.dramBytes));
      break;
    }
    case Opcode::Preload: {
      if (st.dataflow == Dataflow::OS) {
        if (!(in.flags & AddD))
          return fail("in the output-stationary dataflow PRELOAD only puts D "
                      "into the PEs (flag add_d); COMPUTE_PRELOADED opens a "
                      "new output tile");
        if (in.rows < 1 || in.cols < 1 || in.rows > uint64_t(c.rows) ||
            in.cols > uint64_t(c.cols))
          return fail(formatv("D {0}x{1} does not fit the {2}x{3} array",
                              in.rows, in.cols, c.rows, c.cols));
        if (!blockFits(in.addrA, in.rows, in.cols, 0, accElems))
          return fail("D leaves the accumulator");
        st.pendingD = true;
        st.dRows = in.rows;
        st.dCols = in.cols;
        break;
      }
      if (in.flags & AddD)
        return fail("add_d on PRELOAD is for the output-stationary dataflow");
      // WS holds B (k x n): k <= rows, n <= cols. IS holds A (m x k):
      // k <= rows, m <= cols.
      uint64_t kDim = st.dataflow == Dataflow::WS ? in.rows : in.cols;
      uint64_t other = st.dataflow == Dataflow::WS ? in.cols : in.rows;
      if (kDim < 1 || other < 1 || kDim > uint64_t(c.rows) ||
          other > uint64_t(c.cols))
        return fail(formatv("stationary {0}x{1} does not fit the {2}x{3} "
                            "array in {4}",
                            in.rows, in.cols, c.rows, c.cols,
                            dataflowName(st.dataflow)));
      uint32_t stride = st.dataflow == Dataflow::WS ? st.strideB : st.strideA;
      if (!blockFits(in.addrA, in.rows, in.cols, stride, spadElems))
        return fail("stationary block leaves the scratchpad");
      st.stationary = true;
      st.statRows = in.rows;
      st.statCols = in.cols;
      break;
    }
    case Opcode::ComputePreloaded:
    case Opcode::ComputeAccumulated: {
      uint64_t m = in.rows, k = in.cols, n = in.n;
      if (!m || !k || !n)
        return fail("empty computation");
      Dataflow df = st.dataflow;
      bool preloaded = in.op == Opcode::ComputePreloaded;
      if (df == Dataflow::OS) {
        if (m > uint64_t(c.rows) || n > uint64_t(c.cols))
          return fail(formatv("output tile {0}x{1} does not fit the {2}x{3} "
                              "array",
                              m, n, c.rows, c.cols));
        if (!preloaded && !st.tileOpen)
          return fail("COMPUTE_ACCUMULATED without an open output tile");
        st.tileOpen = true;
        if (!blockFits(in.addrA, m, k, st.strideA, spadElems) ||
            !blockFits(in.addrB, k, n, st.strideB, spadElems))
          return fail("operand block leaves the scratchpad");
      } else {
        if (!st.stationary)
          return fail("no stationary values: PRELOAD first");
        bool ws = df == Dataflow::WS;
        if (ws ? (st.statRows != k || st.statCols != n)
               : (st.statRows != m || st.statCols != k))
          return fail(formatv("the preloaded {0}x{1} tile does not match "
                              "m={2} k={3} n={4} in {5}",
                              st.statRows, st.statCols, m, k, n,
                              dataflowName(df)));
        if (ws ? !blockFits(in.addrA, m, k, st.strideA, spadElems)
               : !blockFits(in.addrB, k, n, st.strideB, spadElems))
          return fail("streamed block leaves the scratchpad");
      }
      if (!blockFits(in.addrC, m, n, st.strideC, accElems))
        return fail(formatv("result block leaves the accumulator ({0} "
                            "elements)",
                            accElems));
      if (in.flags & AddD) {
        if (df == Dataflow::OS)
          return fail("in the output-stationary dataflow D comes with a "
                      "PRELOAD");
        uint32_t d = df == Dataflow::WS ? in.addrB : in.addrA;
        if (!blockFits(d, m, n, 0, accElems))
          return fail("D leaves the accumulator");
      }
      if (df == Dataflow::OS && preloaded && st.pendingD) {
        if (st.dRows != m || st.dCols != n)
          return fail(formatv("the preloaded D {0}x{1} does not match the "
                              "{2}x{3} output tile",
                              st.dRows, st.dCols, m, n));
        st.pendingD = false;
      }
      break;
    }
    case Opcode::Flush:
      break;
    }
  }
  const char *names[4] = {"load->execute", "execute->load", "execute->store",
                          "store->execute"};
  for (int ch = 0; ch < 4; ++ch)
    if (pops[ch] > pushes[ch])
      return createStringError(
          inconvertibleErrorCode(),
          formatv("program waits for {0} {1} tokens but only {2} are ever "
                  "signalled: it would deadlock",
                  pops[ch], names[ch], pushes[ch]));
  return Error::success();
}

Expected<Report> Machine::simulate(const Program &program,
                                   const SimOptions &options) {
  if (Error e = verify(program))
    return std::move(e);
  const ArrayConfig &c = config_;
  const size_t n = program.instrs.size();
  const int64_t R = c.rows, C = c.cols;
  if (options.functional && dram_.size() < program.dramBytes)
    dram_.resize(program.dramBytes, 0);

  std::vector<uint8_t> spad, acc;
  std::vector<double> stationaryVals;
  if (options.functional) {
    spad.assign(c.spadBytes, 0);
    acc.assign(c.accBytes, 0);
  }

  // Per-queue instruction lists.
  std::vector<size_t> queueInstrs[3];
  std::vector<size_t> posInQueue(n, 0);
  for (size_t i = 0; i < n; ++i) {
    Queue q = queueOf(program.instrs[i].op);
    if (q != Queue::None) {
      posInQueue[i] = queueInstrs[unsigned(q)].size();
      queueInstrs[unsigned(q)].push_back(i);
    }
  }
  const int64_t depth[3] = {c.loadQueueDepth, c.exQueueDepth,
                            c.storeQueueDepth};
  std::vector<int64_t> dispatch(n, -1), start(n, -1), end(n, -1);
  size_t head[3] = {0, 0, 0};
  size_t nextDispatch = 0;
  int64_t lastDispatch = 0;

  struct Token {
    int64_t time;
    Operand operand;
    bool issueBound; // the producer waited for the front end to issue it
  };
  std::deque<Token> ldToEx, exToLd, exToSt, stToEx;

  QueueState st;
  st.dataflow = c.dataflow;
  st.outType = c.inType;
  Report r;
  r.config = c;
  r.instructions = int64_t(n);
  int64_t unitFree[3] = {0, 0, 0};
  int64_t chanFree = 0;
  int64_t portFree = 0, drainDone = 0;
  int64_t firstExec = -1, lastExecEnd = 0;
  int64_t firstStart = std::numeric_limits<int64_t>::max(), lastEnd = 0;
  double mapEffSum = 0;
  int64_t tiles = 0;
  size_t done = 0;
  const double bw = c.dramBytesPerCycle;
  auto transferCycles = [&](uint64_t bytes) -> int64_t {
    if (bw <= 0 || bytes == 0)
      return 0;
    return int64_t(std::ceil(double(bytes) / bw));
  };

  while (done < n) {
    // Front end: issue in program order while queues have room.
    while (nextDispatch < n) {
      size_t i = nextDispatch;
      const Instr &in = program.instrs[i];
      Queue q = queueOf(in.op);
      int64_t t = lastDispatch;
      if (q == Queue::None) { // FLUSH: everything before it has finished
        bool allDone = true;
        for (size_t j = 0; j < i && allDone; ++j)
          allDone = end[j] >= 0 || queueOf(program.instrs[j].op) == Queue::None;
        if (!allDone)
          break;
        for (size_t j = 0; j < i; ++j)
          t = std::max(t, end[j]);
        dispatch[i] = start[i] = end[i] = t;
        ++done;
      } else {
        size_t pos = posInQueue[i];
        if (int64_t(pos) >= depth[unsigned(q)]) {
          size_t leaving = queueInstrs[unsigned(q)][pos - depth[unsigned(q)]];
          if (start[leaving] < 0)
            break;
          t = std::max(t, start[leaving]);
        }
        dispatch[i] = t;
      }
      lastDispatch = t;
      ++nextDispatch;
    }

    if (done == n)
      break;
    // Pick the ready queue head with the earliest start.
    int best = -1;
    int64_t bestStart = 0;
    for (int q = 0; q < 3; ++q) {
      if (head[q] >= queueInstrs[q].size())
        continue;
      size_t i = queueInstrs[q][head[q]];
      if (dispatch[i] < 0)
        continue;
      const Instr &in = program.instrs[i];
      int64_t t = std::max(dispatch[i], unitFree[q]);
      auto need = [&](std::deque<Token> &fifo, bool want) {
        if (!want)
          return true;
        if (fifo.empty())
          return false;
        t = std::max(t, fifo.front().time);
        return true;
      };
      bool ready = true;
      if (q == 0) {
        ready = need(exToLd, in.deps & PopNext);
      } else if (q == 1) {
        ready =
            need(ldToEx, in.deps & PopPrev) && need(stToEx, in.deps & PopNext);
      } else {
        ready = need(exToSt, in.deps & PopPrev);
      }
      if (!ready)
        continue;
      if (best < 0 || t < bestStart) {
        best = q;
        bestStart = t;
      }
    }
    if (best < 0) {
      std::string waits;
      const char *qn[3] = {"load", "execute", "store"};
      for (int q = 0; q < 3; ++q)
        if (head[q] < queueInstrs[q].size()) {
          size_t i = queueInstrs[q][head[q]];
          waits += formatv("; {0} queue at instruction {1} ({2})", qn[q], i,
                           program.instrs[i].str());
        }
      if (nextDispatch < n)
        waits += formatv("; instruction {0} waits to be issued", nextDispatch);
      return createStringError(inconvertibleErrorCode(),
                               "deadlock: no queue can proceed" + waits);
    }

    const int q = best;
    const size_t i = queueInstrs[q][head[q]];
    const Instr &in = program.instrs[i];
    int64_t t0 = bestStart;
    int64_t tokenLd = -1, tokenSt = -1;
    Operand tokenOperand = Operand::A;
    bool tokenIssueBound = false;
    // Consume tokens.
    const int64_t unitFreeBefore = unitFree[q], chanFreeBefore = chanFree;
    if (q == 0 && (in.deps & PopNext))
      exToLd.pop_front();
    if (q == 1 && (in.deps & PopPrev)) {
      tokenLd = ldToEx.front().time;
      tokenOperand = ldToEx.front().operand;
      tokenIssueBound = ldToEx.front().issueBound;
      ldToEx.pop_front();
    }
    if (q == 1 && (in.deps & PopNext)) {
      tokenSt = stToEx.front().time;
      stToEx.pop_front();
    }
    if (q == 2 && (in.deps & PopPrev))
      exToSt.pop_front();

    int64_t s = t0, e = t0, pushPrevAt = t0, pushNextAt = t0;
    const int64_t prevPortFree = portFree, prevDrain = drainDone;
    uint64_t eb = elemBytes(c.inType), ab = elemBytes(c.accType());
    switch (in.op) {
    case Opcode::ConfigEx:
    case Opcode::ConfigLd:
    case Opcode::ConfigSt:
    case Opcode::ConfigIm2col:
      st.apply(in);
      break;
    case Opcode::MvinIm2col: {
      uint64_t bytes = im2colDramBytes(st.im2col, in, eb);
      s = bw > 0 ? std::max(t0, chanFree) : t0; // unlimited: no queueing
      int64_t xfer = transferCycles(bytes);
      chanFree = s + xfer;
      r.dramBusyCycles += xfer;
      e = chanFree + (bytes ? c.dramLatency : 0);
      unitFree[0] = chanFree;
      pushNextAt = e;
      r.dramReadBytes += bytes;
      r.dramReadBytesByOperand["A"] += bytes;
      r.spadWrites += int64_t(in.rows) * in.cols;
      ++r.mvins;
      if (options.functional) {
        const Instr::Im2col &g = st.im2col;
        uint64_t lstride = st.ldLocalStride ? st.ldLocalStride : in.cols;
        const uint8_t *image = dram_.data() + in.dram;
        int64_t window = int64_t(g.kh) * g.kw;
        for (uint64_t row = 0; row < in.rows; ++row) {
          int64_t p = int64_t(in.p0 + row), oy = p / g.OW, ox = p % g.OW;
          uint8_t *dst = spad.data() + (in.addrA + row * lstride) * eb;
          for (uint64_t col = 0; col < in.cols; ++col) {
            int64_t kk = int64_t(in.k0 + col), ch = kk / window,
                    ky = kk % window / g.kw, kx = kk % g.kw;
            int64_t y = oy * g.sh - g.ph + ky * g.dh;
            int64_t x = ox * g.sw - g.pw + kx * g.dw;
            if (y < 0 || y >= int64_t(g.H) || x < 0 || x >= int64_t(g.W))
              std::memset(dst + col * eb, 0, eb);
            else
              std::memcpy(dst + col * eb,
                          image + ((ch * g.H + y) * g.W + x) * eb, eb);
          }
        }
      }
      break;
    }
    case Opcode::Mvin: {
      bool toAcc = in.flags & Accumulate;
      bool broadcast = in.flags & BroadcastRows;
      uint64_t b = toAcc ? ab : eb;
      uint64_t bytes = uint64_t(broadcast ? 1 : in.rows) * in.cols * b;
      s = bw > 0 ? std::max(t0, chanFree) : t0; // unlimited: no queueing
      int64_t xfer = transferCycles(bytes);
      chanFree = s + xfer;
      r.dramBusyCycles += xfer;
      e = chanFree + (bytes ? c.dramLatency : 0);
      unitFree[0] = chanFree;
      pushNextAt = e;
      r.dramReadBytes += bytes;
      r.dramReadBytesByOperand[operandName(in.operand)] += bytes;
      (toAcc ? r.accWrites : r.spadWrites) += int64_t(in.rows) * in.cols;
      ++r.mvins;
      if (options.functional) {
        uint64_t dstride = st.ldDramStride ? st.ldDramStride : in.cols * b;
        uint64_t lstride = st.ldLocalStride ? st.ldLocalStride : in.cols;
        uint8_t *dst = toAcc ? acc.data() : spad.data();
        for (uint64_t row = 0; row < in.rows; ++row)
          std::memcpy(dst + (in.addrA + row * lstride) * b,
                      dram_.data() + in.dram + (broadcast ? 0 : row) * dstride,
                      in.cols * b);
      }
      break;
    }
    case Opcode::Mvout: {
      uint64_t ob = elemBytes(st.outType);
      uint64_t bytes = uint64_t(in.rows) * in.cols * ob;
      s = bw > 0 ? std::max(t0, chanFree) : t0; // unlimited: no queueing
      int64_t xfer = transferCycles(bytes);
      chanFree = s + xfer;
      r.dramBusyCycles += xfer;
      e = chanFree;
      unitFree[2] = chanFree;
      pushPrevAt = e;
      r.dramWriteBytes += bytes;
      r.accReads += int64_t(in.rows) * in.cols;
      ++r.mvouts;
      if (options.functional) {
        uint64_t dstride = st.stDramStride ? st.stDramStride : in.cols * ob;
        uint64_t astride = st.stAccStride ? st.stAccStride : in.cols;
        for (uint64_t row = 0; row < in.rows; ++row)
          for (uint64_t col = 0; col < in.cols; ++col) {
            double v = loadElem(acc.data(), c.accType(),
                                in.addrA + row * astride + col) *
                       st.scale;
            if (st.relu && v < 0)
              v = 0;
            if (st.clampMax > 0 && v > st.clampMax)
              v = st.clampMax;
            storeElem(dram_.data() + in.dram + row * dstride, st.outType, col,
                      v);
          }
      }
      break;
    }
    case Opcode::Preload: {
      int64_t earliest = std::max(t0, portFree);
      if (st.dataflow == Dataflow::OS) {
        // D shifts into the PEs of a new output tile: after the drain.
        s = std::max(earliest, drainDone);
        e = s + R;
        portFree = e;
        pushPrevAt = pushNextAt = e;
        r.busyCycles += R;
        ++r.preloads;
        r.accReads += int64_t(in.rows) * in.cols;
        st.pendingD = true;
        st.dAddr = in.addrA;
        st.dRows = in.rows;
        st.dCols = in.cols;
        break;
      }
      int64_t base =
          c.overlapPreload ? earliest : std::max(earliest, drainDone);
      s = base;
      e = s + R;
      portFree = e;
      pushPrevAt = e;
      pushNextAt = e;
      r.busyCycles += R;
      ++r.preloads;
      r.spadReads += int64_t(in.rows) * in.cols;
      r.spadReadsByOperand[st.dataflow == Dataflow::WS ? "B" : "A"] +=
          int64_t(in.rows) * in.cols;
      st.stationary = true;
      st.statRows = in.rows;
      st.statCols = in.cols;
      if (options.functional) {
        uint32_t stride = st.dataflow == Dataflow::WS ? st.strideB : st.strideA;
        if (!stride)
          stride = in.cols;
        stationaryVals.resize(size_t(in.rows) * in.cols);
        for (uint64_t row = 0; row < in.rows; ++row)
          for (uint64_t col = 0; col < in.cols; ++col)
            stationaryVals[row * in.cols + col] =
                loadElem(spad.data(), c.inType, in.addrA + row * stride + col);
      }
      break;
    }
    case Opcode::ComputePreloaded:
    case Opcode::ComputeAccumulated: {
      Dataflow df = st.dataflow;
      bool newTile = df == Dataflow::OS && in.op == Opcode::ComputePreloaded;
      int64_t earliest = std::max(t0, portFree);
      s = newTile ? std::max(earliest, drainDone) : earliest;
      int64_t len = streamLength(df, in);
      portFree = s + len;
      e = s + len + R + C - 2;
      drainDone = std::max(drainDone, e);
      pushPrevAt = portFree;
      pushNextAt = e;
      r.busyCycles += len;
      ++r.computes;
      int64_t m = in.rows, k = in.cols, nn = in.n;
      r.macs += m * k * nn;
      if (in.op == Opcode::ComputePreloaded) {
        mapEffSum += double(peFootprint(df, in)) / double(R * C);
        ++tiles;
      }
      int64_t aReads = df == Dataflow::IS ? 0 : m * k;
      int64_t bReads = df == Dataflow::WS ? 0 : k * nn;
      r.spadReads += aReads + bReads;
      if (aReads)
        r.spadReadsByOperand["A"] += aReads;
      if (bReads)
        r.spadReadsByOperand["B"] += bReads;
      bool accumulate = in.flags & Accumulate;
      r.accWrites += m * nn;
      if (accumulate)
        r.accReads += m * nn;
      int64_t dBase = -1; // D, dense m x n in the accumulator
      if (df == Dataflow::OS) {
        if (in.op == Opcode::ComputePreloaded && st.pendingD) {
          dBase = st.dAddr;
          st.pendingD = false;
        }
      } else if (in.flags & AddD) {
        dBase = df == Dataflow::WS ? in.addrB : in.addrA;
        r.accReads += m * nn;
      }
      if (options.functional) {
        uint32_t sa = st.strideA ? st.strideA : k;
        uint32_t sb = st.strideB ? st.strideB : nn;
        uint32_t sc = st.strideC ? st.strideC : nn;
        std::vector<double> A(m * k), B(k * nn);
        for (int64_t x = 0; x < m; ++x)
          for (int64_t y = 0; y < k; ++y)
            A[x * k + y] = df == Dataflow::IS ? stationaryVals[x * k + y]
                                              : loadElem(spad.data(), c.inType,
                                                         in.addrA + x * sa + y);
        for (int64_t x = 0; x < k; ++x)
          for (int64_t y = 0; y < nn; ++y)
            B[x * nn + y] =
                df == Dataflow::WS
                    ? stationaryVals[x * nn + y]
                    : loadElem(spad.data(), c.inType, in.addrB + x * sb + y);
        bool isInt = c.inType == ElemType::I8;
        for (int64_t x = 0; x < m; ++x)
          for (int64_t y = 0; y < nn; ++y) {
            int64_t idx = in.addrC + x * sc + y;
            if (isInt) {
              int64_t sum = 0;
              for (int64_t z = 0; z < k; ++z)
                sum += int64_t(A[x * k + z]) * int64_t(B[z * nn + y]);
              if (accumulate)
                sum += int64_t(loadElem(acc.data(), ElemType::I32, idx));
              if (dBase >= 0)
                sum += int64_t(
                    loadElem(acc.data(), ElemType::I32, dBase + x * nn + y));
              int32_t wrapped = int32_t(uint32_t(uint64_t(sum)));
              std::memcpy(acc.data() + 4 * idx, &wrapped, 4);
            } else {
              float sum = accumulate
                              ? float(loadElem(acc.data(), ElemType::F32, idx))
                              : 0.0f;
              for (int64_t z = 0; z < k; ++z)
                sum += float(A[x * k + z]) * float(B[z * nn + y]);
              if (dBase >= 0)
                sum += float(
                    loadElem(acc.data(), ElemType::F32, dBase + x * nn + y));
              std::memcpy(acc.data() + 4 * idx, &sum, 4);
            }
          }
      }
      break;
    }
    case Opcode::Flush:
      break;
    }
    if (q == 1 && in.op != Opcode::ConfigEx) {
      // Stall accounting: time the array's input port stood idle inside the
      // compute span for a reason other than the pipeline drain. The start
      // is max(t0, base), so any wait beyond base is t0's: a token or the
      // dispatch.
      if (firstExec < 0) {
        firstExec = s;
      } else {
        bool waitsForDrain =
            (in.op == Opcode::Preload &&
             (!c.overlapPreload || st.dataflow == Dataflow::OS)) ||
            (st.dataflow == Dataflow::OS && in.op == Opcode::ComputePreloaded);
        int64_t base =
            waitsForDrain ? std::max(prevPortFree, prevDrain) : prevPortFree;
        int64_t stall = s - base;
        if (stall > 0) {
          // Ties go to the store queue (the accumulator slot), then to the
          // operand's load unless the front end held that load back.
          std::string cause = "dispatch";
          if (tokenSt == t0)
            cause = "store";
          else if (tokenLd == t0 && !tokenIssueBound)
            cause = std::string("load.") + operandName(tokenOperand);
          r.stalls[cause] += stall;
          r.stallCycles += stall;
        }
      }
      lastExecEnd = std::max(lastExecEnd, e);
    }
    // Complete: tokens and bookkeeping.
    if (q == 0 && (in.deps & PushNext)) {
      // Issue-bound: the load started when the front end issued it, later
      // than its unit and the channel would have allowed (a token arriving
      // at the same time counts as the front end's).
      bool issueBound = dispatch[i] == s && s > unitFreeBefore &&
                        (bw <= 0 || s > chanFreeBefore);
      ldToEx.push_back({pushNextAt, in.operand, issueBound});
    }
    if (q == 1 && (in.deps & PushPrev))
      exToLd.push_back({pushPrevAt, Operand::A, false});
    if (q == 1 && (in.deps & PushNext))
      exToSt.push_back({pushNextAt, Operand::C, false});
    if (q == 2 && (in.deps & PushPrev))
      stToEx.push_back({pushPrevAt, Operand::C, false});
    start[i] = s;
    end[i] = std::max(e, s);
    if (q == 1)
      unitFree[1] = std::max(unitFree[1], s); // in order: starts never pass
    firstStart = std::min(firstStart, s);
    lastEnd = std::max(lastEnd, end[i]);
    ++head[q];
    ++done;
  }

  r.totalCycles = lastEnd - std::min(firstStart, lastEnd);
  r.computeSpan = firstExec < 0 ? 0 : lastExecEnd - firstExec;
  r.peCycles = R * C * r.computeSpan;
  r.utilization = r.peCycles ? double(r.macs) / double(r.peCycles) : 0;
  r.mappingEfficiency = tiles ? mapEffSum / double(tiles) : 0;
  double sramBytes = double(r.spadReads + r.spadWrites) * elemBytes(c.inType) +
                     double(r.accReads + r.accWrites) * elemBytes(c.accType());
  r.energyPicojoules = double(r.macs) * macPicojoules(c.inType) +
                       sramBytes * 1.25 +
                       double(r.dramReadBytes + r.dramWriteBytes) * 160.0;
  return r;
}

Expected<Report> Machine::estimate(const Program &program) const {
  if (Error e = verify(program))
    return std::move(e);
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
