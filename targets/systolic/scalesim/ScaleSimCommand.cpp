//===- ScaleSimCommand.cpp - ignc sim: topologies on the simulator --------===//

#include "ScaleSimCommand.h"
#include "ScaleSim.h"
#include "Text.h"
#include "ign/Driver/ExitCodes.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

namespace ign::systolic {

int runSimCommand(const SimCommand &cmd) {
  auto fail = [](const std::string &message, int code = kExitRuntime) {
    std::cerr << "ignc sim: error: " << message << "\n";
    return code;
  };
  if (cmd.config.empty() == cmd.chip.empty())
    return fail("give exactly one of --config FILE.cfg and --chip NAME",
                kExitUsage);
  ArrayConfig machine;
  if (!cmd.config.empty()) {
    auto cfg = parseScaleSimConfig(cmd.config);
    if (!cfg)
      return fail(cfg.message(), kExitImport);
    machine = machineForScaleSim(*cfg);
  } else {
    auto preset = presetConfig(cmd.chip);
    if (!preset)
      return fail(preset.message(), kExitUsage);
    machine = *preset;
  }
  if (!cmd.dataflow.empty()) {
    Dataflow df;
    if (!parseDataflow(cmd.dataflow, df))
      return fail("--dataflow '" + cmd.dataflow + "' is not os, ws or is",
                  kExitUsage);
    if (!machine.supports(df))
      return fail("machine '" + machine.name + "' cannot run dataflow " +
                      cmd.dataflow,
                  kExitUsage);
    machine.dataflow = df;
  }
  if (Status s = machine.validate(); !s.ok())
    return fail(s.message(), kExitImport);
  if (cmd.mapping != "scalesim" && cmd.mapping != "tuned")
    return fail("--mapping '" + cmd.mapping + "' is not scalesim or tuned",
                kExitUsage);
  auto layers = parseTopology(cmd.topology, cmd.gemm);
  if (!layers)
    return fail(layers.message(), kExitImport);

  std::vector<LayerResult> results;
  std::printf("%s\n", machine.describe().c_str());
  std::printf("%-24s %8s %8s %8s  %-22s %12s %7s %7s\n", "layer", "M", "K", "N",
              "mapping", "cycles", "util%", "stall");
  for (const TopologyLayer &layer : *layers) {
    GemmMapping mapping{machine.dataflow, 0, /*accumulate=*/false};
    if (cmd.mapping == "tuned") {
      GemmBuffers buffers = layerBuffers(machine, layer);
      auto tuned = tuneGemmMapping(machine, layer.gemm(), 8, &buffers);
      if (!tuned)
        return fail("layer '" + layer.name + "': " + tuned.message());
      mapping = tuned->mapping;
    }
    auto r = simulateLayer(machine, layer, mapping);
    if (!r)
      return fail(r.message());
    GemmShape g = layer.gemm();
    std::printf("%-24s %8lld %8lld %8lld  %-22s %12lld %7.2f %7lld\n",
                layer.name.c_str(), (long long)g.M, (long long)g.K,
                (long long)g.N, mapping.str().c_str(),
                (long long)r->totalCycles, r->overallUtil,
                (long long)r->stallCycles);
    results.push_back(std::move(*r));
  }
  if (Status s = writeScaleSimReports(cmd.outputDir, results); !s.ok())
    return fail(s.message(), kExitOutput);
  if (cmd.json) {
    std::string text, error;
    if (readFile(
            (std::filesystem::path(cmd.outputDir) / "REPORT.json").string(),
            text, error))
      std::cout << text;
  }
  return kExitOk;
}

} // namespace ign::systolic
