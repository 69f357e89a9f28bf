//===- Isa.cpp - Instruction encoding, decoding and printing
//---------------===//
//
// Word 0: [7:0] opcode, [11:8] dependency flags, [15:12] flags, [17:16]
// operand, [19:18] dataflow, [23:20] output type, [31:24] zero, [63:32]
// opcode-specific (CONFIG_ST: scale as IEEE float; COMPUTE: m | k << 16).
// Words 1 and 2 per opcode: docs/systolic-isa.md.
//
//===----------------------------------------------------------------------===//

#include "Isa.h"
#include "Text.h"

#include <cstring>

namespace ign::systolic {

const char *opcodeName(Opcode op) {
  switch (op) {
  case Opcode::ConfigEx:
    return "config_ex";
  case Opcode::ConfigLd:
    return "config_ld";
  case Opcode::ConfigSt:
    return "config_st";
  case Opcode::Mvin:
    return "mvin";
  case Opcode::Mvout:
    return "mvout";
  case Opcode::Preload:
    return "preload";
  case Opcode::ComputePreloaded:
    return "compute_preloaded";
  case Opcode::ComputeAccumulated:
    return "compute_accumulated";
  case Opcode::Flush:
    return "flush";
  case Opcode::ConfigIm2col:
    return "config_im2col";
  case Opcode::MvinIm2col:
    return "mvin_im2col";
  }
  return "?";
}

Queue queueOf(Opcode op) {
  switch (op) {
  case Opcode::ConfigLd:
  case Opcode::Mvin:
  case Opcode::ConfigIm2col:
  case Opcode::MvinIm2col:
    return Queue::Load;
  case Opcode::ConfigEx:
  case Opcode::Preload:
  case Opcode::ComputePreloaded:
  case Opcode::ComputeAccumulated:
    return Queue::Execute;
  case Opcode::ConfigSt:
  case Opcode::Mvout:
    return Queue::Store;
  case Opcode::Flush:
    return Queue::None;
  }
  return Queue::None;
}

const char *operandName(Operand o) {
  switch (o) {
  case Operand::A:
    return "A";
  case Operand::B:
    return "B";
  case Operand::C:
    return "C";
  }
  return "?";
}

static uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
static float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
static uint64_t pack32(uint32_t lo, uint32_t hi) {
  return uint64_t(lo) | (uint64_t(hi) << 32);
}

std::array<uint64_t, 3> Instr::encode() const {
  std::array<uint64_t, 3> w{0, 0, 0};
  w[0] = uint64_t(op) | (uint64_t(deps & 0xF) << 8) |
         (uint64_t(flags & 0xF) << 12) | (uint64_t(operand) << 16) |
         (uint64_t(dataflow) << 18) | (uint64_t(outType) << 20);
  switch (op) {
  case Opcode::ConfigEx:
    w[1] = pack32(strideA, strideB);
    w[2] = strideC;
    break;
  case Opcode::ConfigLd:
    w[1] = dramStride;
    w[2] = strideA;
    break;
  case Opcode::ConfigSt:
    w[0] |= uint64_t(floatBits(scale)) << 32;
    w[1] = dramStride;
    w[2] = pack32(strideC, floatBits(clampMax));
    break;
  case Opcode::Mvin:
  case Opcode::Mvout:
    w[1] = dram;
    w[2] = pack32(addrA, (rows & 0xFFFF) | ((cols & 0xFFFF) << 16));
    break;
  case Opcode::Preload:
    w[1] = addrA;
    w[2] = pack32(0, (rows & 0xFFFF) | ((cols & 0xFFFF) << 16));
    break;
  case Opcode::ComputePreloaded:
  case Opcode::ComputeAccumulated:
    w[0] |= uint64_t((rows & 0xFFFF) | ((cols & 0xFFFF) << 16)) << 32;
    w[1] = pack32(addrA, addrB);
    w[2] = pack32(addrC, n & 0xFFFF);
    break;
  case Opcode::Flush:
    break;
  case Opcode::ConfigIm2col: {
    const Im2col &g = im2col;
    w[0] |= uint64_t((g.C & 0xFFFF) | ((g.H & 0xFFFF) << 16)) << 32;
    w[1] = uint64_t(g.W & 0xFFFF) | uint64_t(g.kh & 0xFF) << 16 |
           uint64_t(g.kw & 0xFF) << 24 | uint64_t(g.sh & 0xFF) << 32 |
           uint64_t(g.sw & 0xFF) << 40 | uint64_t(g.ph & 0xFF) << 48 |
           uint64_t(g.pw & 0xFF) << 56;
    w[2] = uint64_t(g.OH & 0xFFFF) | uint64_t(g.OW & 0xFFFF) << 16 |
           uint64_t(g.dh & 0xFF) << 32 | uint64_t(g.dw & 0xFF) << 40;
    break;
  }
  case Opcode::MvinIm2col:
    w[0] |= uint64_t((p0 & 0xFFFF) | ((k0 & 0xFFFF) << 16)) << 32;
    w[1] = dram;
    w[2] = pack32(addrA, (rows & 0xFFFF) | ((cols & 0xFFFF) << 16));
    break;
  }
  return w;
}

Result<Instr> Instr::decode(const std::array<uint64_t, 3> &w) {
  auto bad = [&](const std::string &why) {
    return fail(strFormat("bad instruction 0x%016llx 0x%016llx 0x%016llx: ",
                          (unsigned long long)w[0], (unsigned long long)w[1],
                          (unsigned long long)w[2]) +
                why);
  };
  Instr in;
  uint8_t opc = w[0] & 0xFF;
  if (opc > uint8_t(Opcode::MvinIm2col))
    return bad("unknown opcode " + std::to_string(opc));
  in.op = Opcode(opc);
  in.deps = (w[0] >> 8) & 0xF;
  in.flags = (w[0] >> 12) & 0xF;
  in.operand = Operand((w[0] >> 16) & 3);
  unsigned df = (w[0] >> 18) & 3, ot = (w[0] >> 20) & 0xF;
  if (df > 2)
    return bad("dataflow field is 3");
  if (ot > unsigned(ElemType::I32))
    return bad("unknown output type " + std::to_string(ot));
  if (unsigned(in.operand) > 2)
    return bad("operand field is 3");
  in.dataflow = Dataflow(df);
  in.outType = ElemType(ot);
  if ((w[0] >> 24) & 0xFF)
    return bad("reserved bits 24-31 of word 0 are set");
  uint32_t hi0 = w[0] >> 32;
  auto lo = [](uint64_t x) { return uint32_t(x); };
  auto hi = [](uint64_t x) { return uint32_t(x >> 32); };
  bool hiUsed = false;
  switch (in.op) {
  case Opcode::ConfigEx:
    in.strideA = lo(w[1]);
    in.strideB = hi(w[1]);
    in.strideC = lo(w[2]);
    if (hi(w[2]))
      return bad("reserved bits of word 2 are set");
    break;
  case Opcode::ConfigLd:
    in.dramStride = w[1];
    in.strideA = lo(w[2]);
    if (hi(w[2]))
      return bad("reserved bits of word 2 are set");
    break;
  case Opcode::ConfigSt:
    in.scale = bitsFloat(hi0);
    hiUsed = true;
    in.dramStride = w[1];
    in.strideC = lo(w[2]);
    in.clampMax = bitsFloat(hi(w[2]));
    break;
  case Opcode::Mvin:
  case Opcode::Mvout:
    in.dram = w[1];
    in.addrA = lo(w[2]);
    in.rows = hi(w[2]) & 0xFFFF;
    in.cols = hi(w[2]) >> 16;
    break;
  case Opcode::Preload:
    if (hi(w[1]) || lo(w[2]))
      return bad("reserved bits are set");
    in.addrA = lo(w[1]);
    in.rows = hi(w[2]) & 0xFFFF;
    in.cols = hi(w[2]) >> 16;
    break;
  case Opcode::ComputePreloaded:
  case Opcode::ComputeAccumulated:
    in.rows = hi0 & 0xFFFF;
    in.cols = hi0 >> 16;
    hiUsed = true;
    in.addrA = lo(w[1]);
    in.addrB = hi(w[1]);
    in.addrC = lo(w[2]);
    in.n = hi(w[2]);
    if (in.n > 0xFFFF)
      return bad("n does not fit 16 bits");
    break;
  case Opcode::Flush:
    if (w[1] || w[2])
      return bad("flush has operands");
    break;
  case Opcode::ConfigIm2col: {
    Im2col &g = in.im2col;
    g.C = hi0 & 0xFFFF;
    g.H = hi0 >> 16;
    hiUsed = true;
    g.W = w[1] & 0xFFFF;
    g.kh = (w[1] >> 16) & 0xFF;
    g.kw = (w[1] >> 24) & 0xFF;
    g.sh = (w[1] >> 32) & 0xFF;
    g.sw = (w[1] >> 40) & 0xFF;
    g.ph = (w[1] >> 48) & 0xFF;
    g.pw = (w[1] >> 56) & 0xFF;
    g.OH = w[2] & 0xFFFF;
    g.OW = (w[2] >> 16) & 0xFFFF;
    g.dh = (w[2] >> 32) & 0xFF;
    g.dw = (w[2] >> 40) & 0xFF;
    if (w[2] >> 48)
      return bad("reserved bits of word 2 are set");
    break;
  }
  case Opcode::MvinIm2col:
    in.p0 = hi0 & 0xFFFF;
    in.k0 = hi0 >> 16;
    hiUsed = true;
    in.dram = w[1];
    in.addrA = lo(w[2]);
    in.rows = hi(w[2]) & 0xFFFF;
    in.cols = hi(w[2]) >> 16;
    break;
  }
  if (!hiUsed && hi0)
    return bad("reserved bits 32-63 of word 0 are set");
  return in;
}

std::string Instr::str() const {
  std::string d;
  if (deps & PopPrev)
    d += " pop_prev";
  if (deps & PopNext)
    d += " pop_next";
  if (deps & PushPrev)
    d += " push_prev";
  if (deps & PushNext)
    d += " push_next";
  using ull = unsigned long long;
  switch (op) {
  case Opcode::ConfigEx:
    return strFormat("config_ex %s stride_a=%u stride_b=%u stride_c=%u%s",
                     dataflowName(dataflow), strideA, strideB, strideC,
                     d.c_str());
  case Opcode::ConfigLd:
    return strFormat("config_ld dram_stride=%llu local_stride=%u%s",
                     ull(dramStride), strideA, d.c_str());
  case Opcode::ConfigSt:
    return strFormat(
        "config_st dram_stride=%llu acc_stride=%u out=%s scale=%s%s%s%s",
        ull(dramStride), strideC, elemTypeName(outType), fixed2(scale).c_str(),
        (flags & Relu) ? " relu" : "",
        clampMax != 0 ? (" clamp_max=" + fixed2(clampMax)).c_str() : "",
        d.c_str());
  case Opcode::Mvin:
    return strFormat("mvin %s dram=0x%llx %s=%u %ux%u%s%s",
                     operandName(operand), ull(dram),
                     (flags & Accumulate) ? "acc" : "spad", addrA, rows, cols,
                     (flags & BroadcastRows) ? " broadcast" : "", d.c_str());
  case Opcode::Mvout:
    return strFormat("mvout dram=0x%llx acc=%u %ux%u%s", ull(dram), addrA, rows,
                     cols, d.c_str());
  case Opcode::Preload:
    return strFormat("preload %s=%u %ux%u%s", (flags & AddD) ? "d" : "spad",
                     addrA, rows, cols, d.c_str());
  case Opcode::ComputePreloaded:
  case Opcode::ComputeAccumulated:
    return strFormat("%s a=%u b=%u c=%u m=%u k=%u n=%u%s%s%s", opcodeName(op),
                     addrA, addrB, addrC, rows, cols, n,
                     (flags & Accumulate) ? " accumulate" : "",
                     (flags & AddD) ? " add_d" : "", d.c_str());
  case Opcode::Flush:
    return "flush";
  case Opcode::ConfigIm2col:
    return strFormat("config_im2col image %ux%ux%u window %ux%u stride "
                     "%ux%u pad %ux%u dilation %ux%u out %ux%u",
                     im2col.C, im2col.H, im2col.W, im2col.kh, im2col.kw,
                     im2col.sh, im2col.sw, im2col.ph, im2col.pw, im2col.dh,
                     im2col.dw, im2col.OH, im2col.OW);
  case Opcode::MvinIm2col:
    return strFormat("mvin_im2col A image=0x%llx spad=%u %ux%u pixel=%u "
                     "column=%u%s",
                     ull(dram), addrA, rows, cols, p0, k0, d.c_str());
  }
  return "?";
}

static constexpr char kMagic[8] = {'I', 'G', 'N', 'S', 'Y', 'S', '0', '1'};

static void write64le(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
static uint64_t read64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

std::vector<uint8_t> Program::serialize() const {
  std::vector<uint8_t> out(8 + 16 + 24 * instrs.size());
  std::memcpy(out.data(), kMagic, 8);
  write64le(out.data() + 8, dramBytes);
  write64le(out.data() + 16, instrs.size());
  for (size_t i = 0; i < instrs.size(); ++i) {
    auto w = instrs[i].encode();
    for (int j = 0; j < 3; ++j)
      write64le(out.data() + 24 + 24 * i + 8 * j, w[j]);
  }
  return out;
}

Result<Program> Program::deserialize(const uint8_t *bytes, size_t size) {
  if (size < 24 || std::memcmp(bytes, kMagic, 8))
    return fail("not a systolic program (bad magic)");
  Program p;
  p.dramBytes = read64le(bytes + 8);
  uint64_t n = read64le(bytes + 16);
  if (n > (size - 24) / 24 || 24 + 24 * n != size)
    return fail(strFormat("systolic program is truncated or padded: %llu "
                          "instructions declared, %zu bytes",
                          (unsigned long long)n, size));
  p.instrs.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    std::array<uint64_t, 3> w;
    for (int j = 0; j < 3; ++j)
      w[j] = read64le(bytes + 24 + 24 * i + 8 * j);
    auto in = Instr::decode(w);
    if (!in)
      return fail(strFormat("instruction %llu: ", (unsigned long long)i) +
                  in.message());
    p.instrs.push_back(*in);
  }
  return p;
}

Instr configEx(Dataflow df, uint32_t strideA, uint32_t strideB,
               uint32_t strideC) {
  Instr in;
  in.op = Opcode::ConfigEx;
  in.dataflow = df;
  in.strideA = strideA;
  in.strideB = strideB;
  in.strideC = strideC;
  return in;
}

Instr configLd(uint64_t dramStride, uint32_t localStride) {
  Instr in;
  in.op = Opcode::ConfigLd;
  in.dramStride = dramStride;
  in.strideA = localStride;
  return in;
}

Instr configSt(uint64_t dramStride, uint32_t accStride, ElemType outType,
               float scale, bool relu, float clampMax) {
  Instr in;
  in.clampMax = clampMax;
  in.op = Opcode::ConfigSt;
  in.dramStride = dramStride;
  in.strideC = accStride;
  in.outType = outType;
  in.scale = scale;
  in.flags = relu ? Relu : 0;
  return in;
}

Instr mvin(uint64_t dram, uint32_t local, uint32_t rows, uint32_t cols,
           Operand operand, bool toAcc, uint8_t deps) {
  Instr in;
  in.op = Opcode::Mvin;
  in.dram = dram;
  in.addrA = local;
  in.rows = rows;
  in.cols = cols;
  in.operand = operand;
  in.flags = toAcc ? Accumulate : 0;
  in.deps = deps;
  return in;
}

Instr mvout(uint64_t dram, uint32_t acc, uint32_t rows, uint32_t cols,
            uint8_t deps) {
  Instr in;
  in.op = Opcode::Mvout;
  in.dram = dram;
  in.addrA = acc;
  in.rows = rows;
  in.cols = cols;
  in.operand = Operand::C;
  in.deps = deps;
  return in;
}

Instr preload(uint32_t addr, uint32_t rows, uint32_t cols, uint8_t deps) {
  Instr in;
  in.op = Opcode::Preload;
  in.addrA = addr;
  in.rows = rows;
  in.cols = cols;
  in.deps = deps;
  return in;
}

Instr compute(bool preloaded, uint32_t a, uint32_t b, uint32_t c, uint32_t m,
              uint32_t k, uint32_t n, bool accumulate, uint8_t deps) {
  Instr in;
  in.op = preloaded ? Opcode::ComputePreloaded : Opcode::ComputeAccumulated;
  in.addrA = a;
  in.addrB = b;
  in.addrC = c;
  in.rows = m;
  in.cols = k;
  in.n = n;
  in.flags = accumulate ? Accumulate : 0;
  in.deps = deps;
  return in;
}

Instr flush() { return Instr(); }

Instr configIm2col(const Instr::Im2col &geometry) {
  Instr in;
  in.op = Opcode::ConfigIm2col;
  in.im2col = geometry;
  return in;
}

Instr mvinIm2col(uint64_t image, uint32_t local, uint32_t rows, uint32_t cols,
                 uint32_t p0, uint32_t k0, uint8_t deps) {
  Instr in;
  in.op = Opcode::MvinIm2col;
  in.dram = image;
  in.addrA = local;
  in.rows = rows;
  in.cols = cols;
  in.p0 = p0;
  in.k0 = k0;
  in.operand = Operand::A;
  in.deps = deps;
  return in;
}

} // namespace ign::systolic
