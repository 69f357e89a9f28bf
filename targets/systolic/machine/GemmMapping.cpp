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
#include "Text.h"
#include "ign/Search/Validator.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

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
  return strFormat("%s chunk=%lld %s%s", dataflowName(dataflow),
                   (long long)chunk, accumulate ? "accumulate" : "partials",
                   resident ? " resident" : "");
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

namespace {

/// What a mapping needs that the machine and the buffers must allow; the
/// reason it cannot run, or success.
Status checkMappingFits(const ArrayConfig &c, const GemmShape &s,
                        const GemmMapping &map, const GemmBuffers &buf) {
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
  return Status();
}

/// buildGemmProgram's work: the buffer sizing, then the program.
class ProgramBuilder {
public:
  ProgramBuilder(const ArrayConfig &c, const GemmShape &s,
                 const GemmMapping &map, const GemmBuffers &buf)
      : c_(c), s_(s), map_(map), buf_(buf), df_(map.dataflow), R_(c.rows),
        C_(c.cols), roles_(rolesOf(map.dataflow, s)), eb_(elemBytes(c.inType)),
        os_(map.dataflow == Dataflow::OS),
        rowFolds_(ceilDiv(roles_.rowsDim, R_)),
        colFolds_(ceilDiv(roles_.colsDim, C_)) {}

  /// Sizes the scratchpad and accumulator slots and the stream chunk; why
  /// the buffers cannot hold them, or success.
  Status size() {
    const int64_t spad = c_.spadElems(), accElems = c_.accElems();
    if (map_.resident && (os_ || !map_.accumulate))
      return fail("a resident stationary operand needs WS or IS and "
                  "accumulation");
    // Stationary slots: two double-buffered ones, or every block resident.
    statSlot_ = os_ ? 0 : R_ * C_;
    int64_t statCount = map_.resident ? rowFolds_ * colFolds_ : 2;
    int64_t streamElems = map_.streamSpadElems ? map_.streamSpadElems
                                               : spad - statCount * statSlot_;
    if (streamElems <= 0 || streamElems + statCount * statSlot_ > spad)
      return fail(map_.resident
                      ? "the scratchpad cannot hold the resident stationary "
                        "operand and two stream slots"
                      : "the scratchpad cannot hold two stationary tiles");
    // Elements one streamed vector needs in the scratchpad and accumulator.
    int64_t perVecSpad = os_ ? (R_ + C_) : R_;
    int64_t maxChunk = streamElems / (2 * perVecSpad);
    // Outputs (and D) double-buffered.
    const int64_t accSlots = buf_.hasD ? 4 : 2;
    if (!os_)
      maxChunk = std::min(maxChunk, accElems / (accSlots * C_));
    else if (accSlots * R_ * C_ > accElems)
      return fail("the accumulator cannot hold the output tiles");
    maxChunk = std::min<int64_t>(maxChunk, 0xFFFF);
    if (maxChunk < 1)
      return fail("the buffers cannot hold one streamed vector");
    chunk_ = map_.chunk ? std::min(map_.chunk, maxChunk) : maxChunk;
    // Even chunks: no short tail chunk.
    nChunks_ = ceilDiv(roles_.streamDim, chunk_);
    chunk_ = ceilDiv(roles_.streamDim, nChunks_);

    spadStat_[0] = 0;
    spadStat_[1] = uint64_t(statSlot_);
    streamBase_ = uint64_t(statCount * statSlot_);
    streamSlot_ = uint64_t(chunk_) * perVecSpad;
    accSlot_ = os_ ? uint64_t(R_ * C_) : uint64_t(chunk_) * C_;
    ob_ = elemBytes(buf_.outType);
    ab_ = elemBytes(c_.accType());
    dSlotBase_ = 2 * accSlot_;
    return Status();
  }

  Program build() {
    p_.dramBytes = buf_.dramBytes;
    out_.push_back(configEx(df_, 0, 0, 0));
    out_.push_back(configSt(uint64_t(s_.N) * ob_, 0, buf_.outType, buf_.scale,
                            buf_.relu, buf_.clampMax));
    if (buf_.implicitIm2col)
      out_.push_back(configIm2col(buf_.im2col));
    if (os_)
      buildOutputStationary();
    else
      buildStationary();
    out_.push_back(flush());
    return std::move(p_);
  }

private:
  /// A block of A: rows [r0, r0 + rows) x columns [c0, c0 + cols).
  Instr mvinA(uint64_t r0, uint64_t c0, uint64_t local, int64_t rows,
              int64_t cols) const {
    if (buf_.implicitIm2col)
      return mvinIm2col(buf_.a, uint32_t(local), uint32_t(rows), uint32_t(cols),
                        uint32_t(r0), uint32_t(c0));
    return mvin(buf_.a + (r0 * s_.K + c0) * eb_, uint32_t(local),
                uint32_t(rows), uint32_t(cols), Operand::A);
  }

  void setLdStride(uint64_t stride) {
    if (stride != ldStride_)
      out_.push_back(configLd(stride, 0));
    ldStride_ = stride;
  }

  /// A load group: the MVINs one execute instruction consumes. A group into
  /// fresh memory (a resident block) waits for nothing and is not part of
  /// the double-buffer rotation; its consumer releases nothing.
  void loadGroup(std::initializer_list<Instr> mvins, bool fresh = false) {
    size_t first = out_.size();
    for (const Instr &in : mvins) {
      setLdStride(in.operand == Operand::A   ? uint64_t(s_.K) * eb_
                  : in.operand == Operand::B ? uint64_t(s_.N) * eb_
                                             : uint64_t(s_.N) * ab_);
      out_.push_back(in);
    }
    // setLdStride may have put CONFIG_LDs in between: flag the MVINs.
    size_t firstMvin = first, lastMvin = out_.size() - 1;
    while (out_[firstMvin].op != Opcode::Mvin &&
           out_[firstMvin].op != Opcode::MvinIm2col)
      ++firstMvin;
    if (!fresh && loadGroups_ >= 2)
      out_[firstMvin].deps |= PopNext;
    out_[lastMvin].deps |= PushNext;
    if (!fresh)
      ++loadGroups_;
  }

  void store(uint64_t dram, uint64_t acc, int64_t rows, int64_t cols) {
    out_.push_back(mvout(dram, uint32_t(acc), uint32_t(rows), uint32_t(cols),
                         PopPrev | PushPrev));
  }

  /// An MVIN of D (\p rows x \p cols at \p src) into the accumulator.
  Instr mvinD(uint64_t src, uint64_t dAddr, int64_t rows, int64_t cols) const {
    Instr ld = mvin(src, uint32_t(dAddr), uint32_t(rows), uint32_t(cols),
                    Operand::C, /*toAcc=*/true);
    if (buf_.dBroadcast)
      ld.flags |= BroadcastRows;
    return ld;
  }

  /// Output tiles: N blocks outer, M blocks inner (SCALE-Sim's order); K
  /// streams in chunks, accumulating in the PEs.
  void buildOutputStationary() {
    for (int64_t nb = 0; nb < colFolds_; ++nb)
      for (int64_t mb = 0; mb < rowFolds_; ++mb)
        outputTile(mb, nb);
  }

  void outputTile(int64_t mb, int64_t nb) {
    int64_t m = std::min(R_, s_.M - mb * R_), n = std::min(C_, s_.N - nb * C_);
    uint64_t accAddr = (outputs_ % 2) * accSlot_;
    bool tileWaited = false;
    if (buf_.hasD) {
      uint64_t dAddr = dSlotBase_ + (outputs_ % 2) * accSlot_;
      uint64_t src = buf_.dBroadcast
                         ? buf_.d + uint64_t(nb * C_) * ab_
                         : buf_.d + (uint64_t(mb * R_) * s_.N + nb * C_) * ab_;
      loadGroup({mvinD(src, dAddr, m, n)});
      uint8_t deps = PopPrev | PushPrev;
      if (outputs_ >= 2)
        deps |= PopNext;
      tileWaited = true;
      Instr pre = preload(uint32_t(dAddr), uint32_t(m), uint32_t(n), deps);
      pre.flags |= AddD;
      out_.push_back(pre);
    }
    for (int64_t j = 0; j < nChunks_; ++j) {
      int64_t k0 = j * chunk_, kj = std::min(chunk_, s_.K - k0);
      uint64_t slot = streamBase_ + (streamed_++ % 2) * streamSlot_;
      uint64_t aAddr = slot, bAddr = slot + uint64_t(R_) * chunk_;
      loadGroup({mvinA(uint64_t(mb * R_), uint64_t(k0), aAddr, m, kj),
                 mvin(buf_.b + (uint64_t(k0) * s_.N + nb * C_) * eb_,
                      uint32_t(bAddr), uint32_t(kj), uint32_t(n), Operand::B)});
      uint8_t deps = PopPrev | PushPrev;
      if (j == 0 && outputs_ >= 2 && !tileWaited)
        deps |= PopNext;
      if (j == nChunks_ - 1)
        deps |= PushNext;
      out_.push_back(compute(j == 0, uint32_t(aAddr), uint32_t(bAddr),
                             uint32_t(accAddr), uint32_t(m), uint32_t(kj),
                             uint32_t(n), j > 0, deps));
    }
    store(buf_.c + (uint64_t(mb * R_) * s_.N + nb * C_) * ob_, accAddr, m, n);
    ++outputs_;
  }

  void buildStationary() {
    if (!map_.accumulate) {
      // SCALE-Sim: column folds outer, row folds inner, the whole stream
      // per fold, partial sums stored by every fold.
      for (int64_t fc = 0; fc < colFolds_; ++fc)
        for (int64_t fr = 0; fr < rowFolds_; ++fr)
          fold(fc, fr, 0, nChunks_, true, true);
    } else {
      // Outputs stay in the accumulator across the row (K) folds: one
      // chunk of outputs at a time, two chunks in flight.
      for (int64_t fc = 0; fc < colFolds_; ++fc)
        for (int64_t j = 0; j < nChunks_; ++j) {
          for (int64_t fr = 0; fr < rowFolds_; ++fr)
            fold(fc, fr, j, j + 1, fr == 0, fr == rowFolds_ - 1);
          ++outputs_;
        }
    }
  }

  /// One fold: stationary block (fr, fc) and the chunks [j0, j1) of the
  /// streamed dimension; `first`/`last` say whether the outputs start or
  /// finish here.
  void fold(int64_t fc, int64_t fr, int64_t j0, int64_t j1, bool first,
            bool last) {
    const bool ws = df_ == Dataflow::WS;
    int64_t k = std::min(R_, s_.K - fr * R_);
    int64_t other = std::min(C_, roles_.colsDim - fc * C_); // n (WS) / m (IS)
    // Resident: block (fr, fc) has a region of its own, loaded on its
    // first use (the first stream chunk) and preloaded from there after.
    bool resident = map_.resident;
    bool firstUse = !resident || j0 == 0;
    uint64_t statAddr = resident ? uint64_t((fc * rowFolds_ + fr) * statSlot_)
                                 : spadStat_[statLoads_++ % 2];
    if (firstUse) {
      if (ws)
        loadGroup({mvin(buf_.b + (uint64_t(fr * R_) * s_.N + fc * C_) * eb_,
                        uint32_t(statAddr), uint32_t(k), uint32_t(other),
                        Operand::B)},
                  resident);
      else
        loadGroup(
            {mvinA(uint64_t(fc * C_), uint64_t(fr * R_), statAddr, other, k)},
            resident);
    }
    uint8_t preDeps = resident ? (firstUse ? PopPrev : 0) : PopPrev | PushPrev;
    out_.push_back(preload(uint32_t(statAddr), uint32_t(ws ? k : other),
                           uint32_t(ws ? other : k), preDeps));
    for (int64_t j = j0; j < j1; ++j)
      streamChunk(fc, fr, j, j0, k, other, first, last);
  }

  /// Chunk \p j of the streamed dimension through the stationary block of
  /// fold (\p fr, \p fc) (\p k x \p other), which started at chunk \p j0.
  void streamChunk(int64_t fc, int64_t fr, int64_t j, int64_t j0, int64_t k,
                   int64_t other, bool first, bool last) {
    const bool ws = df_ == Dataflow::WS;
    int64_t v0 = j * chunk_, vj = std::min(chunk_, roles_.streamDim - v0);
    uint64_t slot = streamBase_ + (streamed_++ % 2) * streamSlot_;
    int64_t outSlot = map_.accumulate ? outputs_ + (j - j0) : outputs_;
    uint64_t accAddr = (outSlot % 2) * accSlot_;
    Instr stream =
        ws ? mvinA(uint64_t(v0), uint64_t(fr * R_), slot, vj, k)
           : mvin(buf_.b + (uint64_t(fr * R_) * s_.N + v0) * eb_,
                  uint32_t(slot), uint32_t(k), uint32_t(vj), Operand::B);
    bool addD = buf_.hasD && first;
    uint64_t dAddr = dSlotBase_ + (outSlot % 2) * accSlot_;
    if (addD) {
      // D for this output block: rows of C (WS: v0.., IS: fc*C..),
      // columns (WS: fc*C.., IS: v0..).
      int64_t dm = ws ? vj : other, dn = ws ? other : vj;
      uint64_t row0 = ws ? uint64_t(v0) : uint64_t(fc * C_);
      uint64_t col0 = ws ? uint64_t(fc * C_) : uint64_t(v0);
      uint64_t src = buf_.dBroadcast ? buf_.d + col0 * ab_
                                     : buf_.d + (row0 * s_.N + col0) * ab_;
      loadGroup({mvinD(src, dAddr, dm, dn), stream});
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
                         uint32_t(n), map_.accumulate && !first, deps);
    if (addD)
      comp.flags |= AddD;
    out_.push_back(comp);
    if (last) {
      uint64_t dram = ws ? buf_.c + (uint64_t(v0) * s_.N + fc * C_) * ob_
                         : buf_.c + (uint64_t(fc * C_) * s_.N + v0) * ob_;
      store(dram, accAddr, m, n);
      if (!map_.accumulate)
        ++outputs_;
    }
  }

  const ArrayConfig &c_;
  const GemmShape &s_;
  const GemmMapping &map_;
  const GemmBuffers &buf_;
  const Dataflow df_;
  const int64_t R_, C_;
  const Roles roles_;
  const uint64_t eb_;
  const bool os_;
  const int64_t rowFolds_, colFolds_;
  // The sizing.
  int64_t statSlot_ = 0, chunk_ = 0, nChunks_ = 0;
  uint64_t spadStat_[2] = {0, 0};
  uint64_t streamBase_ = 0, streamSlot_ = 0, accSlot_ = 0, ob_ = 0, ab_ = 0,
           dSlotBase_ = 0;
  // The program and the emission's counters.
  Program p_;
  std::vector<Instr> &out_ = p_.instrs;
  uint64_t ldStride_ = ~uint64_t(0);
  int64_t loadGroups_ = 0, outputs_ = 0, streamed_ = 0, statLoads_ = 0;
};

} // namespace

Result<Program> buildGemmProgram(const ArrayConfig &c, const GemmShape &s,
                                 const GemmMapping &map,
                                 const GemmBuffers &buf) {
  auto prefixed = [&](const Status &why) {
    return fail(strFormat("GEMM %lldx%lldx%lld with mapping '%s' on '%s': ",
                          (long long)s.M, (long long)s.K, (long long)s.N,
                          map.str().c_str(), c.name.c_str()) +
                why.message());
  };
  if (Status why = checkMappingFits(c, s, map, buf); !why.ok())
    return prefixed(why);
  ProgramBuilder builder(c, s, map, buf);
  if (Status why = builder.size(); !why.ok())
    return prefixed(why);
  return builder.build();
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

Status checkGemmProgram(const ArrayConfig &c, const GemmShape &s,
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
    return rep.status();
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
    return Status();
  size_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= std::fabs(got[worst] - want[worst])))
      worst = i;
  return fail("C differs from the reference (rel L2 " + fixed2(cmp.relL2) +
              ", max abs " + fixed2(cmp.maxAbs) +
              strFormat("): C[%zu][%zu] is ", worst / size_t(s.N),
                        worst % size_t(s.N)) +
              fixed2(got[worst]) + ", the reference " + fixed2(want[worst]));
}

Result<TunedGemm> tuneGemmMapping(const ArrayConfig &c, const GemmShape &s,
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
        firstError = p.message();
      continue;
    }
    auto est = machine.estimate(*p);
    if (!est)
      continue;
    ranked.push_back({est->totalCycles, m, std::move(*p)});
  }
  if (ranked.empty())
    return fail(strFormat("no mapping of GEMM %lldx%lldx%lld fits '%s': ",
                          (long long)s.M, (long long)s.K, (long long)s.N,
                          c.name.c_str()) +
                firstError);
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
                     const Program &p) -> Status {
    auto rep = machine.simulate(p, SimOptions{/*functional=*/false});
    if (!rep)
      return rep.status();
    ++best.simulated;
    measured.push_back({m, estimate, rep->totalCycles, measured.size(), &p});
    return Status();
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
      (void)measure(fixed, -1, *fixedProgram);
    }
  }
  for (int r = 0; r < simulateTop && r < int(ranked.size()); ++r) {
    const Ranked &candidate = ranked[order[r]];
    const GemmMapping &m = candidate.mapping;
    if (fixedProgram && m.dataflow == fixed.dataflow &&
        m.chunk == fixed.chunk && m.accumulate == fixed.accumulate &&
        !m.resident && !m.streamSpadElems)
      continue;
    if (Status e = measure(m, candidate.estimate, candidate.program); !e.ok())
      return e;
  }
  std::sort(measured.begin(), measured.end(),
            [](const Measured &a, const Measured &b) {
              return a.cycles != b.cycles ? a.cycles < b.cycles
                                          : a.rank < b.rank;
            });
  for (const Measured &m : measured) {
    if (check && !checkGemmProgram(c, s, buf, *m.program).ok()) {
      ++best.rejected;
      continue;
    }
    best.mapping = m.mapping;
    best.cycles = m.cycles;
    best.estimatedCycles = m.estimate;
    best.program = *m.program;
    return best;
  }
  return fail(measured.empty() ? "no mapping could be simulated"
                               : "no mapping computed the reference result");
}

} // namespace ign::systolic
