//===- Config.cpp - Machine descriptions, presets, SCALE-Sim configs ------===//

#include "Config.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <charconv>

using namespace llvm;

namespace ign::systolic {

const char *dataflowName(Dataflow df) {
  switch (df) {
  case Dataflow::OS:
    return "os";
  case Dataflow::WS:
    return "ws";
  case Dataflow::IS:
    return "is";
  }
  return "?";
}

bool parseDataflow(StringRef s, Dataflow &df) {
  std::string l = s.trim().lower();
  if (l == "os")
    df = Dataflow::OS;
  else if (l == "ws")
    df = Dataflow::WS;
  else if (l == "is")
    df = Dataflow::IS;
  else
    return false;
  return true;
}

const char *elemTypeName(ElemType t) {
  switch (t) {
  case ElemType::I8:
    return "i8";
  case ElemType::F16:
    return "f16";
  case ElemType::F32:
    return "f32";
  case ElemType::I32:
    return "i32";
  }
  return "?";
}

bool parseElemType(StringRef s, ElemType &t) {
  for (ElemType c : {ElemType::I8, ElemType::F16, ElemType::F32, ElemType::I32})
    if (s == elemTypeName(c)) {
      t = c;
      return true;
    }
  return false;
}

unsigned elemBytes(ElemType t) {
  switch (t) {
  case ElemType::I8:
    return 1;
  case ElemType::F16:
    return 2;
  case ElemType::F32:
  case ElemType::I32:
    return 4;
  }
  return 1;
}

ElemType accumulatorType(ElemType in) {
  return in == ElemType::I8 ? ElemType::I32 : ElemType::F32;
}

Error ArrayConfig::validate() const {
  auto bad = [&](const Twine &what) {
    return createStringError(inconvertibleErrorCode(),
                             "machine '" + name + "': " + what);
  };
  if (rows < 1 || cols < 1 || rows > 4096 || cols > 4096)
    return bad(formatv("array {0}x{1} is out of range (1..4096)", rows, cols));
  if (!dataflows || (dataflows & ~0b111u))
    return bad("no valid dataflow");
  if (!supports(dataflow))
    return bad(formatv("default dataflow {0} is not supported",
                       dataflowName(dataflow)));
  if (inType == ElemType::I32)
    return bad("i32 is not an input element type");
  if (spadBytes < rows * int64_t(elemBytes(inType)) ||
      accBytes < cols * int64_t(elemBytes(accType())))
    return bad("scratchpad or accumulator smaller than one array row");
  if (spadBytes > (int64_t(1) << 32) || accBytes > (int64_t(1) << 34))
    return bad("scratchpad or accumulator beyond the 32-bit element space");
  if (spadBanks < 1 || accBanks < 1)
    return bad("bank counts must be positive");
  if (dramBytesPerCycle < 0 || dramLatency < 0)
    return bad("DRAM bandwidth and latency must not be negative");
  if (loadQueueDepth < 1 || exQueueDepth < 1 || storeQueueDepth < 1)
    return bad("queue depths must be positive");
  if (!(clockMHz > 0))
    return bad("clock must be positive");
  return Error::success();
}

/// The shortest decimal that reads back (1000, 16, 48.571428571428569).
static std::string shortNumber(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string ArrayConfig::describe() const {
  std::string dfs;
  for (Dataflow d : {Dataflow::OS, Dataflow::WS, Dataflow::IS})
    if (supports(d))
      dfs += std::string(dfs.empty() ? "" : "/") + dataflowName(d);
  return formatv("{0}: {1}x{2} {3}, dataflows {4}, scratchpad {5} KiB, "
                 "accumulator {6} KiB, DRAM {7} B/cycle, {8} MHz",
                 name, rows, cols, elemTypeName(inType), dfs, spadBytes / 1024,
                 accBytes / 1024,
                 dramBytesPerCycle == 0 ? std::string("unlimited")
                                        : shortNumber(dramBytesPerCycle),
                 shortNumber(clockMHz))
      .str();
}

std::vector<std::string> presetNames() {
  return {"gemmini-16", "gemmini-16-f32", "tpu-v1", "scale-32"};
}

json::Value toJSON(const ArrayConfig &c) {
  return json::Object{{"name", c.name},
                      {"rows", c.rows},
                      {"cols", c.cols},
                      {"dataflow", dataflowName(c.dataflow)},
                      {"dataflows", int64_t(c.dataflows)},
                      {"in_type", elemTypeName(c.inType)},
                      {"spad_bytes", c.spadBytes},
                      {"acc_bytes", c.accBytes},
                      {"spad_banks", c.spadBanks},
                      {"acc_banks", c.accBanks},
                      {"dram_bytes_per_cycle", c.dramBytesPerCycle},
                      {"dram_latency", c.dramLatency},
                      {"load_queue", c.loadQueueDepth},
                      {"ex_queue", c.exQueueDepth},
                      {"store_queue", c.storeQueueDepth},
                      {"overlap_preload", c.overlapPreload},
                      {"clock_mhz", c.clockMHz}};
}

Expected<ArrayConfig> configFromJSON(const json::Value &v) {
  auto bad = [](const Twine &why) {
    return createStringError(inconvertibleErrorCode(),
                             "bad machine description: " + why);
  };
  const json::Object *o = v.getAsObject();
  if (!o)
    return bad("not an object");
  ArrayConfig c;
  auto getInt = [&](StringRef key, int64_t &out) -> bool {
    auto x = o->getInteger(key);
    if (x)
      out = *x;
    return bool(x);
  };
  auto name = o->getString("name");
  auto df = o->getString("dataflow");
  auto in = o->getString("in_type");
  auto bw = o->getNumber("dram_bytes_per_cycle");
  auto clock = o->getNumber("clock_mhz");
  auto overlap = o->getBoolean("overlap_preload");
  int64_t dataflows = 0;
  if (!name || !df || !in || !bw || !clock || !overlap ||
      !getInt("rows", c.rows) || !getInt("cols", c.cols) ||
      !getInt("dataflows", dataflows) || !getInt("spad_bytes", c.spadBytes) ||
      !getInt("acc_bytes", c.accBytes) || !getInt("spad_banks", c.spadBanks) ||
      !getInt("acc_banks", c.accBanks) ||
      !getInt("dram_latency", c.dramLatency) ||
      !getInt("load_queue", c.loadQueueDepth) ||
      !getInt("ex_queue", c.exQueueDepth) ||
      !getInt("store_queue", c.storeQueueDepth))
    return bad("a field is missing or has the wrong type");
  c.name = name->str();
  if (!parseDataflow(*df, c.dataflow) || !parseElemType(*in, c.inType))
    return bad("unknown dataflow or element type");
  c.dataflows = unsigned(dataflows);
  c.dramBytesPerCycle = *bw;
  c.clockMHz = *clock;
  c.overlapPreload = *overlap;
  if (Error e = c.validate())
    return std::move(e);
  return c;
}

Expected<ArrayConfig> presetConfig(StringRef name) {
  ArrayConfig c;
  c.name = name.str();
  if (name == "gemmini-16") {
    // Gemmini's default: 16x16 int8 mesh, OS and WS, 256 KiB scratchpad in
    // 4 banks, 64 KiB accumulator in 2 banks, a 128-bit DMA bus, and
    // double-buffered PE weight registers.
    c.rows = c.cols = 16;
    c.dataflows =
        (1u << unsigned(Dataflow::OS)) | (1u << unsigned(Dataflow::WS));
    c.dataflow = Dataflow::WS;
    c.spadBytes = 256 * 1024;
    c.accBytes = 64 * 1024;
    c.spadBanks = 4;
    c.accBanks = 2;
    c.dramBytesPerCycle = 16;
    c.dramLatency = 64;
    c.overlapPreload = true;
    c.clockMHz = 1000;
  } else if (name == "gemmini-16-f32") {
    // Gemmini's floating-point configuration: fp32 inputs and accumulators
    // (4x the bytes per element of the int8 one, the same SRAM sizes).
    Expected<ArrayConfig> base = presetConfig("gemmini-16");
    if (!base)
      return base.takeError();
    c = *base;
    c.name = name.str();
    c.inType = ElemType::F32;
  } else if (name == "tpu-v1") {
    // Jouppi et al., ISCA 2017: 256x256 int8 weight-stationary MXU, 24 MiB
    // unified buffer, 4 MiB of accumulators, 34 GB/s DDR3 at 700 MHz, a
    // weight FIFO that loads the next tile while the current one computes.
    c.rows = c.cols = 256;
    c.dataflows = 1u << unsigned(Dataflow::WS);
    c.dataflow = Dataflow::WS;
    c.spadBytes = 24 * 1024 * 1024;
    c.accBytes = 4 * 1024 * 1024;
    c.spadBanks = 8;
    c.accBanks = 4;
    c.dramBytesPerCycle = 34e9 / 700e6;
    c.dramLatency = 100;
    c.overlapPreload = true;
    c.clockMHz = 700;
  } else if (name == "scale-32") {
    // SCALE-Sim's example array: 32x32, 64 KiB per SRAM, 10 words/cycle.
    ScaleSimConfig s;
    s.runName = "scale-32";
    s.rows = s.cols = 32;
    s.ifmapKB = s.filterKB = s.ofmapKB = 64;
    s.dataflow = Dataflow::WS;
    s.bandwidth = 10;
    s.userBandwidth = true;
    c = machineForScaleSim(s);
    c.name = "scale-32";
  } else {
    return createStringError(inconvertibleErrorCode(),
                             "unknown systolic chip '" + name + "' (known: " +
                                 join(presetNames(), ", ") + ")");
  }
  return c;
}

ArrayConfig machineForScaleSim(const ScaleSimConfig &s) {
  ArrayConfig c;
  c.name = s.runName.empty() ? "scale-sim" : s.runName;
  c.rows = s.rows;
  c.cols = s.cols;
  c.dataflow = s.dataflow;
  c.dataflows = 0b111;
  c.inType = ElemType::I8; // SCALE-Sim's word is one byte
  c.spadBytes = (s.ifmapKB + s.filterKB) * 1024;
  // The ofmap SRAM holds words; our accumulator's words are 4 bytes wide.
  c.accBytes = s.ofmapKB * 1024 * 4;
  c.dramBytesPerCycle = s.userBandwidth ? s.bandwidth : 0;
  c.dramLatency = 0;
  c.overlapPreload = false;
  c.clockMHz = 1000;
  return c;
}

namespace {
/// A configparser-like INI reader: sections, `key = value` or
/// `key : value`, case-insensitive keys, '#' and ';' comments.
using IniFile = StringMap<StringMap<std::string>>;

Expected<IniFile> readIni(StringRef path) {
  auto buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(),
                             "cannot read config '" + path +
                                 "': " + buf.getError().message());
  IniFile ini;
  std::string section;
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (auto [i, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.trim();
    if (line.empty() || line.starts_with("#") || line.starts_with(";"))
      continue;
    if (line.starts_with("[")) {
      if (!line.ends_with("]"))
        return createStringError(
            inconvertibleErrorCode(),
            formatv("{0}:{1}: malformed section header", path, i + 1));
      section = line.drop_front().drop_back().trim().lower();
      ini[section];
      continue;
    }
    size_t eq = line.find_first_of(":=");
    if (eq == StringRef::npos || section.empty())
      return createStringError(
          inconvertibleErrorCode(),
          formatv("{0}:{1}: expected 'key: value' inside a section", path,
                  i + 1));
    ini[section][line.take_front(eq).trim().lower()] =
        line.drop_front(eq + 1).trim().str();
  }
  return ini;
}
} // namespace

Expected<ScaleSimConfig> parseScaleSimConfig(StringRef path) {
  auto ini = readIni(path);
  if (!ini)
    return ini.takeError();
  auto missing = [&](StringRef sec, StringRef key) {
    return createStringError(inconvertibleErrorCode(), "config '" + path +
                                                           "': missing [" +
                                                           sec + "] " + key);
  };
  auto get = [&](StringRef sec, StringRef key) -> const std::string * {
    auto s = ini->find(sec);
    if (s == ini->end())
      return nullptr;
    auto k = s->second.find(key.lower());
    return k == s->second.end() ? nullptr : &k->second;
  };
  auto getInt = [&](StringRef sec, StringRef key, int64_t lo,
                    int64_t &out) -> Error {
    const std::string *v = get(sec, key);
    if (!v)
      return missing(sec, key);
    if (StringRef(*v).trim().getAsInteger(10, out) || out < lo)
      return createStringError(inconvertibleErrorCode(),
                               formatv("config '{0}': [{1}] {2} = '{3}' is "
                                       "not an integer >= {4}",
                                       path, sec, key, *v, lo));
    return Error::success();
  };

  ScaleSimConfig c;
  if (const std::string *rn = get("general", "run_name"))
    c.runName = StringRef(*rn).trim("\" ").str();
  const char *arch = "architecture_presets";
  if (Error e = getInt(arch, "ArrayHeight", 1, c.rows))
    return std::move(e);
  if (Error e = getInt(arch, "ArrayWidth", 1, c.cols))
    return std::move(e);
  if (c.rows > 4096 || c.cols > 4096)
    return createStringError(inconvertibleErrorCode(),
                             formatv("config '{0}': array {1}x{2} is larger "
                                     "than 4096x4096",
                                     path, c.rows, c.cols));
  if (Error e = getInt(arch, "IfmapSramSzkB", 1, c.ifmapKB))
    return std::move(e);
  if (Error e = getInt(arch, "FilterSramSzkB", 1, c.filterKB))
    return std::move(e);
  if (Error e = getInt(arch, "OfmapSramSzkB", 1, c.ofmapKB))
    return std::move(e);
  const std::string *df = get(arch, "Dataflow");
  if (!df)
    return missing(arch, "Dataflow");
  if (!parseDataflow(*df, c.dataflow))
    return createStringError(inconvertibleErrorCode(),
                             "config '" + path + "': Dataflow '" + *df +
                                 "' is not os, ws or is");
  std::string mode = "CALC";
  if (const std::string *m = get("run_presets", "InterfaceBandwidth"))
    mode = StringRef(*m).trim().upper();
  if (mode == "USER") {
    const std::string *bw = get(arch, "Bandwidth");
    if (!bw)
      return missing(arch, "Bandwidth (InterfaceBandwidth is USER)");
    // SCALE-Sim reads a comma-separated list and uses the first value.
    StringRef first = StringRef(*bw).split(',').first.trim();
    int64_t words = 0;
    if (first.getAsInteger(10, words) || words < 1)
      return createStringError(inconvertibleErrorCode(),
                               "config '" + path + "': Bandwidth '" + *bw +
                                   "' is not a positive integer");
    c.userBandwidth = true;
    c.bandwidth = double(words);
  } else if (mode != "CALC") {
    return createStringError(inconvertibleErrorCode(),
                             "config '" + path + "': InterfaceBandwidth '" +
                                 mode + "' is not USER or CALC");
  }
  return c;
}

} // namespace ign::systolic
