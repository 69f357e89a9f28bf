//===- SystolicTest.cpp - systolic ISA, simulator tiers, mappings ---------===//
//
// Functional results against a plain matmul for every dataflow, element
// type and mapping; the cycle-level and analytical tiers against each other
// and against SCALE-Sim's closed forms; invariants (utilization <= 1, no
// negative stall) over randomized shapes and machines; bad programs.
//
//===----------------------------------------------------------------------===//

#include "GemmMapping.h"
#include "ScaleSim.h"
#include "Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

using namespace ign::systolic;

ArrayConfig smallMachine(int64_t rows, int64_t cols, ElemType t,
                         double bandwidth = 0) {
  ArrayConfig c;
  c.name = "test";
  c.rows = rows;
  c.cols = cols;
  c.inType = t;
  c.spadBytes = 64 * 1024;
  c.accBytes = 64 * 1024;
  c.dramBytesPerCycle = bandwidth;
  c.dramLatency = bandwidth > 0 ? 10 : 0;
  return c;
}

std::string errorOf(const Status &s) { return s.message(); }

template <typename T> std::string errorOf(const Result<T> &v) {
  return v ? std::string() : v.message();
}

struct Epilogue {
  bool d = false, broadcast = false, relu = false;
  float scale = 1.0f;
  float clampMax = 0.0f;
};

/// Fills A and B (and D) with random values, runs the mapping functionally
/// and compares C with a reference matmul and epilogue.
void checkGemm(const ArrayConfig &c, GemmShape s, GemmMapping map,
               uint32_t seed, Epilogue ep = {}) {
  SCOPED_TRACE(testing::Message()
               << "M=" << s.M << " K=" << s.K << " N=" << s.N << " "
               << map.str() << " " << elemTypeName(c.inType) << " " << c.rows
               << "x" << c.cols << (ep.d ? " +D" : "")
               << (ep.broadcast ? " broadcast" : "") << (ep.relu ? " relu" : "")
               << " scale " << ep.scale);
  ElemType out = c.inType == ElemType::I8 && ep.scale == 1.0f ? ElemType::I32
                                                              : ElemType::F32;
  GemmBuffers buf = denseGemmBuffers(c, s, out, ep.d, ep.broadcast);
  buf.relu = ep.relu;
  buf.scale = ep.scale;
  buf.clampMax = ep.clampMax;
  auto prog = buildGemmProgram(c, s, map, buf);
  ASSERT_TRUE(bool(prog)) << errorOf(prog);
  Machine m(c);
  m.dram().assign(buf.dramBytes, 0xAB); // C poisoned
  std::mt19937 rng(seed);
  std::vector<double> A(s.M * s.K), B(s.K * s.N);
  auto put = [&](uint64_t base, int64_t i, double v) {
    uint8_t *p = m.dram().data() + base;
    if (c.inType == ElemType::I8) {
      p[i] = uint8_t(int8_t(v));
    } else if (c.inType == ElemType::F32) {
      float f = float(v);
      std::memcpy(p + 4 * i, &f, 4);
    } else { // f16: small integers and halves are exact
      // Build the half by hand: v in [-8, 8] in steps of 0.5.
      float f = float(v);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      uint16_t h = 0;
      if (f != 0) {
        int e = int((x >> 23) & 0xFF) - 127 + 15;
        h = uint16_t(((x >> 16) & 0x8000) | (e << 10) | ((x >> 13) & 0x3FF));
      }
      std::memcpy(p + 2 * i, &h, 2);
    }
  };
  std::uniform_int_distribution<int> small(-16, 15);
  for (int64_t i = 0; i < s.M * s.K; ++i) {
    A[i] = c.inType == ElemType::I8 ? small(rng) * 8 + 7 : small(rng) * 0.5;
    put(buf.a, i, A[i]);
  }
  for (int64_t i = 0; i < s.K * s.N; ++i) {
    B[i] = c.inType == ElemType::I8 ? small(rng) * 8 : small(rng) * 0.5;
    put(buf.b, i, B[i]);
  }
  std::vector<double> D;
  if (ep.d) {
    int64_t rows = ep.broadcast ? 1 : s.M;
    D.resize(rows * s.N);
    for (int64_t i = 0; i < rows * s.N; ++i) {
      D[i] = small(rng) * 4;
      uint8_t *p = m.dram().data() + buf.d + 4 * i;
      if (c.inType == ElemType::I8) {
        int32_t v = int32_t(D[i]);
        std::memcpy(p, &v, 4);
      } else {
        float f = float(D[i]);
        std::memcpy(p, &f, 4);
      }
    }
  }
  auto rep = m.simulate(*prog);
  ASSERT_TRUE(bool(rep)) << errorOf(rep);
  EXPECT_EQ(rep->macs, s.M * s.K * s.N);
  for (int64_t i = 0; i < s.M; ++i)
    for (int64_t j = 0; j < s.N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < s.K; ++k)
        ref += A[i * s.K + k] * B[k * s.N + j];
      if (ep.d)
        ref += D[(ep.broadcast ? 0 : i) * s.N + j];
      ref = double(float(ref) * ep.scale);
      if (ep.relu && ref < 0)
        ref = 0;
      if (ep.clampMax > 0 && ref > ep.clampMax)
        ref = ep.clampMax;
      const uint8_t *p = m.dram().data() + buf.c + 4 * (i * s.N + j);
      double got;
      if (out == ElemType::I32) {
        int32_t v;
        std::memcpy(&v, p, 4);
        got = v;
      } else {
        float f;
        std::memcpy(&f, p, 4);
        got = f;
      }
      ASSERT_EQ(got, ref) << "C[" << i << "][" << j << "]";
    }
}

TEST(SystolicIsa, EncodeDecodeRoundTrip) {
  std::vector<Instr> all = {
      configEx(Dataflow::IS, 3, 5, 7),
      configLd(1234, 16),
      configSt(99, 8, ElemType::F16, 0.25f, true, 6.0f),
      mvin(0x123456789, 77, 16, 300, Operand::B, true, PushNext | PopNext),
      mvout(42, 9, 3, 4, PopPrev | PushPrev),
      preload(100, 16, 8, PopPrev),
      compute(true, 1, 2, 3, 65535, 16, 12, true, PushNext),
      compute(false, 4, 5, 6, 7, 8, 9, false, 0),
      configIm2col({3, 224, 224, 11, 11, 4, 4, 2, 2, 1, 1, 54, 54}),
      mvinIm2col(0x40, 12, 300, 32, 2915, 331, PopNext | PushNext),
      flush()};
  Program p;
  p.instrs = all;
  p.dramBytes = 4096;
  auto bytes = p.serialize();
  auto back = Program::deserialize(bytes);
  ASSERT_TRUE(bool(back)) << errorOf(back);
  ASSERT_EQ(back->instrs.size(), all.size());
  EXPECT_EQ(back->dramBytes, 4096u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(back->instrs[i].str(), all[i].str());
    EXPECT_EQ(back->instrs[i].encode(), all[i].encode());
  }
}

TEST(SystolicIsa, DamagedProgramsAreRejected) {
  Program p;
  p.instrs = {mvin(0, 0, 1, 1, Operand::A), flush()};
  p.dramBytes = 1;
  auto bytes = p.serialize();
  auto truncated = bytes;
  truncated.pop_back();
  auto t = Program::deserialize(truncated);
  EXPECT_NE(errorOf(t).find("truncated"), std::string::npos);
  auto badMagic = bytes;
  badMagic[0] = 'X';
  auto m = Program::deserialize(badMagic);
  EXPECT_NE(errorOf(m).find("magic"), std::string::npos);
  auto badOp = bytes;
  badOp[24] = 200; // opcode of the first instruction
  auto o = Program::deserialize(badOp);
  EXPECT_NE(errorOf(o).find("unknown opcode"), std::string::npos);
  auto reserved = bytes;
  reserved[24 + 3] = 1; // word 0 bits 24-31
  auto r = Program::deserialize(reserved);
  EXPECT_NE(errorOf(r).find("reserved"), std::string::npos);
}

TEST(SystolicSim, GemmIsComputedForEveryDataflowTypeAndMapping) {
  uint32_t seed = 1;
  for (ElemType t : {ElemType::I8, ElemType::F32, ElemType::F16})
    for (auto [rows, cols] : {std::pair{4, 4}, {4, 8}, {8, 3}})
      for (GemmShape s : {GemmShape{1, 1, 1}, GemmShape{9, 13, 5},
                          GemmShape{17, 4, 11}, GemmShape{6, 20, 20}})
        for (Dataflow df : {Dataflow::WS, Dataflow::IS, Dataflow::OS})
          for (int64_t chunk : {0, 2, 5})
            for (bool resident : {false, true}) {
              if (resident && df == Dataflow::OS)
                continue;
              GemmMapping map{df, chunk, /*accumulate=*/true};
              map.resident = resident;
              checkGemm(smallMachine(rows, cols, t), s, map, seed++);
            }
}

TEST(SystolicSim, EpilogueAddsDScalesAndRectifies) {
  uint32_t seed = 100;
  for (ElemType t : {ElemType::I8, ElemType::F32})
    for (GemmShape s : {GemmShape{9, 13, 5}, GemmShape{20, 7, 19}})
      for (Dataflow df : {Dataflow::WS, Dataflow::IS, Dataflow::OS})
        for (bool broadcast : {false, true})
          for (int64_t chunk : {0, 3}) {
            Epilogue ep{true, broadcast, seed % 2 == 0, seed % 3 ? 1.0f : 0.5f,
                        seed % 4 == 0 ? 6.0f : 0.0f};
            checkGemm(smallMachine(4, 6, t), s, {df, chunk, true}, seed++, ep);
          }
  // D needs the partial sums to stay in the accumulator.
  ArrayConfig c = smallMachine(4, 4, ElemType::I8);
  GemmShape s{8, 8, 8};
  auto p = buildGemmProgram(c, s, {Dataflow::WS, 0, false},
                            denseGemmBuffers(c, s, ElemType::I32, true));
  EXPECT_NE(errorOf(p).find("accumulating mapping"), std::string::npos);
}

TEST(SystolicSim, ImplicitIm2colComputesTheConvolutionWithLessTraffic) {
  struct Conv {
    uint32_t C, H, W, kh, kw, s, p, d, F;
  };
  for (Conv cv :
       {Conv{3, 9, 9, 3, 3, 1, 1, 1, 5}, Conv{4, 10, 8, 3, 3, 2, 1, 1, 7},
        Conv{2, 12, 12, 5, 5, 2, 2, 1, 3}, Conv{5, 7, 7, 1, 1, 1, 0, 1, 9},
        Conv{3, 11, 11, 3, 3, 1, 2, 2, 4}}) {
    Instr::Im2col g{cv.C, cv.H, cv.W, cv.kh, cv.kw, cv.s, cv.s,
                    cv.p, cv.p, cv.d, cv.d,  0,     0};
    g.OH = (cv.H + 2 * cv.p - (cv.kh - 1) * cv.d - 1) / cv.s + 1;
    g.OW = (cv.W + 2 * cv.p - (cv.kw - 1) * cv.d - 1) / cv.s + 1;
    GemmShape s{int64_t(g.OH * g.OW), int64_t(cv.C * cv.kh * cv.kw),
                int64_t(cv.F)};
    for (ElemType t : {ElemType::I8, ElemType::F32})
      for (Dataflow df : {Dataflow::WS, Dataflow::OS, Dataflow::IS})
        for (int64_t chunk : {0, 7}) {
          ArrayConfig c = smallMachine(4, 4, t);
          SCOPED_TRACE(testing::Message()
                       << "conv " << cv.C << "x" << cv.H << "x" << cv.W << " k"
                       << cv.kh << " s" << cv.s << " p" << cv.p << " d" << cv.d
                       << " " << dataflowName(df) << " " << elemTypeName(t)
                       << " chunk " << chunk);
          ElemType out = t == ElemType::I8 ? ElemType::I32 : ElemType::F32;
          GemmBuffers buf = convGemmBuffers(c, s, g, out, true, true);
          for (bool resident : {false, true}) {
            if (resident && df == Dataflow::OS)
              continue;
            GemmMapping map{df, chunk, true};
            map.resident = resident;
            auto p = buildGemmProgram(c, s, map, buf);
            ASSERT_TRUE(bool(p)) << errorOf(p);
            Status e = checkGemmProgram(c, s, buf, *p, 11);
            EXPECT_TRUE(e.ok()) << map.str() << ": " << errorOf(e);
          }
        }
  }
  // A 3x3 stride-1 convolution reads its image rows, not nine copies.
  ArrayConfig c = smallMachine(8, 8, ElemType::I8);
  Instr::Im2col g{8, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16, 16};
  GemmShape s{256, 72, 8};
  Machine m(c);
  auto implicitP = buildGemmProgram(c, s, {Dataflow::WS, 0, true},
                                    convGemmBuffers(c, s, g, ElemType::I8));
  auto explicitP = buildGemmProgram(c, s, {Dataflow::WS, 0, true},
                                    denseGemmBuffers(c, s, ElemType::I8));
  ASSERT_TRUE(bool(implicitP) && bool(explicitP));
  auto ri = m.simulate(*implicitP, {false});
  auto re = m.simulate(*explicitP, {false});
  ASSERT_TRUE(bool(ri) && bool(re));
  EXPECT_LT(ri->dramReadBytesByOperand["A"] * 3,
            re->dramReadBytesByOperand["A"]);
  EXPECT_EQ(ri->macs, re->macs);
}

TEST(SystolicSim, LimitedBandwidthStillComputesAndStalls) {
  ArrayConfig c = smallMachine(8, 8, ElemType::I8, /*bandwidth=*/2);
  checkGemm(c, {40, 30, 20}, {Dataflow::WS, 8, true}, 7);
  GemmShape s{64, 64, 64};
  GemmBuffers buf = denseGemmBuffers(c, s, ElemType::I8);
  auto prog = buildGemmProgram(c, s, {Dataflow::WS, 0, true}, buf);
  ASSERT_TRUE(bool(prog));
  Machine m(c);
  auto slow = m.simulate(*prog, {false});
  ASSERT_TRUE(bool(slow));
  c.dramBytesPerCycle = 0;
  Machine fast(c);
  auto quick = fast.simulate(*prog, {false});
  ASSERT_TRUE(bool(quick));
  EXPECT_EQ(quick->stallCycles, 0);
  EXPECT_GT(slow->stallCycles, 0);
  EXPECT_GT(slow->totalCycles, quick->totalCycles);
  // The DRAM channel moved every operand byte and every result byte.
  EXPECT_EQ(slow->dramReadBytes, quick->dramReadBytes);
  EXPECT_GT(slow->stalls.count("load.A") + slow->stalls.count("load.B"), 0u);
}

TEST(SystolicSim, ScaleSimClosedForms) {
  // Published SCALE-Sim cases, confirmed with scalesim 3.0.0.
  ArrayConfig c = smallMachine(32, 32, ElemType::I8);
  c.spadBytes = 128 * 1024;
  c.accBytes = 256 * 1024;
  TopologyLayer conv1;
  conv1.name = "Conv1";
  conv1.ifmapH = conv1.ifmapW = 224;
  conv1.filterH = conv1.filterW = 11;
  conv1.channels = 3;
  conv1.filters = 96;
  conv1.strideH = conv1.strideW = 4;
  auto r = simulateLayer(c, conv1, {Dataflow::WS, 0, false});
  ASSERT_TRUE(bool(r)) << errorOf(r);
  EXPECT_EQ(r->totalCycles, 112283);
  EXPECT_NEAR(r->overallUtil, 91.68309650614964, 1e-9);
  EXPECT_NEAR(r->mappingEfficiency, 94.53125, 1e-9);
  EXPECT_NEAR(r->computeUtil, 90.78000992063485, 1e-9);
  TopologyLayer g;
  g.name = "g";
  g.ifmapH = 128;             // M
  g.ifmapW = g.filterW = 256; // K
  g.filterH = g.channels = 1;
  g.filters = 64; // N
  std::pair<Dataflow, int64_t> expected[] = {
      {Dataflow::OS, 2543}, {Dataflow::WS, 3551}, {Dataflow::IS, 5055}};
  for (auto [df, cycles] : expected) {
    auto rr = simulateLayer(c, g, {df, 0, false});
    ASSERT_TRUE(bool(rr)) << errorOf(rr);
    EXPECT_EQ(rr->totalCycles, cycles) << dataflowName(df);
    EXPECT_EQ(rr->stallCycles, 0);
  }
}

TEST(SystolicSim, InvariantsAndTierAgreementOnRandomCases) {
  std::mt19937 rng(12345);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int exact = 0;
  for (int iter = 0; iter < 300; ++iter) {
    bool limited = iter % 3 == 0;
    ArrayConfig c = smallMachine(pick(1, 24), pick(1, 24), ElemType::I8,
                                 limited ? pick(1, 64) : 0);
    c.overlapPreload = iter % 2;
    c.loadQueueDepth = pick(1, 8);
    c.exQueueDepth = pick(1, 8);
    c.storeQueueDepth = pick(1, 8);
    GemmShape s{pick(1, 200), pick(1, 200), pick(1, 200)};
    Dataflow df = Dataflow(pick(0, 2));
    GemmMapping map{df, pick(0, 1) ? 0 : pick(1, 64), bool(pick(0, 1))};
    map.resident = map.accumulate && df != Dataflow::OS && pick(0, 1);
    SCOPED_TRACE(testing::Message()
                 << "iter " << iter << " " << map.str() << " M=" << s.M
                 << " K=" << s.K << " N=" << s.N << " " << c.describe());
    GemmBuffers buf = denseGemmBuffers(c, s, ElemType::I8);
    auto prog = buildGemmProgram(c, s, map, buf);
    ASSERT_TRUE(bool(prog)) << errorOf(prog);
    Machine m(c);
    auto cyc = m.simulate(*prog, {false});
    ASSERT_TRUE(bool(cyc)) << errorOf(cyc);
    auto est = m.estimate(*prog);
    ASSERT_TRUE(bool(est)) << errorOf(est);
    for (const Report *r : {&*cyc, &*est}) {
      EXPECT_GE(r->stallCycles, 0);
      for (auto &[cause, n] : r->stalls)
        EXPECT_GE(n, 0) << cause;
      EXPECT_GT(r->utilization, 0);
      EXPECT_LE(r->utilization, 1.0);
      EXPECT_GT(r->mappingEfficiency, 0);
      EXPECT_LE(r->mappingEfficiency, 1.0);
      EXPECT_LE(r->computeSpan, r->totalCycles);
      EXPECT_EQ(r->macs, s.M * s.K * s.N);
    }
    int64_t stallSum = 0;
    for (auto &[cause, n] : cyc->stalls)
      stallSum += n;
    EXPECT_EQ(stallSum, cyc->stallCycles);
    EXPECT_LE(cyc->busyCycles + cyc->stallCycles, cyc->computeSpan);
    if (!limited) {
      // Unlimited bandwidth: operands never make the array wait, and the
      // tiers agree exactly unless a shallow queue throttled the front end
      // (which only the cycle-level tier models).
      EXPECT_EQ(cyc->stalls.count("load.A") + cyc->stalls.count("load.B") +
                    cyc->stalls.count("load.C"),
                0u);
      EXPECT_EQ(cyc->totalCycles, cyc->computeSpan);
      if (!cyc->stalls.count("dispatch")) {
        ++exact;
        EXPECT_EQ(est->totalCycles, cyc->totalCycles);
        EXPECT_EQ(est->computeSpan, cyc->computeSpan);
        EXPECT_EQ(est->stallCycles, cyc->stallCycles);
      }
    } else {
      // The estimate is a lower bound the DRAM channel cannot beat.
      EXPECT_GE(cyc->totalCycles, cyc->dramBusyCycles);
      EXPECT_GE(cyc->computeSpan, est->computeSpan - est->stallCycles);
    }
  }
  EXPECT_GT(exact, 150); // most unlimited cases are compared exactly
}

TEST(SystolicSim, ScaleSimMappingNeverStallsWithUnlimitedBandwidth) {
  std::mt19937 rng(777);
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  for (int iter = 0; iter < 200; ++iter) {
    ArrayConfig c = smallMachine(pick(1, 40), pick(1, 40), ElemType::I8);
    GemmShape s{pick(1, 300), pick(1, 300), pick(1, 300)};
    Dataflow df = Dataflow(pick(0, 2));
    GemmBuffers buf = denseGemmBuffers(c, s, ElemType::I8);
    auto prog = buildGemmProgram(c, s, {df, 0, false}, buf);
    ASSERT_TRUE(bool(prog)) << errorOf(prog);
    Machine m(c);
    auto cyc = m.simulate(*prog, {false});
    ASSERT_TRUE(bool(cyc)) << errorOf(cyc);
    auto est = m.estimate(*prog);
    ASSERT_TRUE(bool(est));
    // SCALE-Sim's closed form: folds x (stationary load + stream + fill).
    FoldStats f = scaleSimFoldStats(c, s, df);
    int64_t R = c.rows, C = c.cols;
    int64_t stream = df == Dataflow::WS ? s.M : df == Dataflow::IS ? s.N : s.K;
    int64_t perFold = (df == Dataflow::OS ? 0 : R) + stream + R + C - 2;
    EXPECT_EQ(cyc->stallCycles, 0);
    EXPECT_EQ(cyc->computeSpan, f.folds * perFold)
        << dataflowName(df) << " " << s.M << "x" << s.K << "x" << s.N << " on "
        << R << "x" << C;
    EXPECT_EQ(est->computeSpan, cyc->computeSpan);
  }
}

TEST(SystolicSim, BadProgramsAreRejectedWithTheInstruction) {
  ArrayConfig c = smallMachine(4, 4, ElemType::I8);
  Machine m(c);
  auto run = [&](std::vector<Instr> instrs, uint64_t dram = 64) {
    Program p;
    p.instrs = std::move(instrs);
    p.dramBytes = dram;
    auto r = m.simulate(p);
    return errorOf(r);
  };
  EXPECT_NE(run({mvin(0, 0, 2, 64, Operand::A)}).find("DRAM block leaves"),
            std::string::npos);
  EXPECT_NE(run({mvin(0, 70000, 1, 1, Operand::A)}).find("scratchpad"),
            std::string::npos);
  EXPECT_NE(run({preload(0, 5, 4)}).find("does not fit"), std::string::npos);
  EXPECT_NE(run({compute(true, 0, 0, 0, 4, 4, 4, false)}).find("PRELOAD first"),
            std::string::npos);
  EXPECT_NE(run({preload(0, 4, 4), compute(true, 0, 0, 0, 4, 3, 4, false)})
                .find("does not match"),
            std::string::npos);
  EXPECT_NE(run({configEx(Dataflow::OS, 0, 0, 0), preload(0, 4, 4)})
                .find("output-stationary"),
            std::string::npos);
  // A token nobody signals.
  EXPECT_NE(run({preload(0, 4, 4, PopPrev)}).find("deadlock"),
            std::string::npos);
  // Balanced tokens in an order that cannot run: the execute queue waits
  // for a load that waits for the execute queue.
  std::string dl =
      run({preload(0, 4, 4, PopPrev | PushPrev),
           mvin(0, 0, 4, 4, Operand::B, false, PopNext | PushNext)});
  EXPECT_NE(dl.find("deadlock"), std::string::npos) << dl;
  // A machine that cannot run the dataflow.
  ArrayConfig tpu = *presetConfig("tpu-v1");
  Machine t(tpu);
  Program p;
  p.instrs = {configEx(Dataflow::OS, 0, 0, 0)};
  auto r = t.simulate(p);
  EXPECT_NE(errorOf(r).find("cannot run dataflow os"), std::string::npos);
}

TEST(SystolicConfigTest, PresetsAreValid) {
  for (const std::string &name : presetNames()) {
    auto c = presetConfig(name);
    ASSERT_TRUE(bool(c)) << name;
    EXPECT_TRUE(c->validate().ok()) << name;
  }
  auto tpu = presetConfig("tpu-v1");
  EXPECT_EQ(tpu->rows, 256);
  EXPECT_EQ(tpu->spadBytes, 24 * 1024 * 1024);
  EXPECT_EQ(tpu->accBytes, 4 * 1024 * 1024);
  EXPECT_NEAR(tpu->dramBytesPerCycle * tpu->clockMHz * 1e6, 34e9, 1);
  auto g = presetConfig("gemmini-16");
  EXPECT_EQ(g->spadBytes, 256 * 1024);
  EXPECT_EQ(g->accBytes, 64 * 1024);
  auto bad = presetConfig("gemmini-99");
  EXPECT_NE(errorOf(bad).find("gemmini-16"), std::string::npos);
}

TEST(SystolicTune, TunedMappingIsNeverSlowerThanTheFixedOnes) {
  ArrayConfig c = smallMachine(32, 32, ElemType::I8);
  c.spadBytes = 128 * 1024;
  c.accBytes = 256 * 1024;
  for (GemmShape s : {GemmShape{49, 4608, 512}, GemmShape{3136, 576, 64},
                      GemmShape{1, 2048, 1000}}) {
    auto tuned = tuneGemmMapping(c, s);
    ASSERT_TRUE(bool(tuned)) << errorOf(tuned);
    GemmBuffers buf = denseGemmBuffers(c, s, ElemType::I8);
    // SCALE-Sim's own mapping where it computes C, else its accumulating
    // counterpart.
    GemmMapping fixed{Dataflow::WS, 0, false};
    if (!mappingComputesC(c, s, fixed))
      fixed.accumulate = true;
    auto p = buildGemmProgram(c, s, fixed, buf);
    ASSERT_TRUE(bool(p));
    Machine m(c);
    auto base = m.simulate(*p, {false});
    ASSERT_TRUE(bool(base));
    EXPECT_LE(tuned->cycles, base->totalCycles);
    EXPECT_TRUE(mappingComputesC(c, s, tuned->mapping));
  }
  // K = 4608 spans 144 folds of 32: storing every fold's partial sums is
  // not the product, so it is never a candidate.
  GemmShape deep{49, 4608, 512};
  EXPECT_FALSE(mappingComputesC(c, deep, {Dataflow::WS, 0, false}));
  for (const GemmMapping &m : gemmMappingSpace(c, deep))
    EXPECT_TRUE(m.accumulate || m.dataflow == Dataflow::OS) << m.str();
}

} // namespace
