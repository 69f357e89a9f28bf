//===- KernelReport.h - kernels as a table or JSON (internal) ---*- C++ -*-===//

#ifndef IGN_LIB_DRIVER_KERNELREPORT_H
#define IGN_LIB_DRIVER_KERNELREPORT_H

#include "ign/Transforms/KernelTasks.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace ign {

/// The kernels as JSON objects with the keys of a bundle manifest's kernel
/// entries (name, task, launches, ops, op_shapes, flops, bytes_read,
/// bytes_written) and intensity (FLOPs per byte read or written).
nlohmann::json kernelsJson(const std::vector<KernelSummary> &kernels);

/// A table of kernels given as JSON (kernelsJson's keys; missing keys, as
/// in bundles from before these fields, read as 0 or empty): per kernel its
/// task id, launches, FLOPs, bytes read and written and arithmetic
/// intensity per launch, its ops and their shapes; then the totals over
/// all launches.
std::string kernelTable(const nlohmann::json &kernels);

} // namespace ign

#endif // IGN_LIB_DRIVER_KERNELREPORT_H
