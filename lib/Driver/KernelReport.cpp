//===- KernelReport.cpp - kernels as a table or JSON ----------------------===//

#include "KernelReport.h"

#include <cstdio>

namespace ign {

nlohmann::json kernelsJson(const std::vector<KernelSummary> &kernels) {
  nlohmann::json out = nlohmann::json::array();
  for (const KernelSummary &k : kernels)
    out.push_back({{"name", k.name},
                   {"task", k.task},
                   {"launches", k.launches},
                   {"ops", k.ops},
                   {"op_shapes", k.opShapes},
                   {"flops", k.flops},
                   {"bytes_read", k.bytesRead},
                   {"bytes_written", k.bytesWritten},
                   {"intensity",
                    k.bytesRead + k.bytesWritten
                        ? double(k.flops) / double(k.bytesRead + k.bytesWritten)
                        : 0.0}});
  return out;
}

std::string kernelTable(const nlohmann::json &kernels) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %8s %10s %10s %10s %9s  %s\n", "task",
                "launches", "MFLOP", "KB read", "KB written", "FLOP/B",
                "kernel: ops");
  out += line;
  uint64_t launches = 0, flops = 0, moved = 0;
  for (const auto &k : kernels) {
    uint64_t n = k.value("launches", uint64_t(1));
    uint64_t f = k.value("flops", uint64_t(0)),
             r = k.value("bytes_read", uint64_t(0)),
             w = k.value("bytes_written", uint64_t(0));
    launches += n;
    flops += n * f;
    moved += n * (r + w);
    std::string ops;
    for (const auto &op : k.value("ops", nlohmann::json::array()))
      ops += (ops.empty() ? "" : "+") + op.get<std::string>();
    double intensity = r + w ? double(f) / double(r + w) : 0.0;
    std::snprintf(line, sizeof line, "%-16s %8llu %10.2f %10.1f %10.1f %9.2f  ",
                  k.value("task", std::string("-")).c_str(),
                  (unsigned long long)n, f / 1e6, r / 1024.0, w / 1024.0,
                  intensity);
    out += line + k.value("name", std::string("?")) + ": " + ops + "\n";
    for (const auto &shape : k.value("op_shapes", nlohmann::json::array()))
      out += "    " + shape.get<std::string>() + "\n";
  }
  std::snprintf(line, sizeof line,
                "total: %zu kernels, %llu launches, %.3f GFLOP, %.2f MB "
                "moved between kernels and memory\n",
                kernels.size(), (unsigned long long)launches, flops / 1e9,
                moved / 1e6);
  out += line;
  return out;
}

} // namespace ign
