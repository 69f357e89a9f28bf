//===- ScaleSim.cpp - SCALE-Sim-compatible layer simulation ---------------===//

#include "ScaleSim.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <charconv>

using namespace llvm;

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

Expected<std::vector<TopologyLayer>> parseTopology(StringRef path, bool gemm) {
  auto buf = MemoryBuffer::getFile(path);
  if (!buf)
    return createStringError(buf.getError(),
                             "cannot read topology '" + path +
                                 "': " + buf.getError().message());
  std::vector<TopologyLayer> layers;
  SmallVector<StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n');
  bool header = true;
  for (auto [lineNo, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.trim();
    if (line.empty())
      continue;
    if (header) { // the first non-empty line names the columns
      header = false;
      continue;
    }
    SmallVector<StringRef> fields;
    line.split(fields, ',');
    for (StringRef &f : fields)
      f = f.trim();
    while (!fields.empty() && fields.back().empty())
      fields.pop_back();
    auto bad = [&, lineNo = lineNo](const Twine &why) {
      return createStringError(inconvertibleErrorCode(),
                               formatv("{0}:{1}: ", path, lineNo + 1) + why);
    };
    size_t need = gemm ? 4 : 8;
    if (fields.size() < need)
      return bad(formatv("expected {0} fields ({1}), got {2}", need,
                         gemm ? "name, M, N, K"
                              : "name, ifmap h, ifmap w, filter h, filter w, "
                                "channels, filters, stride",
                         fields.size()));
    int64_t v[7] = {0};
    for (size_t i = 1; i < need; ++i)
      if (fields[i].getAsInteger(10, v[i - 1]) || v[i - 1] < 1 ||
          v[i - 1] > (int64_t(1) << 24))
        return bad(formatv("field {0} '{1}' is not an integer in 1..2^24",
                           i + 1, fields[i]));
    TopologyLayer l;
    l.name = fields[0].str();
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
        return bad(formatv("filter {0}x{1} is larger than the ifmap {2}x{3}",
                           l.filterH, l.filterW, l.ifmapH, l.ifmapW));
    }
    GemmShape g = l.gemm();
    if (double(g.M) * double(g.K) * double(g.N) > 1e13)
      return bad("layer is too large to simulate (more than 1e13 MACs)");
    if (!gemm && l.name.find("DP") != std::string::npos) {
      // Depthwise: SCALE-Sim runs one single-channel layer per channel.
      int64_t channels = l.channels;
      for (int64_t c = 0; c < channels; ++c) {
        TopologyLayer d = l;
        d.name = l.name + "Channel_" + std::to_string(c);
        d.channels = 1;
        layers.push_back(d);
      }
    } else {
      layers.push_back(l);
    }
  }
  if (layers.empty())
    return createStringError(inconvertibleErrorCode(),
                             "topology '" + path + "' has no layers");
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

Expected<LayerResult> simulateLayer(const ArrayConfig &machine,
                                    const TopologyLayer &layer,
                                    const GemmMapping &mapping) {
  GemmShape shape = layer.gemm();
  GemmBuffers buffers = layerBuffers(machine, layer);
  auto program = buildGemmProgram(machine, shape, mapping, buffers);
  if (!program)
    return createStringError(inconvertibleErrorCode(),
                             "layer '" + layer.name +
                                 "': " + toString(program.takeError()));
  Machine m(machine);
  auto report = m.simulate(*program, SimOptions{/*functional=*/false});
  if (!report)
    return createStringError(inconvertibleErrorCode(),
                             "layer '" + layer.name +
                                 "': " + toString(report.takeError()));
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

/// Python's repr of a float: the shortest string that reads back.
static std::string pyFloat(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s;
}

Error writeScaleSimReports(StringRef dir,
                           const std::vector<LayerResult> &results) {
  if (std::error_code ec = sys::fs::create_directories(dir))
    return createStringError(ec,
                             "cannot create '" + dir + "': " + ec.message());
  auto open = [&](StringRef name,
                  std::unique_ptr<raw_fd_ostream> &os) -> Error {
    SmallString<256> p(dir);
    sys::path::append(p, name);
    std::error_code ec;
    os = std::make_unique<raw_fd_ostream>(p, ec);
    if (ec)
      return createStringError(ec, "cannot write '" + p + "': " + ec.message());
    return Error::success();
  };
  std::unique_ptr<raw_fd_ostream> compute, bandwidth, json;
  if (Error e = open("COMPUTE_REPORT.csv", compute))
    return e;
  if (Error e = open("BANDWIDTH_REPORT.csv", bandwidth))
    return e;
  if (Error e = open("REPORT.json", json))
    return e;
  *compute << "LayerID, Total Cycles (incl. prefetch), Total Cycles, Stall "
              "Cycles, Overall Util %, Mapping Efficiency %, Compute Util %,\n";
  *bandwidth << "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP "
                "SRAM BW, Avg IFMAP DRAM BW, Avg FILTER DRAM BW, Avg OFMAP "
                "DRAM BW,\n";
  json::Array layers;
  for (auto [id, r] : llvm::enumerate(results)) {
    *compute << id << ", " << r.totalCyclesInclPrefetch << ", " << r.totalCycles
             << ", " << r.stallCycles << ", " << pyFloat(r.overallUtil) << ", "
             << pyFloat(r.mappingEfficiency) << ", " << pyFloat(r.computeUtil)
             << ",\n";
    *bandwidth << id << ", " << pyFloat(r.ifmapSramBw) << ", "
               << pyFloat(r.filterSramBw) << ", " << pyFloat(r.ofmapSramBw)
               << ", " << pyFloat(r.ifmapDramBw) << ", "
               << pyFloat(r.filterDramBw) << ", " << pyFloat(r.ofmapDramBw)
               << ",\n";
    GemmShape g = r.layer.gemm();
    layers.push_back(
        json::Object{{"layer", r.layer.name},
                     {"gemm", json::Object{{"M", g.M}, {"K", g.K}, {"N", g.N}}},
                     {"folds", r.folds.folds},
                     {"report", r.report.toJSON()}});
  }
  *json << formatv("{0:2}", json::Value(std::move(layers))) << "\n";
  for (auto *os : {compute.get(), bandwidth.get(), json.get()}) {
    os->close();
    if (os->has_error()) {
      std::error_code ec = os->error();
      os->clear_error();
      return createStringError(ec, "writing the reports to '" + dir +
                                       "' failed: " + ec.message());
    }
  }
  return Error::success();
}

} // namespace ign::systolic
