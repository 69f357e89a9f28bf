//===- Config.cpp - Machine descriptions, presets, SCALE-Sim configs ------===//

#include "Config.h"
#include "JsonFields.h"
#include "Text.h"

#include <charconv>
#include <map>

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

bool parseDataflow(std::string_view s, Dataflow &df) {
  std::string l = toLower(trim(s));
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

bool parseElemType(std::string_view s, ElemType &t) {
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

Status ArrayConfig::validate() const {
  auto bad = [&](const std::string &what) {
    return fail("machine '" + name + "': " + what);
  };
  if (rows < 1 || cols < 1 || rows > 4096 || cols > 4096)
    return bad(strFormat("array %lldx%lld is out of range (1..4096)",
                         (long long)rows, (long long)cols));
  if (!dataflows || (dataflows & ~0b111u))
    return bad("no valid dataflow");
  if (!supports(dataflow))
    return bad(std::string("default dataflow ") + dataflowName(dataflow) +
               " is not supported");
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
  return Status();
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
  std::string dram = dramBytesPerCycle == 0 ? std::string("unlimited")
                                            : shortNumber(dramBytesPerCycle);
  return strFormat("%s: %lldx%lld %s, dataflows %s, scratchpad %lld KiB, "
                   "accumulator %lld KiB, DRAM %s B/cycle, %s MHz",
                   name.c_str(), (long long)rows, (long long)cols,
                   elemTypeName(inType), dfs.c_str(),
                   (long long)(spadBytes / 1024), (long long)(accBytes / 1024),
                   dram.c_str(), shortNumber(clockMHz).c_str());
}

std::vector<std::string> presetNames() {
  return {"gemmini-16", "gemmini-16-f32", "tpu-v1", "scale-32"};
}

nlohmann::json toJSON(const ArrayConfig &c) {
  return nlohmann::json{{"name", c.name},
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

Result<ArrayConfig> configFromJSON(const nlohmann::json &v) {
  using namespace jsonfields;
  auto bad = [](const std::string &why) {
    return fail("bad machine description: " + why);
  };
  if (!v.is_object())
    return bad("not an object");
  ArrayConfig c;
  auto getInt = [&](const char *key, int64_t &out) -> bool {
    auto x = asInt(member(&v, key));
    if (x)
      out = *x;
    return bool(x);
  };
  const std::string *name = asString(member(&v, "name"));
  const std::string *df = asString(member(&v, "dataflow"));
  const std::string *in = asString(member(&v, "in_type"));
  auto bw = asNumber(member(&v, "dram_bytes_per_cycle"));
  auto clock = asNumber(member(&v, "clock_mhz"));
  auto overlap = asBool(member(&v, "overlap_preload"));
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
  c.name = *name;
  if (!parseDataflow(*df, c.dataflow) || !parseElemType(*in, c.inType))
    return bad("unknown dataflow or element type");
  c.dataflows = unsigned(dataflows);
  c.dramBytesPerCycle = *bw;
  c.clockMHz = *clock;
  c.overlapPreload = *overlap;
  if (Status s = c.validate(); !s.ok())
    return s;
  return c;
}

Result<ArrayConfig> presetConfig(const std::string &name) {
  ArrayConfig c;
  c.name = name;
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
    Result<ArrayConfig> base = presetConfig("gemmini-16");
    if (!base)
      return base.status();
    c = *base;
    c.name = name;
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
    std::string known;
    for (const std::string &n : presetNames())
      known += (known.empty() ? "" : ", ") + n;
    return fail("unknown systolic chip '" + name + "' (known: " + known + ")");
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
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

Result<IniFile> readIni(const std::string &path) {
  std::string text, error;
  if (!readFile(path, text, error))
    return fail("cannot read config '" + path + "': " + error);
  IniFile ini;
  std::string section;
  std::vector<std::string_view> lines = split(text, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = trim(lines[i]);
    if (line.empty() || line[0] == '#' || line[0] == ';')
      continue;
    if (line[0] == '[') {
      if (line.back() != ']')
        return fail(
            strFormat("%s:%zu: malformed section header", path.c_str(), i + 1));
      section = toLower(trim(line.substr(1, line.size() - 2)));
      ini[section];
      continue;
    }
    size_t eq = line.find_first_of(":=");
    if (eq == std::string_view::npos || section.empty())
      return fail(strFormat("%s:%zu: expected 'key: value' inside a section",
                            path.c_str(), i + 1));
    ini[section][toLower(trim(line.substr(0, eq)))] =
        std::string(trim(line.substr(eq + 1)));
  }
  return ini;
}
} // namespace

Result<ScaleSimConfig> parseScaleSimConfig(const std::string &path) {
  auto ini = readIni(path);
  if (!ini)
    return ini.status();
  auto missing = [&](const std::string &sec, const std::string &key) {
    return fail("config '" + path + "': missing [" + sec + "] " + key);
  };
  auto get = [&](const std::string &sec,
                 const std::string &key) -> const std::string * {
    auto s = ini->find(sec);
    if (s == ini->end())
      return nullptr;
    auto k = s->second.find(toLower(key));
    return k == s->second.end() ? nullptr : &k->second;
  };
  auto getInt = [&](const std::string &sec, const std::string &key, int64_t lo,
                    int64_t &out) -> Status {
    const std::string *v = get(sec, key);
    if (!v)
      return missing(sec, key);
    if (!parseInt(trim(*v), out) || out < lo)
      return fail(strFormat("config '%s': [%s] %s = '%s' is not an integer "
                            ">= %lld",
                            path.c_str(), sec.c_str(), key.c_str(), v->c_str(),
                            (long long)lo));
    return Status();
  };

  ScaleSimConfig c;
  if (const std::string *rn = get("general", "run_name"))
    c.runName = std::string(trim(*rn, "\" "));
  const char *arch = "architecture_presets";
  for (auto [key, field] :
       {std::pair<const char *, int64_t *>{"ArrayHeight", &c.rows},
        {"ArrayWidth", &c.cols}})
    if (Status s = getInt(arch, key, 1, *field); !s.ok())
      return s;
  if (c.rows > 4096 || c.cols > 4096)
    return fail(strFormat("config '%s': array %lldx%lld is larger than "
                          "4096x4096",
                          path.c_str(), (long long)c.rows, (long long)c.cols));
  for (auto [key, field] :
       {std::pair<const char *, int64_t *>{"IfmapSramSzkB", &c.ifmapKB},
        {"FilterSramSzkB", &c.filterKB},
        {"OfmapSramSzkB", &c.ofmapKB}})
    if (Status s = getInt(arch, key, 1, *field); !s.ok())
      return s;
  const std::string *df = get(arch, "Dataflow");
  if (!df)
    return missing(arch, "Dataflow");
  if (!parseDataflow(*df, c.dataflow))
    return fail("config '" + path + "': Dataflow '" + *df +
                "' is not os, ws or is");
  std::string mode = "CALC";
  if (const std::string *m = get("run_presets", "InterfaceBandwidth"))
    mode = toUpper(trim(*m));
  if (mode == "USER") {
    const std::string *bw = get(arch, "Bandwidth");
    if (!bw)
      return missing(arch, "Bandwidth (InterfaceBandwidth is USER)");
    // SCALE-Sim reads a comma-separated list and uses the first value.
    std::string_view first = trim(split(*bw, ',').front());
    int64_t words = 0;
    if (!parseInt(first, words) || words < 1)
      return fail("config '" + path + "': Bandwidth '" + *bw +
                  "' is not a positive integer");
    c.userBandwidth = true;
    c.bandwidth = double(words);
  } else if (mode != "CALC") {
    return fail("config '" + path + "': InterfaceBandwidth '" + mode +
                "' is not USER or CALC");
  }
  return c;
}

} // namespace ign::systolic
