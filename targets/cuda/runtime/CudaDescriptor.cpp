//===- CudaDescriptor.cpp - a CUDA kernel's descriptor --------------------===//

#include "CudaDescriptor.h"

#include <cstring>
#include <limits>

namespace ign::cuda {

using namespace gpu::rt;

namespace {

bool parseArch(const json &o, int &arch, std::string &error) {
  const json *a = member(o, "arch");
  std::string text = a && a->is_string() ? a->get<std::string>() : "";
  if (text.size() < 5 || text.compare(0, 3, "sm_") ||
      text.find_first_not_of("0123456789", 3) != std::string::npos ||
      text.size() > 6) {
    error = "\"arch\" is missing or not \"sm_XX\"";
    return false;
  }
  arch = std::stoi(text.substr(3));
  return true;
}

bool parseImage(const json &o, const ignrt_device_call &call,
                CudaDescriptor &out, std::string &error) {
  const json *image = member(o, "image");
  const json *kind =
      image && image->is_object() ? member(*image, "kind") : nullptr;
  out.kind = kind && kind->is_string() ? kind->get<std::string>() : "";
  if (out.kind != "fatbin" && out.kind != "cubin" && out.kind != "ptx") {
    error = "\"image\" has no \"kind\" of fatbin, cubin or ptx";
    return false;
  }
  uint64_t offset = 0, bytes = 0;
  if (!readCount(member(*image, "offset"), call.blob_bytes, offset) ||
      !readCount(member(*image, "bytes"), call.blob_bytes, bytes) ||
      bytes == 0 || offset + bytes > call.blob_bytes) {
    error = "\"image\" is not a non-empty slice of the " +
            std::to_string(call.blob_bytes) + "-byte blob";
    return false;
  }
  out.image = {size_t(offset), size_t(bytes)};
  const char *end = static_cast<const char *>(call.blob) + offset + bytes;
  if (out.kind == "ptx" && end[-1] != '\0') {
    error = "the PTX image does not end with a NUL byte";
    return false;
  }
  return true;
}

bool parseLaunch(const json &d, const ignrt_device_call &call,
                 const CudaDescriptor &kernel, CudaLaunch &out,
                 std::string &error) {
  const json *entry = d.is_object() ? member(d, "entry") : nullptr;
  if (!entry || !entry->is_string() || entry->get<std::string>().empty()) {
    error = "\"entry\" is missing or not a name";
    return false;
  }
  out.entry = entry->get<std::string>();
  if (!readTriple(member(d, "groups"), out.groups) ||
      !readTriple(member(d, "local"), out.local)) {
    error = "\"groups\" or \"local\" is missing or not three integers >= 1";
    return false;
  }
  const json *args = member(d, "args");
  if (!args || !args->is_array()) {
    error = "\"args\" is missing or not a list";
    return false;
  }
  for (size_t k = 0; k < args->size(); ++k) {
    Binding b;
    if (!parseBinding((*args)[k], call, kernel.scratch.size(),
                      kernel.constants.size(), b, error)) {
      error = "argument " + std::to_string(k) + " " + error;
      return false;
    }
    out.args.push_back(b);
  }
  return true;
}

/// CUDA's limits for every GPU ignc targets (sm_70 and newer).
bool checkLaunchLimits(const CudaLaunch &l, std::string &error) {
  uint64_t threads = uint64_t(l.local[0]) * l.local[1] * l.local[2];
  if (threads > 1024 || l.local[2] > 64) {
    error = "block " + tripleText(l.local) +
            " is over CUDA's limits (1024 threads, 64 along z)";
    return false;
  }
  if (l.groups[0] > 2147483647u || l.groups[1] > 65535 || l.groups[2] > 65535) {
    error = "grid " + tripleText(l.groups) + " is over CUDA's limits";
    return false;
  }
  return true;
}

bool parseJson(const ignrt_device_call &call, CudaDescriptor &out,
               std::string &error) {
  json o;
  if (!parseObject(call, "cuda", o, error) || !parseArch(o, out.arch, error) ||
      !parseImage(o, call, out, error) ||
      !parseScratch(o, out.scratch, error) ||
      !parseConstants(o, call, out.constants, error))
    return false;
  const json *launches = member(o, "dispatches");
  if (!launches || !launches->is_array() || launches->empty()) {
    error = "the descriptor has no \"dispatches\" list";
    return false;
  }
  for (size_t i = 0; i < launches->size(); ++i) {
    CudaLaunch l;
    if (!parseLaunch((*launches)[i], call, out, l, error) ||
        !checkLaunchLimits(l, error)) {
      error = "dispatch " + std::to_string(i) + ": " + error;
      return false;
    }
    out.launches.push_back(std::move(l));
  }
  return true;
}

} // namespace

bool parseCudaDescriptor(const ignrt_device_call &call, CudaDescriptor &out,
                         std::string &error) {
  out = CudaDescriptor();
  return parseChecked(call, error, [&](std::string &error) {
    return parseJson(call, out, error);
  });
}

bool checkArchitecture(const CudaDescriptor &kernel, int device,
                       std::string &error) {
  bool runs = kernel.kind == "cubin"
                  ? device / 10 == kernel.arch / 10 && device >= kernel.arch
                  : device >= kernel.arch;
  if (!runs)
    error = "the kernel was compiled for sm_" + std::to_string(kernel.arch) +
            (kernel.kind == "cubin" ? " (a cubin without PTX)" : "") +
            "; this GPU is sm_" + std::to_string(device) +
            ": compile the model for this GPU's architecture";
  return runs;
}

} // namespace ign::cuda
