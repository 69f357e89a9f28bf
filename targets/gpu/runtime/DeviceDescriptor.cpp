//===- DeviceDescriptor.cpp - what every GPU driver reads the same way ----===//

#include "DeviceDescriptor.h"

#include <cstdio>
#include <cstring>
#include <limits>

namespace ign::gpu::rt {

namespace {

uint64_t fnv1a(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

} // namespace

const json *member(const json &object, const char *key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

/// A non-negative integer no larger than \p max.
bool readCount(const json *v, uint64_t max, uint64_t &out) {
  if (!v || !v->is_number_integer())
    return false;
  if (!v->is_number_unsigned() && v->get<int64_t>() < 0)
    return false;
  out = v->get<uint64_t>();
  return out <= max;
}

/// Three integers in [1, 2^32).
bool readTriple(const json *v, uint32_t out[3]) {
  if (!v || !v->is_array() || v->size() != 3)
    return false;
  for (size_t i = 0; i < 3; ++i) {
    uint64_t x = 0;
    if (!readCount(&(*v)[i], std::numeric_limits<uint32_t>::max(), x) || !x)
      return false;
    out[i] = uint32_t(x);
  }
  return true;
}

std::string tripleText(const uint32_t t[3]) {
  return "[" + std::to_string(t[0]) + ", " + std::to_string(t[1]) + ", " +
         std::to_string(t[2]) + "]";
}

bool parseBinding(const json &b, const ignrt_device_call &call, size_t scratch,
                  size_t constants, Binding &out, std::string &error) {
  static const char *kKeys[] = {"arg", "scratch", "const"};
  static const char *kName[] = {"argument", "scratch", "constant"};
  static const char *kWhat[] = {" arguments", " scratch buffers", " constants"};
  size_t limits[] = {call.num_args, scratch, constants};
  const json *value = nullptr;
  int found = 0;
  for (int k = 0; k < 3; ++k)
    if (const json *v = b.is_object() ? member(b, kKeys[k]) : nullptr) {
      value = v;
      out.kind = Binding::Kind(k);
      ++found;
    }
  if (found != 1) {
    error = "is not {\"arg\": N}, {\"scratch\": N} or {\"const\": N}";
    return false;
  }
  uint64_t index = 0;
  size_t limit = limits[out.kind];
  if (!readCount(value, std::numeric_limits<size_t>::max(), index) ||
      index >= limit) {
    error = std::string(kName[out.kind]) + " index " + value->dump() +
            " is out of range (there are " + std::to_string(limit) +
            kWhat[out.kind] + ")";
    return false;
  }
  out.index = size_t(index);
  return true;
}

bool parseScratch(const json &o, std::vector<uint64_t> &out,
                  std::string &error) {
  const json *scratch = member(o, "scratch");
  if (!scratch)
    return true; // no scratch buffers
  if (!scratch->is_array()) {
    error = "\"scratch\" is not a list of byte sizes";
    return false;
  }
  for (size_t i = 0; i < scratch->size(); ++i) {
    uint64_t bytes = 0;
    if (!readCount(&(*scratch)[i], std::numeric_limits<uint32_t>::max(),
                   bytes)) {
      error = "scratch " + std::to_string(i) + " (" + (*scratch)[i].dump() +
              ") is not a byte size below 4 GiB";
      return false;
    }
    out.push_back(bytes);
  }
  return true;
}

/// "constants": slices of the blob, each within it.
bool parseConstants(const json &o, const ignrt_device_call &call,
                    std::vector<BlobSlice> &out, std::string &error) {
  const json *constants = member(o, "constants");
  if (!constants)
    return true;
  if (!constants->is_array()) {
    error = "\"constants\" is not a list";
    return false;
  }
  for (size_t i = 0; i < constants->size(); ++i) {
    const json &c = (*constants)[i];
    uint64_t offset = 0, bytes = 0;
    if (!c.is_object() || !member(c, "offset") || !member(c, "bytes") ||
        !readCount(member(c, "offset"), call.blob_bytes, offset) ||
        !readCount(member(c, "bytes"), call.blob_bytes, bytes) ||
        offset + bytes > call.blob_bytes) {
      error = "constant " + std::to_string(i) + " (" + c.dump() +
              ") is not an {\"offset\", \"bytes\"} slice of the " +
              std::to_string(call.blob_bytes) + "-byte blob";
      return false;
    }
    out.push_back({size_t(offset), size_t(bytes)});
  }
  return true;
}

bool checkCall(const ignrt_device_call &call, std::string &error) {
  if (call.results > call.num_args) {
    error = "the call has " + std::to_string(call.results) + " results but " +
            std::to_string(call.num_args) + " arguments";
    return false;
  }
  if (call.num_args && (!call.args || !call.data)) {
    error = "the call has arguments but no argument list";
    return false;
  }
  if (!call.blob && call.blob_bytes) {
    error = "the call has no blob";
    return false;
  }
  for (size_t i = 0; i < call.num_args; ++i)
    if (call.args[i].bytes && !call.data[i]) {
      error = "argument " + std::to_string(i) + " has no data";
      return false;
    }
  return true;
}

bool parseObject(const ignrt_device_call &call, const char *format, json &out,
                 std::string &error) {
  try {
    out = json::parse(call.descriptor ? call.descriptor : "");
  } catch (const json::exception &e) {
    error = std::string("the descriptor is not JSON: ") + e.what();
    return false;
  }
  if (!out.is_object()) {
    error = "the descriptor is not a JSON object";
    return false;
  }
  const json *f = member(out, "format");
  if (!f || *f != format) {
    error =
        std::string("the descriptor's \"format\" is not \"") + format + "\"";
    return false;
  }
  return true;
}

bool parseChecked(const ignrt_device_call &call, std::string &error,
                  const std::function<bool(std::string &error)> &parse) {
  if (!checkCall(call, error))
    return false;
  try {
    return parse(error);
  } catch (const std::exception &e) { // json type errors, bad_alloc
    error = std::string("bad descriptor: ") + e.what();
    return false;
  }
}

int runGuarded(const char *target, std::mutex &lock,
               const ignrt_device_call &call, std::string &error,
               const std::function<bool(std::string &why)> &body) {
  std::lock_guard<std::mutex> guard(lock);
  std::string why;
  bool ok = false;
  try {
    ok = body(why);
  } catch (const std::exception &e) { // e.g. std::bad_alloc
    why = std::string("the ") + target + " driver failed: " + e.what();
  }
  if (ok)
    return 0;
  error = std::string(target) + " kernel '" +
          (call.kernel ? call.kernel : "?") + "': " + why;
  return 1;
}

int runDeferring(const char *target, std::mutex &lock,
                 const ignrt_device_call &call, std::string &error,
                 const std::function<bool(std::string &why)> &launch,
                 const std::function<bool(std::string &why)> &settle) {
  ignrt_device_call named = call; // the finishing call names no kernel
  if (!named.kernel)
    named.kernel = "(the run's deferred launches)";
  return runGuarded(target, lock, named, error, [&](std::string &why) {
    if (!call.kernel)
      return settle(why);
    std::string ignored;
    bool ok = false;
    try {
      ok = launch(why);
    } catch (...) {
      settle(ignored);
      throw;
    }
    if (!ok)
      settle(ignored);
    return ok;
  });
}

int reportResult(int rc, const std::string &message, char *error,
                 size_t errorSize) {
  if (rc && error && errorSize)
    std::snprintf(error, errorSize, "%s", message.c_str());
  return rc;
}

/// The kernel's name and a hash of its descriptor and blob: a later bundle
/// may reuse a freed blob's address or a kernel name for other code.
unsigned char residency(const ignrt_device_call &call, size_t i) {
  return call.resident ? call.resident[i] : IGNRT_RESIDENT_HOST;
}

bool isOutput(const ignrt_device_call &call, size_t i) {
  return i >= call.num_args - call.results;
}

ResidentKey residentKey(const ignrt_device_call &call, size_t i) {
  return {call.data[i], size_t(call.args[i].bytes)};
}

std::vector<ResidentKey> lastUses(const ignrt_device_call &call) {
  std::vector<ResidentKey> out;
  for (size_t i = 0; i < call.num_args; ++i) {
    if (residency(call, i) != IGNRT_RESIDENT_LAST || isOutput(call, i))
      continue;
    bool rewritten = false;
    for (size_t o = call.num_args - call.results; o < call.num_args; ++o)
      rewritten |= residency(call, o) != IGNRT_RESIDENT_HOST &&
                   residentKey(call, o) == residentKey(call, i);
    if (!rewritten)
      out.push_back(residentKey(call, i));
  }
  return out;
}

std::string kernelCacheKey(const ignrt_device_call &call) {
  const char *text = call.descriptor ? call.descriptor : "";
  uint64_t h = fnv1a(text, std::strlen(text) + 1, 0xcbf29ce484222325ull);
  h = fnv1a(&call.blob_bytes, sizeof call.blob_bytes, h);
  h = fnv1a(call.blob, call.blob_bytes, h);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(call.kernel ? call.kernel : "") + '\n' + hex;
}

} // namespace ign::gpu::rt
