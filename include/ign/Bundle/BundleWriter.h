//===- BundleWriter.h - assembles and writes a kernel bundle ----*- C++ -*-===//

#ifndef IGN_BUNDLE_BUNDLEWRITER_H
#define IGN_BUNDLE_BUNDLEWRITER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ign::bundle {

/// A tensor crossing the bundle's boundary (input, output or weight).
struct TensorSpec {
  std::string name;
  std::string dtype; // "f32", "i64", "bool", ...
  std::vector<int64_t> shape;
};

struct KernelSpec {
  std::string name;
  std::string symbol;       // entry taking an array of memref descriptors
  std::string scheduleJson; // the kernel's schedule, as JSON
};

struct LaunchArg {
  std::string kind; // "input", "weight" or "output"
  size_t index;
};

struct LaunchSpec {
  size_t kernel;
  std::vector<LaunchArg> args;
};

/// Everything a bundle holds.
struct BundleContents {
  std::string targetName, triple, cpu;
  std::vector<std::string> features; // "+avx2", ...
  std::string modelSource, producer;
  int64_t opset = 0;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::pair<TensorSpec, std::string_view>> weights;
  std::vector<KernelSpec> kernels;
  std::vector<LaunchSpec> launches;
  std::string artifact; // target code (host: ELF shared object)
};

/// The manifest of `contents` as JSON text (weight offsets included).
std::string buildManifest(const BundleContents &contents);

/// Writes the bundle to `path` through a temporary file renamed into place,
/// so a failed write never leaves a partial bundle. Returns an error
/// message, or "" on success.
std::string writeBundle(const std::string &path,
                        const BundleContents &contents);

} // namespace ign::bundle

#endif // IGN_BUNDLE_BUNDLEWRITER_H
