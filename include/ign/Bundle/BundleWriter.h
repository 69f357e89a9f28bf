//===- BundleWriter.h - assembles and writes a kernel bundle ----*- C++ -*-===//

#ifndef IGN_BUNDLE_BUNDLEWRITER_H
#define IGN_BUNDLE_BUNDLEWRITER_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ign::bundle {

/// A tensor crossing the bundle's boundary (input, output or weight).
struct TensorSpec {
  std::string name;
  std::string dtype; // "f32", "i64", "bool", ...
  std::vector<int64_t> shape;
  /// An output only: the output whose actual shape this i64 [rank] tensor
  /// holds (that output's `shape` is then an upper bound;
  /// docs/bundle-format.md).
  std::string shapeOf;
};

struct KernelSpec {
  std::string name;
  std::string symbol;           // `void symbol(void **args, int64_t wg_begin,
                                //  int64_t wg_end)`: see docs/bundle-format.md
  std::string scheduleJson;     // the kernel's schedule, as JSON
  std::vector<std::string> ops; // the ign ops it computes
  int64_t workgroups = 1;       // independent pieces the runtime may spread
                                // across threads
  int64_t steps = 1;  // the workgroups run in this many steps, one after
                      // the other (workgroups / steps per step)
  size_t results = 1; // its last `results` arguments are outputs
  std::string task;   // structural hash: identical kernels share it
  std::vector<std::string> opShapes; // per op: name, operand and result types
  uint64_t flops = 0;                // arithmetic operations per launch
  uint64_t bytesRead = 0, bytesWritten = 0; // argument and result bytes
  /// A device kernel (runs on an accelerator, not the host artifact): the
  /// device's name, its descriptor (a JSON object, for the driver) and its
  /// program bytes (stored in the bundle's device section).
  std::string device, deviceJson, deviceBlob;
};

/// Where a launch argument lives, and the view (dtype, shape) the kernel
/// sees of it: a reshape is the same buffer under another shape.
struct LaunchArg {
  std::string kind;    // "input", "weight", "output" or "arena"
  uint64_t index = 0;  // input/weight/output: the table index
  uint64_t offset = 0; // arena: the byte offset
  std::string dtype;
  std::vector<int64_t> shape;
};

/// One step of the launch list (docs/bundle-format.md): a kernel launch; a
/// copy of args[0] into args[1] (with `at`, into or from the slice of index
/// args[2]); a branch, which goes on at launch `to` when args[0]'s element
/// is zero (an If's else branch); a jump to launch `to`; a loop test, which
/// goes on at `to` (past the loop) when the iteration args[0] reached the
/// trip count args[2] or `maxTrips`, or the condition args[1] is zero; and
/// the loop's next, which counts the iteration and goes back to its test;
/// a fail, which ends the run with `message` (an If branch that does not
/// compile for the model's shapes).
struct LaunchSpec {
  enum class Kind { Kernel, Copy, Branch, Jump, Loop, Next, Fail };
  Kind kind = Kind::Kernel;
  size_t kernel = 0;
  std::vector<LaunchArg> args;
  size_t to = 0;         // Branch, Jump, Loop, Next
  int64_t maxTrips = -1; // Loop: a static bound (-1: none)
  std::string at;        // Copy: "", "to" or "from"
  std::string message;   // Fail; Loop: set when it must run all maxTrips
};

/// The manifest's name of a launch kind ("kernel", "copy", ...).
const char *launchKindName(LaunchSpec::Kind kind);

/// Everything a bundle holds.
struct BundleContents;
/// The format version `c` is written as: 4 where a kernel runs in steps
/// (a reader of 3 would run them all at once), else 3 where an output has
/// a run-time size (a version-2 reader would misread it), else 2.
uint32_t formatVersionOf(const BundleContents &c);

struct BundleContents {
  std::string targetName, triple, cpu;
  std::string chip; // an accelerator target's machine (e.g. gemmini-16)
  std::vector<std::string> features; // "+avx2", ...
  std::string modelSource, producer;
  std::string modelSha256; // of the model file, hex
  /// The options the bundle was compiled with, as ignc's command-line
  /// arguments after the model (`ignc report` recompiles from them).
  std::vector<std::string> compileArgs;
  int64_t opset = 0;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::pair<TensorSpec, std::string_view>> weights;
  /// The bytes of weights the compiler made (a weight's view may point into
  /// them; shared, so that copies of the contents keep them alive).
  std::vector<std::shared_ptr<const std::string>> weightStorage;
  std::vector<KernelSpec> kernels;
  std::vector<LaunchSpec> launches;
  uint64_t arenaBytes = 0; // intermediates, packed by liveness
  std::string artifact;    // target code (host: ELF shared object)
};

/// Writes the bundle to `path` through a temporary file renamed into place,
/// so a failed write never leaves a partial bundle. Returns an error
/// message, or "" on success.
std::string writeBundle(const std::string &path,
                        const BundleContents &contents);

} // namespace ign::bundle

#endif // IGN_BUNDLE_BUNDLEWRITER_H
