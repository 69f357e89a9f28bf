//===- ScaleSim.cpp - SCALE-Sim-compatible layer simulation ---------------===//

#include "ScaleSim.h"
#include "Text.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace ign::systolic {

static int64_t scaleSimOut(int64_t in, int64_t filter, int64_t stride) {
  // ceil((in - filter + stride) / stride) for a positive numerator.
  return (in - filter + stride + stride - 1) / stride;
}

int64_t TopologyLayer::ofmapH() const {
  return scaleSimOut(ifmapH, filterH, strideH);
}
int64_t TopologyLayer::ofmapW() const {
  return scaleSimOut(ifmapW, filterW, strideW);
}
GemmShape TopologyLayer::gemm() const {
  return {ofmapH() * ofmapW(), filterH * filterW * channels, filters};
}
int64_t TopologyLayer::macs() const {
  GemmShape g = gemm();
  return g.M * g.K * g.N;
}

namespace {

/// Depthwise layers expand to one layer per channel: a topology may expand
/// to at most this many layers (a channel count up to 2^24 per line made
/// the reader build millions of layers: found by fuzz-scalesim).
constexpr size_t kMaxTopologyLayers = size_t(1) << 16;

/// One topology line's layer (\p lineNo counts from 1); SCALE-Sim's
/// depthwise layers come back split per channel.
Status parseLayer(std::string_view line, bool gemm, const std::string &path,
                  size_t lineNo, std::vector<TopologyLayer> &layers) {
  std::vector<std::string_view> fields = split(line, ',');
  for (std::string_view &f : fields)
    f = trim(f);
  while (!fields.empty() && fields.back().empty())
    fields.pop_back();
  auto bad = [&](const std::string &why) {
    return fail(strFormat("%s:%zu: ", path.c_str(), lineNo) + why);
  };
  size_t need = gemm ? 4 : 8;
  if (fields.size() < need)
    return bad(strFormat("expected %zu fields (%s), got %zu", need,
                         gemm ? "name, M, N, K"
                              : "name, ifmap h, ifmap w, filter h, filter w, "
                                "channels, filters, stride",
                         fields.size()));
  int64_t v[7] = {0};
  for (size_t i = 1; i < need; ++i)
    if (!parseInt(fields[i], v[i - 1]) || v[i - 1] < 1 ||
        v[i - 1] > (int64_t(1) << 24))
      return bad(strFormat("field %zu '%s' is not an integer in 1..2^24", i + 1,
                           std::string(fields[i]).c_str()));
  TopologyLayer l;
  l.name = std::string(fields[0]);
  if (l.name.empty())
    return bad("empty layer name");
  if (gemm) {
    // SCALE-Sim's GEMM form as a 1xK "convolution" over an M x K ifmap.
    l.ifmapH = v[0];
    l.ifmapW = v[2];
    l.filterH = 1;
    l.filterW = v[2];
    l.channels = 1;
    l.filters = v[1];
    l.gemmForm = true;
  } else {
    l.ifmapH = v[0];
    l.ifmapW = v[1];
    l.filterH = v[2];
    l.filterW = v[3];
    l.channels = v[4];
    l.filters = v[5];
    l.strideH = l.strideW = v[6];
    if (l.filterH > l.ifmapH || l.filterW > l.ifmapW)
      return bad(strFormat("filter %lldx%lld is larger than the ifmap "
                           "%lldx%lld",
                           (long long)l.filterH, (long long)l.filterW,
                           (long long)l.ifmapH, (long long)l.ifmapW));
  }
  GemmShape g = l.gemm();
  if (double(g.M) * double(g.K) * double(g.N) > 1e13)
    return bad("layer is too large to simulate (more than 1e13 MACs)");
  if (!gemm && l.name.find("DP") != std::string::npos) {
    // Depthwise: SCALE-Sim runs one single-channel layer per channel.
    int64_t channels = l.channels;
    if (size_t(channels) > kMaxTopologyLayers - layers.size())
      return bad(strFormat("depthwise layer '%s' has %lld channels, one layer "
                           "each: the topology would pass %zu layers",
                           l.name.c_str(), (long long)channels,
                           kMaxTopologyLayers));
    for (int64_t c = 0; c < channels; ++c) {
      TopologyLayer d = l;
      d.name = l.name + "Channel_" + std::to_string(c);
      d.channels = 1;
      layers.push_back(d);
    }
  } else {
    if (layers.size() >= kMaxTopologyLayers)
      return bad(
          strFormat("the topology passes %zu layers", kMaxTopologyLayers));
    layers.push_back(l);
  }
  return Status();
}

} // namespace

Result<std::vector<TopologyLayer>> parseTopology(const std::string &path,
                                                 bool gemm) {
  std::string text, error;
  if (!readFile(path, text, error))
    return fail("cannot read topology '" + path + "': " + error);
  std::vector<TopologyLayer> layers;
  std::vector<std::string_view> lines = split(text, '\n');
  bool header = true;
  for (size_t lineNo = 0; lineNo < lines.size(); ++lineNo) {
    std::string_view line = trim(lines[lineNo]);
    if (line.empty())
      continue;
    if (header) { // the first non-empty line names the columns
      header = false;
      continue;
    }
    if (Status s = parseLayer(line, gemm, path, lineNo + 1, layers); !s.ok())
      return s;
  }
  if (layers.empty())
    return fail("topology '" + path + "' has no layers");
  return layers;
}

GemmBuffers layerBuffers(const ArrayConfig &machine,
                         const TopologyLayer &layer) {
  GemmShape shape = layer.gemm();
  ConvGeometry g;
  g.C = layer.channels;
  g.H = layer.ifmapH;
  g.W = layer.ifmapW;
  g.kh = layer.filterH;
  g.kw = layer.filterW;
  g.sh = layer.strideH;
  g.sw = layer.strideW;
  g.OH = layer.ofmapH();
  g.OW = layer.ofmapW();
  if (std::optional<Instr::Im2col> fits = g.instr(); fits && !layer.gemmForm)
    return convGemmBuffers(machine, shape, *fits, machine.inType);
  return denseGemmBuffers(machine, shape, machine.inType);
}

Result<LayerResult> simulateLayer(const ArrayConfig &machine,
                                  const TopologyLayer &layer,
                                  const GemmMapping &mapping) {
  GemmShape shape = layer.gemm();
  GemmBuffers buffers = layerBuffers(machine, layer);
  auto program = buildGemmProgram(machine, shape, mapping, buffers);
  if (!program)
    return fail("layer '" + layer.name + "': " + program.message());
  Machine m(machine);
  auto report = m.simulate(*program, SimOptions{/*functional=*/false});
  if (!report)
    return fail("layer '" + layer.name + "': " + report.message());
  LayerResult r;
  r.layer = layer;
  r.report = *report;
  r.folds = scaleSimFoldStats(machine, shape, mapping.dataflow);
  const Report &rep = r.report;
  // SCALE-Sim numbers cycles from 0: its total is the index of the cycle
  // in which the last output is written.
  r.totalCycles = std::max<int64_t>(rep.computeSpan - 1, 1);
  r.totalCyclesInclPrefetch = rep.totalCycles;
  r.stallCycles = rep.stallCycles;
  double pes = double(machine.rows * machine.cols);
  r.overallUtil = double(layer.macs()) * 100.0 / (double(r.totalCycles) * pes);
  r.mappingEfficiency = rep.mappingEfficiency * 100.0;
  r.computeUtil = r.folds.computeUtil * 100.0;
  auto get = [](const std::map<std::string, int64_t> &m, const char *k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : double(it->second);
  };
  double cyc = double(r.totalCycles);
  r.ifmapSramBw = get(rep.spadReadsByOperand, "A") / cyc;
  r.filterSramBw = get(rep.spadReadsByOperand, "B") / cyc;
  r.ofmapSramBw = double(rep.accWrites) / cyc;
  double all = double(std::max<int64_t>(rep.totalCycles, 1));
  r.ifmapDramBw = get(rep.dramReadBytesByOperand, "A") / all;
  r.filterDramBw = get(rep.dramReadBytesByOperand, "B") / all;
  r.ofmapDramBw = double(rep.dramWriteBytes) / all;
  return r;
}

/// mkdir -p: 0, or the errno of the first directory that could not be
/// made. An existing path is fine (a file then fails when the reports are
/// opened); new directories get rwx for the owner and group, less the umask.
static int makeDirectories(const std::string &path) {
  auto make = [](const std::string &p) {
    return ::mkdir(p.c_str(), 0770) == 0 || errno == EEXIST ? 0 : errno;
  };
  int err = make(path);
  if (err != ENOENT)
    return err;
  std::string parent = std::filesystem::path(path).parent_path().string();
  if (parent.empty() || parent == path)
    return err;
  if (int e = makeDirectories(parent))
    return e;
  return make(path);
}

/// Python's repr of a float: the shortest string that reads back.
static std::string pyFloat(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s;
}

Status writeScaleSimReports(const std::string &dir,
                            const std::vector<LayerResult> &results) {
  namespace fs = std::filesystem;
  if (int err = makeDirectories(dir))
    return fail("cannot create '" + dir + "': " + std::strerror(err));
  std::ostringstream compute, bandwidth;
  compute << "LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall "
             "Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n";
  bandwidth << "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP "
               "SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP "
               "DRAM BW,\n";
  nlohmann::json layers = nlohmann::json::array();
  for (size_t id = 0; id < results.size(); ++id) {
    const LayerResult &r = results[id];
    compute << id << ", " << r.totalCyclesInclPrefetch << ", " << r.totalCycles
            << ", " << r.stallCycles << ", " << pyFloat(r.overallUtil) << ", "
            << pyFloat(r.mappingEfficiency) << ", " << pyFloat(r.computeUtil)
            << ",\n";
    bandwidth << id << ", " << pyFloat(r.ifmapSramBw) << ", "
              << pyFloat(r.filterSramBw) << ", " << pyFloat(r.ofmapSramBw)
              << ", " << pyFloat(r.ifmapDramBw) << ", "
              << pyFloat(r.filterDramBw) << ", " << pyFloat(r.ofmapDramBw)
              << ",\n";
    GemmShape g = r.layer.gemm();
    layers.push_back(nlohmann::json{
        {"layer", r.layer.name},
        {"gemm", nlohmann::json{{"M", g.M}, {"K", g.K}, {"N", g.N}}},
        {"folds", r.folds.folds},
        {"report", r.report.toJSON()}});
  }
  std::string json =
      layers.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  const char *names[3] = {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv",
                          "REPORT.json"};
  std::ofstream files[3];
  for (int f = 0; f < 3; ++f) {
    std::string path = (fs::path(dir) / names[f]).string();
    files[f].open(path, std::ios::binary | std::ios::trunc);
    if (!files[f])
      return fail("cannot write '" + path + "': " + std::strerror(errno));
  }
  files[0] << compute.str();
  files[1] << bandwidth.str();
  files[2] << json;
  for (std::ofstream &os : files) {
    os.close();
    if (!os)
      return fail("writing the reports to '" + dir +
                  "' failed: " + std::strerror(errno));
  }
  return Status();
}

} // namespace ign::systolic
