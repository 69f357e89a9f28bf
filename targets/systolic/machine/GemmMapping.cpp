//===- GemmMapping.cpp - GEMM mappings as systolic programs ---------------===//
//
// Buffers: the scratchpad holds two slots for stationary tiles and two for
// streamed chunks, the accumulator two output slots, so that the load queue
// fills one slot while the array works on the other. Tokens: every load
// group (the MVINs one execute instruction consumes) signals the execute
// queue; from the third group on it first waits until the execute queue
// released a slot (each consumer signals when its inputs are in the array);
// the first computation into an output slot waits until the store queue has
// emptied that slot's previous contents.
//
//===----------------------------------------------------------------------===//

#include "GemmMapping.h"
#include "Simulator.h"
#include "ign/Search/Validator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace llvm;

namespace ign::systolic {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The array roles of the GEMM dimensions under a dataflow.
struct Roles {
  int64_t rowsDim, colsDim, streamDim; // stationary rows, cols; streamed
};
Roles rolesOf(Dataflow df, const GemmShape &s) {
  switch (df) {
  case Dataflow::WS:
    return {s.K, s.N, s.M};
  case Dataflow::IS:
    return {s.K, s.M, s.N};
  case Dataflow::OS:
    return {s.M, s.N, s.K};
  }
  return {0, 0, 0};
}
} // namespace

std::string GemmMapping::str() const {
  return formatv("{0} chunk={1} {2}{3}", dataflowName(dataflow), chunk,
                 accumulate ? "accumulate" : "partials",
                 resident ? " resident" : "")
      .str();
}

GemmBuffers denseGemmBuffers(const ArrayConfig &config, const GemmShape &s,
                             ElemType outType, bool withD, bool dBroadcast) {
  GemmBuffers b;
  uint64_t eb = elemBytes(config.inType);
  b.a = 0;
  b.b = uint64_t(s.M) * s.K * eb;
  b.c = b.b + uint64_t(s.K) * s.N * eb;
  b.dramBytes = b.c + uint64_t(s.M) * s.N * elemBytes(outType);
  b.outType = outType;
  if (withD) {
    b.hasD = true;
    b.dBroadcast = dBroadcast;
    b.d = (b.dramBytes + 63) / 64 * 64;
    b.dramBytes = b.d + uint64_t(dBroadcast ? 1 : s.M) * s.N *
                            elemBytes(config.accType());
  }
  return b;
}

std::optional<Instr::Im2col> ConvGeometry::instr() const {
  auto in = [](int64_t v, int64_t lo, int64_t hi) {
    return v >= lo && v <= hi;
  };
  if (!in(C, 1, 0xFFFF) || !in(H, 1, 0xFFFF) || !in(W, 1, 0xFFFF) ||
      !in(OH, 1, 0xFFFF) || !in(OW, 1, 0xFFFF) || !in(kh, 1, 0xFF) ||
      !in(kw, 1, 0xFF) || !in(sh, 1, 0xFF) || !in(sw, 1, 0xFF) ||
      !in(ph, 0, 0xFF) || !in(pw, 0, 0xFF) || !in(dh, 1, 0xFF) ||
      !in(dw, 1, 0xFF) || OH * OW > 0xFFFF || C * kh * kw > 0xFFFF)
    return std::nullopt;
  Instr::Im2col g;
  g.C = uint32_t(C);
  g.H = uint32_t(H);
  g.W = uint32_t(W);
  g.kh = uint32_t(kh);
  g.kw = uint32_t(kw);
  g.sh = uint32_t(sh);
  g.sw = uint32_t(sw);
  g.ph = uint32_t(ph);
  g.pw = uint32_t(pw);
  g.dh = uint32_t(dh);
  g.dw = uint32_t(dw);
  g.OH = uint32_t(OH);
  g.OW = uint32_t(OW);
  return g;
}

ConvGeometry ConvGeometry::of(const Instr::Im2col &g) {
  return {g.C,  g.H,  g.W,  g.kh, g.kw, g.sh, g.sw,
          g.ph, g.pw, g.dh, g.dw, g.OH, g.OW};
}

GemmBuffers convGemmBuffers(const ArrayConfig &config, const GemmShape &s,
                            const Instr::Im2col &g, ElemType outType,
                            bool withD, bool dBroadcast) {
  GemmBuffers b = denseGemmBuffers(config, s, outType, withD, dBroadcast);
  // A's region holds the image instead of the im2col matrix.
  uint64_t eb = elemBytes(config.inType);
  int64_t shift = int64_t(uint64_t(g.C) * g.H * g.W * eb) -
                  int64_t(uint64_t(s.M) * s.K * eb);
  b.b += shift;
  b.c += shift;
  if (withD)
    b.d += shift;
  b.dramBytes += shift;
  b.implicitIm2col = true;
  b.im2col = g;
  return b;
}

FoldStats scaleSimFoldStats(const ArrayConfig &c, const GemmShape &shape,
                            Dataflow df) {
  Roles r = rolesOf(df, shape);
  FoldStats f;
  int64_t R = c.rows, C = c.cols, T = r.streamDim;
  double cyc = df == Dataflow::OS ? double(T + R + C - 2)
                                  : double(2 * R + 2 * C + T - 3);
  for (int64_t fc = 0; fc < ceilDiv(r.colsDim, C); ++fc)
    for (int64_t fr = 0; fr < ceilDiv(r.rowsDim, R); ++fr) {
      double used = double(std::min(R, r.rowsDim - fr * R)) *
                    double(std::min(C, r.colsDim - fc * C));
      f.mappingEfficiency += used / double(R * C);
      f.computeUtil += used * double(T) / (double(R * C) * cyc);
      ++f.folds;
    }
  if (f.folds) {
    f.mappingEfficiency /= double(f.folds);
    f.computeUtil /= double(f.folds);
  }
  return f;
}

Expected<Program> buildGemmProgram(const ArrayConfig &c, const GemmShape &s,
                                   const GemmMapping &map,
                                   const GemmBuffers &buf) {
  auto fail = [&](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             formatv("GEMM {0}x{1}x{2} with mapping '{3}' on "
                                     "'{4}': ",
                                     s.M, s.K, s.N, map.str(), c.name) +
                                 why);
  };
  if (s.M < 1 || s.K < 1 || s.N < 1)
    return fail("empty GEMM");
  if (!c.supports(map.dataflow))
    return fail("the machine does not run this dataflow");
  if (buf.hasD && !map.accumulate && map.dataflow != Dataflow::OS)
    return fail("adding D needs an accumulating mapping");
  if (buf.implicitIm2col &&
      (uint64_t(buf.im2col.OH) * buf.im2col.OW != uint64_t(s.M) ||
       uint64_t(buf.im2col.C) * buf.im2col.kh * buf.im2col.kw !=
           uint64_t(s.K) ||
       s.M > 0xFFFF || s.K > 0xFFFF))
    return fail("the im2col geometry does not match the GEMM, or its pixels "
                "or window columns exceed MVIN_IM2COL's 16-bit fields");
  const Dataflow df = map.dataflow;
  const int64_t R = c.rows, C = c.cols;
  const Roles roles = rolesOf(df, s);
  const uint64_t eb = elemBytes(c.inType);
  const int64_t spad = c.spadElems(), accElems = c.accElems();
  const bool os = df == Dataflow::OS;

  // Buffer sizing.
  if (map.resident && (os || !map.accumulate))
    return fail("a resident stationary operand needs WS or IS and "
                "accumulation");
  // Stationary slots: two double-buffered ones, or every block resident.
  int64_t statSlot = os ? 0 : R * C;
  int64_t statCount =
      map.resident ? ceilDiv(roles.rowsDim, R) * ceilDiv(roles.colsDim, C) : 2;
  int64_t streamElems =
      map.streamSpadElems ? map.streamSpadElems : spad - statCount * statSlot;
  if (streamElems <= 0 || streamElems + statCount * statSlot > spad)
    return fail(map.resident
                    ? "the scratchpad cannot hold the resident stationary "
                      "operand and two stream slots"
                    : "the scratchpad cannot hold two stationary tiles");
  // Elements one streamed vector needs in the scratchpad and accumulator.
  int64_t perVecSpad = os ? (R + C) : R;
  int64_t maxChunk = streamElems / (2 * perVecSpad);
  const int64_t accSlots = buf.hasD ? 4 : 2; // outputs (and D) double-buffered
  if (!os)
    maxChunk = std::min(maxChunk, accElems / (accSlots * C));
  else if (accSlots * R * C > accElems)
    return fail("the accumulator cannot hold the output tiles");
  maxChunk = std::min<int64_t>(maxChunk, 0xFFFF);
  if (maxChunk < 1)
    return fail("the buffers cannot hold one streamed vector");
  int64_t chunk = map.chunk ? std::min(map.chunk, maxChunk) : maxChunk;
  // Even chunks: no short tail chunk.
  int64_t nChunks = ceilDiv(roles.streamDim, chunk);
  chunk = ceilDiv(roles.streamDim, nChunks);

  const uint64_t spadStat[2] = {0, uint64_t(statSlot)};
  const uint64_t streamBase = uint64_t(statCount * statSlot);
  const uint64_t streamSlot = uint64_t(chunk) * perVecSpad;
  const uint64_t accSlot = os ? uint64_t(R * C) : uint64_t(chunk) * C;
  const uint64_t ob = elemBytes(buf.outType);
  const uint64_t ab = elemBytes(c.accType());
  const uint64_t dSlotBase = 2 * accSlot;

  Program p;
  p.dramBytes = buf.dramBytes;
  auto &out = p.instrs;
  out.push_back(configEx(df, 0, 0, 0));
  out.push_back(configSt(uint64_t(s.N) * ob, 0, buf.outType, buf.scale,
                         buf.relu, buf.clampMax));
  if (buf.implicitIm2col)
    out.push_back(configIm2col(buf.im2col));
  // A block of A: rows [r0, r0 + rows) x columns [c0, c0 + cols).
  auto mvinA = [&](uint64_t r0, uint64_t c0, uint64_t local, int64_t rows,
                   int64_t cols) {
    if (buf.implicitIm2col)
      return mvinIm2col(buf.a, uint32_t(local), uint32_t(rows), uint32_t(cols),
                        uint32_t(r0), uint32_t(c0));
    return mvin(buf.a + (r0 * s.K + c0) * eb, uint32_t(local), uint32_t(rows),
                uint32_t(cols), Operand::A);
  };
  uint64_t ldStride = ~uint64_t(0);
  auto setLdStride = [&](uint64_t stride) {
    if (stride != ldStride)
      out.push_back(configLd(stride, 0));
    ldStride = stride;
  };
  int64_t loadGroups = 0, outputs = 0, streamed = 0, statLoads = 0;
  // A load group: the MVINs one execute instruction consumes. A group into
  // fresh memory (a resident block) waits for nothing and is not part of the
  // double-buffer rotation; its consumer releases nothing.
  auto loadGroup = [&](std::initializer_list<Instr> mvins, bool fresh = false) {
    size_t first = out.size();
    for (const Instr &in : mvins) {
      setLdStride(in.operand == Operand::A   ? uint64_t(s.K) * eb
                  : in.operand == Operand::B ? uint64_t(s.N) * eb
                                             : uint64_t(s.N) * ab);
      out.push_back(in);
    }
    // setLdStride may have put CONFIG_LDs in between: flag the MVINs.
    size_t firstMvin = first, lastMvin = out.size() - 1;
    while (out[firstMvin].op != Opcode::Mvin &&
           out[firstMvin].op != Opcode::MvinIm2col)
      ++firstMvin;
    if (!fresh && loadGroups >= 2)
      out[firstMvin].deps |= PopNext;
    out[lastMvin].deps |= PushNext;
    if (!fresh)
      ++loadGroups;
  };
  auto store = [&](uint64_t dram, uint64_t acc, int64_t rows, int64_t cols) {
    out.push_back(mvout(dram, uint32_t(acc), uint32_t(rows), uint32_t(cols),
                        PopPrev | PushPrev));
  };

  const int64_t rowFolds = ceilDiv(roles.rowsDim, R);
  const int64_t colFolds = ceilDiv(roles.colsDim, C);

  if (os) {
    // Output tiles: N blocks outer, M blocks inner (SCALE-Sim's order); K
    // streams in chunks, accumulating in the PEs.
    for (int64_t nb = 0; nb < colFolds; ++nb)
      for (int64_t mb = 0; mb < rowFolds; ++mb) {
        int64_t m = std::min(R, s.M - mb * R), n = std::min(C, s.N - nb * C);
        uint64_t accAddr = (outputs % 2) * accSlot;
        bool tileWaited = false;
        if (buf.hasD) {
          uint64_t dAddr = dSlotBase + (outputs % 2) * accSlot;
          uint64_t src = buf.dBroadcast
                             ? buf.d + uint64_t(nb * C) * ab
                             : buf.d + (uint64_t(mb * R) * s.N + nb * C) * ab;
          Instr ld = mvin(src, uint32_t(dAddr), uint32_t(m), uint32_t(n),
                          Operand::C, /*toAcc=*/true);
          if (buf.dBroadcast)
            ld.flags |= BroadcastRows;
          loadGroup({ld});
          uint8_t deps = PopPrev | PushPrev;
          if (outputs >= 2)
            deps |= PopNext;
          tileWaited = true;
          Instr pre = preload(uint32_t(dAddr), uint32_t(m), uint32_t(n), deps);
          pre.flags |= AddD;
          out.push_back(pre);
        }
        for (int64_t j = 0; j < nChunks; ++j) {
          int64_t k0 = j * chunk, kj = std::min(chunk, s.K - k0);
          uint64_t slot = streamBase + (streamed++ % 2) * streamSlot;
          uint64_t aAddr = slot, bAddr = slot + uint64_t(R) * chunk;
          loadGroup(
              {mvinA(uint64_t(mb * R), uint64_t(k0), aAddr, m, kj),
               mvin(buf.b + (uint64_t(k0) * s.N + nb * C) * eb, uint32_t(bAddr),
                    uint32_t(kj), uint32_t(n), Operand::B)});
          uint8_t deps = PopPrev | PushPrev;
          if (j == 0 && outputs >= 2 && !tileWaited)
            deps |= PopNext;
          if (j == nChunks - 1)
            deps |= PushNext;
          out.push_back(compute(j == 0, uint32_t(aAddr), uint32_t(bAddr),
                                uint32_t(accAddr), uint32_t(m), uint32_t(kj),
                                uint32_t(n), j > 0, deps));
        }
        store(buf.c + (uint64_t(mb * R) * s.N + nb * C) * ob, accAddr, m, n);
        ++outputs;
      }
  } else {
    const bool ws = df == Dataflow::WS;
    // One fold: stationary block (fr, fc) and the chunks [j0, j1) of the
    // streamed dimension; `first`/`last` say whether the outputs start or
    // finish here.
    auto fold = [&](int64_t fc, int64_t fr, int64_t j0, int64_t j1, bool first,
                    bool last) {
      int64_t k = std::min(R, s.K - fr * R);
      int64_t other = std::min(C, roles.colsDim - fc * C); // n (WS) / m (IS)
      // Resident: block (fr, fc) has a region of its own, loaded on its
      // first use (the first stream chunk) and preloaded from there after.
      bool resident = map.resident;
      bool firstUse = !resident || j0 == 0;
      uint64_t statAddr = resident ? uint64_t((fc * rowFolds + fr) * statSlot)
                                   : spadStat[statLoads++ % 2];
      if (firstUse) {
        if (ws)
          loadGroup({mvin(buf.b + (uint64_t(fr * R) * s.N + fc * C) * eb,
                          uint32_t(statAddr), uint32_t(k), uint32_t(other),
                          Operand::B)},
                    resident);
        else
          loadGroup(
              {mvinA(uint64_t(fc * C), uint64_t(fr * R), statAddr, other, k)},
              resident);
      }
      uint8_t preDeps =
          resident ? (firstUse ? PopPrev : 0) : PopPrev | PushPrev;
      out.push_back(preload(uint32_t(statAddr), uint32_t(ws ? k : other),
                            uint32_t(ws ? other : k), preDeps));
      for (int64_t j = j0; j < j1; ++j) {
        int64_t v0 = j * chunk, vj = std::min(chunk, roles.streamDim - v0);
        uint64_t slot = streamBase + (streamed++ % 2) * streamSlot;
        int64_t outSlot = map.accumulate ? outputs + (j - j0) : outputs;
        uint64_t accAddr = (outSlot % 2) * accSlot;
        Instr stream =
            ws ? mvinA(uint64_t(v0), uint64_t(fr * R), slot, vj, k)
               : mvin(buf.b + (uint64_t(fr * R) * s.N + v0) * eb,
                      uint32_t(slot), uint32_t(k), uint32_t(vj), Operand::B);
        bool addD = buf.hasD && first;
        uint64_t dAddr = dSlotBase + (outSlot % 2) * accSlot;
        if (addD) {
          // D for this output block: rows of C (WS: v0.., IS: fc*C..),
          // columns (WS: fc*C.., IS: v0..).
          int64_t dm = ws ? vj : other, dn = ws ? other : vj;
          uint64_t row0 = ws ? uint64_t(v0) : uint64_t(fc * C);
          uint64_t col0 = ws ? uint64_t(fc * C) : uint64_t(v0);
          uint64_t src = buf.dBroadcast ? buf.d + col0 * ab
                                        : buf.d + (row0 * s.N + col0) * ab;
          Instr ld = mvin(src, uint32_t(dAddr), uint32_t(dm), uint32_t(dn),
                          Operand::C, /*toAcc=*/true);
          if (buf.dBroadcast)
            ld.flags |= BroadcastRows;
          loadGroup({ld, stream});
        } else {
          loadGroup({stream});
        }
        uint8_t deps = PopPrev | PushPrev;
        if (first && outSlot >= 2)
          deps |= PopNext;
        if (last)
          deps |= PushNext;
        int64_t m = ws ? vj : other, n = ws ? other : vj;
        Instr comp = compute(j == j0, uint32_t(ws ? slot : (addD ? dAddr : 0)),
                             uint32_t(ws ? (addD ? dAddr : 0) : slot),
                             uint32_t(accAddr), uint32_t(m), uint32_t(k),
                             uint32_t(n), map.accumulate && !first, deps);
        if (addD)
          comp.flags |= AddD;
        out.push_back(comp);
        if (last) {
          uint64_t dram = ws ? buf.c + (uint64_t(v0) * s.N + fc * C) * ob
                             : buf.c + (uint64_t(fc * C) * s.N + v0) * ob;
          store(dram, accAddr, m, n);
          if (!map.accumulate)
            ++outputs;
        }
      }
    };
    if (!map.accumulate) {
      // SCALE-Sim: column folds outer, row folds inner, the whole stream
      // per fold, partial sums stored by every fold.
      for (int64_t fc = 0; fc < colFolds; ++fc)
        for (int64_t fr = 0; fr < rowFolds; ++fr)
          fold(fc, fr, 0, nChunks, true, true);
    } else {
      // Outputs stay in the accumulator across the row (K) folds: one
      // chunk of outputs at a time, two chunks in flight.
      for (int64_t fc = 0; fc < colFolds; ++fc)
        for (int64_t j = 0; j < nChunks; ++j) {
          for (int64_t fr = 0; fr < rowFolds; ++fr)
            fold(fc, fr, j, j + 1, fr == 0, fr == rowFolds - 1);
          ++outputs;
        }
    }
  }
  out.push_back(flush());
  return p;
}

bool mappingComputesC(const ArrayConfig &c, const GemmShape &s,
                      const GemmMapping &m) {
  return m.accumulate || m.dataflow == Dataflow::OS ||
         rolesOf(m.dataflow, s).rowsDim <= c.rows;
}

std::vector<GemmMapping> gemmMappingSpace(const ArrayConfig &c,
                                          const GemmShape &s) {
  std::vector<GemmMapping> space;
  for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS}) {
    if (!c.supports(df))
      continue;
    int64_t stream = rolesOf(df, s).streamDim;
    for (bool acc : {true, false}) {
      if (df == Dataflow::OS && !acc)
        continue; // OS keeps its partial sums in the PEs either way
      for (int64_t div : {1, 2, 4, 16}) {
        GemmMapping m;
        m.dataflow = df;
        m.accumulate = acc;
        m.chunk = div == 1 ? 0 : std::max<int64_t>(1, stream / div);
        if ((div > 1 && m.chunk < 8) || !mappingComputesC(c, s, m))
          continue;
        space.push_back(m);
        if (acc && df != Dataflow::OS) {
          m.resident = true;
          space.push_back(m);
        }
      }
    }
  }
  return space;
}

Error checkGemmProgram(const ArrayConfig &c, const GemmShape &s,
                       const GemmBuffers &buf, const Program &program,
                       uint32_t seed) {
  Machine m(c);
  std::vector<uint8_t> &dram = m.dram();
  dram.assign(program.dramBytes, 0xFF); // C poisoned
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-8, 7);
  bool isInt = c.inType == ElemType::I8;
  auto value = [&]() { return isInt ? double(small(rng)) : small(rng) * 0.25; };
  auto put = [&](uint64_t base, size_t i, ElemType t, double v) {
    storeElement(dram.data() + base, t, int64_t(i), v);
  };
  std::vector<double> A(s.M * s.K), B(s.K * s.N), D;
  if (buf.implicitIm2col) {
    // A is the im2col matrix of a random image.
    const Instr::Im2col &g = buf.im2col;
    std::vector<double> image(size_t(g.C) * g.H * g.W);
    for (size_t i = 0; i < image.size(); ++i)
      put(buf.a, i, c.inType, image[i] = value());
    ConvGeometry::of(g).rows(image.data(), A.data());
  } else {
    for (size_t i = 0; i < A.size(); ++i)
      put(buf.a, i, c.inType, A[i] = value());
  }
  for (size_t i = 0; i < B.size(); ++i)
    put(buf.b, i, c.inType, B[i] = value());
  if (buf.hasD) {
    D.resize((buf.dBroadcast ? 1 : s.M) * s.N);
    for (size_t i = 0; i < D.size(); ++i)
      put(buf.d, i, c.accType(), D[i] = value() * 16);
  }
  auto rep = m.simulate(program);
  if (!rep)
    return rep.takeError();
  std::vector<double> got(size_t(s.M * s.N)), want(got.size());
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = 0; j < s.N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < s.K; ++k)
        ref += A[i * s.K + k] * B[k * s.N + j];
      if (buf.hasD)
        ref += D[(buf.dBroadcast ? 0 : i) * s.N + j];
      ref *= buf.scale;
      if (buf.relu && ref < 0)
        ref = 0;
      if (buf.clampMax > 0 && ref > buf.clampMax)
        ref = buf.clampMax;
      size_t idx = size_t(i * s.N + j);
      if (buf.outType == ElemType::I8)
        ref = std::clamp(std::nearbyint(ref), -128.0, 127.0);
      else if (buf.outType == ElemType::I32)
        ref = std::nearbyint(ref);
      want[idx] = ref;
      got[idx] = loadElement(dram.data() + buf.c, buf.outType, int64_t(idx));
    }
  // The one validator's thresholds (search/Validator.h): integer results
  // exactly, f16 machines with f16's tolerance, f32 with f32's.
  ignrt_dtype dtype =
      buf.outType == ElemType::I8 || buf.outType == ElemType::I32 ? IGNRT_I32
      : c.inType == ElemType::F16 || buf.outType == ElemType::F16 ? IGNRT_F16
                                                                  : IGNRT_F32;
  search::Comparison cmp = search::compareValues(got, want, dtype);
  if (cmp.pass)
    return Error::success();
  size_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= std::fabs(got[worst] - want[worst])))
      worst = i;
  return createStringError(
      inconvertibleErrorCode(),
      formatv("C differs from the reference (rel L2 {0}, max abs {1}): "
              "C[{2}][{3}] is {4}, the reference {5}",
              cmp.relL2, cmp.maxAbs, worst / size_t(s.N), worst % size_t(s.N),
              got[worst], want[worst]));
}

Expected<TunedGemm> tuneGemmMapping(const ArrayConfig &c, const GemmShape &s,
                                    int simulateTop, const GemmBuffers *buffers,
                                    bool check) {
  TunedGemm best;
  struct Ranked {
    int64_t estimate;
    GemmMapping mapping;
    Program program;
  };
  std::vector<Ranked> ranked;
  GemmBuffers buf = buffers ? *buffers : denseGemmBuffers(c, s, c.inType);
  Machine machine(c);
  std::string firstError;
  for (const GemmMapping &m : gemmMappingSpace(c, s)) {
    ++best.candidates;
    auto p = buildGemmProgram(c, s, m, buf);
    if (!p) {
      if (firstError.empty())
        firstError = toString(p.takeError());
      else
        consumeError(p.takeError());
      continue;
    }
    auto est = machine.estimate(*p);
    if (!est) {
      consumeError(est.takeError());
      continue;
    }
    ranked.push_back({est->totalCycles, m, std::move(*p)});
  }
  if (ranked.empty())
    return createStringError(inconvertibleErrorCode(),
                             formatv("no mapping of GEMM {0}x{1}x{2} fits "
                                     "'{3}': {4}",
                                     s.M, s.K, s.N, c.name, firstError));
  // Ties keep the space's order (sort is not stable).
  std::vector<size_t> order(ranked.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranked[a].estimate != ranked[b].estimate
               ? ranked[a].estimate < ranked[b].estimate
               : a < b;
  });
  struct Measured {
    GemmMapping mapping;
    int64_t estimate, cycles;
    size_t rank;
    const Program *program;
  };
  std::vector<Measured> measured;
  auto measure = [&](const GemmMapping &m, int64_t estimate,
                     const Program &p) -> Error {
    auto rep = machine.simulate(p, SimOptions{/*functional=*/false});
    if (!rep)
      return rep.takeError();
    ++best.simulated;
    measured.push_back({m, estimate, rep->totalCycles, measured.size(), &p});
    return Error::success();
  };
  // SCALE-Sim's own mapping for the machine's dataflow is always measured,
  // so the tuned mapping is never slower than it (unless it cannot run
  // these buffers: D needs accumulation).
  GemmMapping fixed{c.dataflow, 0, /*accumulate=*/false};
  std::optional<Program> fixedProgram;
  if (mappingComputesC(c, s, fixed) &&
      (!buf.hasD || fixed.dataflow == Dataflow::OS)) {
    auto p = buildGemmProgram(c, s, fixed, buf);
    if (p) { // buffers too small: not a candidate
      fixedProgram = std::move(*p);
      consumeError(measure(fixed, -1, *fixedProgram));
    } else {
      consumeError(p.takeError());
    }
  }
  for (int r = 0; r < simulateTop && r < int(ranked.size()); ++r) {
    const Ranked &candidate = ranked[order[r]];
    const GemmMapping &m = candidate.mapping;
    if (fixedProgram && m.dataflow == fixed.dataflow &&
        m.chunk == fixed.chunk && m.accumulate == fixed.accumulate &&
        !m.resident && !m.streamSpadElems)
      continue;
    if (Error e = measure(m, candidate.estimate, candidate.program))
      return std::move(e);
  }
  std::sort(measured.begin(), measured.end(),
            [](const Measured &a, const Measured &b) {
              return a.cycles != b.cycles ? a.cycles < b.cycles
                                          : a.rank < b.rank;
            });
  for (const Measured &m : measured) {
    if (check)
      if (Error e = checkGemmProgram(c, s, buf, *m.program)) {
        consumeError(std::move(e));
        ++best.rejected;
        continue;
      }
    best.mapping = m.mapping;
    best.cycles = m.cycles;
    best.estimatedCycles = m.estimate;
    best.program = *m.program;
    return best;
  }
  return createStringError(inconvertibleErrorCode(),
                           measured.empty()
                               ? "no mapping could be simulated"
                               : "no mapping computed the reference result");
}

} // namespace ign::systolic
