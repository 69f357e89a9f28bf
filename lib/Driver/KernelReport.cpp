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

namespace {

/// A non-negative count from `k[key]`, 0 when absent or not a number (the
/// runtime does not check these descriptive fields, so inspect must not
/// trust them).
uint64_t count(const nlohmann::json &k, const char *key) {
  auto it = k.find(key);
  if (it == k.end() || !it->is_number() || it->get<double>() < 0)
    return 0;
  return it->get<uint64_t>();
}

std::string text(const nlohmann::json &k, const char *key, const char *dflt) {
  auto it = k.find(key);
  return it != k.end() && it->is_string() ? it->get<std::string>() : dflt;
}

/// The strings of the array `k[key]` (other entries skipped).
std::vector<std::string> strings(const nlohmann::json &k, const char *key) {
  std::vector<std::string> out;
  auto it = k.find(key);
  if (it != k.end() && it->is_array())
    for (const auto &v : *it)
      if (v.is_string())
        out.push_back(v.get<std::string>());
  return out;
}

} // namespace

std::string kernelTable(const nlohmann::json &kernels) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-16s %8s %10s %10s %10s %9s  %s\n", "task",
                "launches", "MFLOP", "KB read", "KB written", "FLOP/B",
                "kernel: ops");
  out += line;
  uint64_t launches = 0, flops = 0, moved = 0;
  for (const auto &k : kernels) {
    if (!k.is_object())
      continue;
    uint64_t n = k.contains("launches") ? count(k, "launches") : 1;
    uint64_t f = count(k, "flops"), r = count(k, "bytes_read"),
             w = count(k, "bytes_written");
    launches += n;
    flops += n * f;
    moved += n * (r + w);
    std::string ops;
    for (const std::string &op : strings(k, "ops"))
      ops += (ops.empty() ? "" : "+") + op;
    double intensity = r + w ? double(f) / double(r + w) : 0.0;
    std::snprintf(line, sizeof line, "%-16s %8llu %10.2f %10.1f %10.1f %9.2f  ",
                  text(k, "task", "-").c_str(), (unsigned long long)n, f / 1e6,
                  r / 1024.0, w / 1024.0, intensity);
    out += line + text(k, "name", "?") + ": " + ops + "\n";
    for (const std::string &shape : strings(k, "op_shapes"))
      out += "    " + shape + "\n";
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
