//===- DeviceDescriptor.h - what every GPU driver reads the same way -*- C++
//-*-//
//
// The runtime half of the GPU layer (plain C++17, no LLVM or MLIR): the
// parts of a kernel's manifest "device" object that every GPU driver of
// libignrt (Vulkan, CUDA) reads alike, checked against the call before any
// device object is made: scratch sizes, constants as slices of the blob,
// bindings of launch arguments, group and block sizes, and the call itself.
// Each reader returns false with a message; none throws.
//
//===----------------------------------------------------------------------===//
#ifndef IGN_TARGETS_GPU_RUNTIME_DEVICEDESCRIPTOR_H
#define IGN_TARGETS_GPU_RUNTIME_DEVICEDESCRIPTOR_H

#include "ign/Runtime/ignrt.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ign::gpu::rt {

using nlohmann::json;

/// What a launch argument (a binding) holds: a kernel argument, a scratch
/// buffer or one of the kernel's constants.
struct Binding {
  enum Kind { Arg, Scratch, Const } kind = Arg;
  size_t index = 0; // into the call's arguments, scratch or constants
};

/// Bytes of the blob: a constant's, or a module image's.
struct BlobSlice {
  size_t offset = 0, bytes = 0;
};

/// `object[key]`, or null.
const json *member(const json &object, const char *key);

/// A non-negative integer no larger than `max`.
bool readCount(const json *v, uint64_t max, uint64_t &out);

/// Three integers in [1, 2^32).
bool readTriple(const json *v, uint32_t out[3]);

/// "[x, y, z]".
std::string tripleText(const uint32_t t[3]);

/// {"arg": N}, {"scratch": N} or {"const": N}, N below the call's
/// arguments, `scratch` or `constants`.
bool parseBinding(const json &b, const ignrt_device_call &call, size_t scratch,
                  size_t constants, Binding &out, std::string &error);

/// "scratch": byte sizes below 4 GiB (none when missing).
bool parseScratch(const json &o, std::vector<uint64_t> &out,
                  std::string &error);

/// "constants": slices of the blob, each within it (none when missing).
bool parseConstants(const json &o, const ignrt_device_call &call,
                    std::vector<BlobSlice> &out, std::string &error);

/// The call's own consistency: results within arguments, data for every
/// argument with bytes, a blob where it has bytes.
bool checkCall(const ignrt_device_call &call, std::string &error);

/// The descriptor as a JSON object whose "format" is `format`.
bool parseObject(const ignrt_device_call &call, const char *format, json &out,
                 std::string &error);

/// `parse` (reading the descriptor) after checkCall; a JSON type error or
/// an allocation failure inside becomes a message.
bool parseChecked(const ignrt_device_call &call, std::string &error,
                  const std::function<bool(std::string &error)> &parse);

/// Runs one call of driver `target` ("vulkan", "cuda") under `lock`:
/// `body` does the work; an exception becomes a message. 0 on success,
/// else 1 with `error` = "<target> kernel '<name>': <why>".
int runGuarded(const char *target, std::mutex &lock,
               const ignrt_device_call &call, std::string &error,
               const std::function<bool(std::string &why)> &body);

/// runGuarded for a driver that defers launches (ignrt_device_call::
/// may_defer): `launch` runs a call's launch, `settle` runs what the driver
/// holds queued. The runtime's finishing call (no kernel) runs `settle`
/// alone; a launch that fails or throws settles too, its error kept (the
/// queue may hold another session's launches, whose next launches read
/// their outputs, and stats that belong to runs still going).
int runDeferring(const char *target, std::mutex &lock,
                 const ignrt_device_call &call, std::string &error,
                 const std::function<bool(std::string &why)> &launch,
                 const std::function<bool(std::string &why)> &settle);

/// The tail of a registered ignrt_device_fn: `message` into the caller's
/// buffer when `rc` is not 0.
int reportResult(int rc, const std::string &message, char *error,
                 size_t errorSize);

/// Argument `i`'s IGNRT_RESIDENT_* flag (ignrt_device_call::resident).
unsigned char residency(const ignrt_device_call &call, size_t i);

/// Whether argument `i` is one of the call's outputs.
bool isOutput(const ignrt_device_call &call, size_t i);

/// A device copy of an intermediate is keyed by its host address and bytes.
using ResidentKey = std::pair<const void *, size_t>;
ResidentKey residentKey(const ignrt_device_call &call, size_t i);

/// The intermediates this call read for the last time, which a driver may
/// release after it (IGNRT_RESIDENT_LAST inputs, unless the call wrote a
/// new one in the same place).
std::vector<ResidentKey> lastUses(const ignrt_device_call &call);

/// A driver's device copies of the intermediates it keeps (the call's
/// `resident` flags), each `Buffer` (with a `capacity` in bytes) keyed by
/// host address and bytes; those released after their last reader wait in
/// a pool for the next producer. Not thread-safe (drivers serialize calls).
template <typename Buffer> class ResidentBuffers {
public:
  /// Argument `i`'s copy: an output's is taken from the pool or made by
  /// `allocate(bytes, buffer)` (false: failed, `why` set); an input's must
  /// be there, kept by the launch that wrote it. Null on failure.
  template <typename Allocate>
  Buffer *get(const ignrt_device_call &call, size_t i, uint64_t bytes,
              Allocate allocate, std::string &why) {
    ResidentKey key = residentKey(call, i);
    auto it = buffers_.find(key);
    if (it == buffers_.end()) {
      if (!isOutput(call, i)) {
        why = "input " + std::to_string(i) +
              " was to be on the device, kept by the launch that wrote it, "
              "and is not";
        return nullptr;
      }
      Buffer b;
      auto spare = pool_.lower_bound(bytes);
      if (spare != pool_.end()) {
        b = spare->second;
        pool_.erase(spare);
      } else if (!allocate(bytes, b)) {
        return nullptr;
      }
      it = buffers_.emplace(key, b).first;
    }
    return &it->second;
  }

  /// After a call: the copies it read for the last time go to the pool.
  void releaseLastUses(const ignrt_device_call &call) {
    for (const ResidentKey &key : lastUses(call)) {
      auto it = buffers_.find(key);
      if (it == buffers_.end())
        continue;
      pool_.emplace(it->second.capacity, it->second);
      buffers_.erase(it);
    }
  }

  /// Frees the pool's buffers with `free(buffer)` (when memory runs out).
  template <typename Free> void freePool(Free free) {
    for (auto &entry : pool_)
      free(entry.second);
    pool_.clear();
  }

private:
  std::map<ResidentKey, Buffer> buffers_;
  std::multimap<uint64_t, Buffer> pool_;
};

/// The kernel's name and a hash of its descriptor and blob: what a driver
/// caches a kernel's device objects by (a later bundle may reuse a freed
/// blob's address or a kernel name for other code).
std::string kernelCacheKey(const ignrt_device_call &call);

} // namespace ign::gpu::rt

#endif
