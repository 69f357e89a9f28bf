//===- ignrt-run.cpp - a bundle through libignrt and its drivers alone ----===//
//
// What an application that deploys a bundle links: libignrt and the device
// drivers (the systolic simulator, Vulkan, CUDA; each plain C++, the GPU
// ones opening their vendor library at first use), no LLVM or MLIR. It
// registers the drivers, runs the bundle on seeded random inputs (drawn
// exactly as `ignc run --random-inputs --seed N` draws them) or on .npy
// files, prints one line per output (dtype, shape, a checksum of its bytes)
// and the device's totals, with --output-dir writes each output as
// NAME.npy, and with --repeat N times N more runs.
//
//   ignrt-run BUNDLE [--seed N] [--input NAME=FILE.npy ...] [--threads N]
//             [--output-dir DIR] [--repeat N]
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "SystolicDevice.h"
#include "VulkanDevice.h"
#include "ign/Runtime/RandomInputs.h"
#include "ign/Runtime/ignrt.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

int usage() {
  std::fprintf(stderr, "usage: ignrt-run BUNDLE [--seed N] [--input "
                       "NAME=FILE.npy ...] [--threads N] [--output-dir DIR] "
                       "[--repeat N]\n");
  return 1;
}

int runtimeError(const char *what) {
  std::fprintf(stderr, "ignrt-run: error: %s: %s\n", what, ignrt_last_error());
  return 6;
}

int inputError(const std::string &what) {
  std::fprintf(stderr, "ignrt-run: error: %s\n", what.c_str());
  return 3;
}

/// The .npy type of a dtype, or null.
const char *npyDescr(ignrt_dtype t) {
  switch (t) {
  case IGNRT_F32:
    return "<f4";
  case IGNRT_F64:
    return "<f8";
  case IGNRT_F16:
    return "<f2";
  case IGNRT_I8:
    return "|i1";
  case IGNRT_I16:
    return "<i2";
  case IGNRT_I32:
    return "<i4";
  case IGNRT_I64:
    return "<i8";
  case IGNRT_U8:
    return "|u1";
  case IGNRT_U16:
    return "<u2";
  case IGNRT_U32:
    return "<u4";
  case IGNRT_U64:
    return "<u8";
  case IGNRT_BOOL:
    return "|b1";
  default:
    return nullptr;
  }
}

bool writeNpy(const std::string &path, const ignrt_tensor_info &info,
              const void *data, size_t bytes) {
  const char *descr = npyDescr(info.dtype);
  if (!descr)
    return false;
  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < info.rank; ++i)
    dict << info.dims[i] << (info.rank == 1 || i + 1 < info.rank ? ", " : "");
  dict << "), }";
  std::string header = dict.str();
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(char(header.size() & 0xff));
  out.put(char(header.size() >> 8));
  out << header;
  out.write(static_cast<const char *>(data), std::streamsize(bytes));
  return bool(out);
}

/// FNV-1a over the bytes.
uint64_t checksum(const void *data, size_t bytes) {
  uint64_t h = 14695981039346656037ull;
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ static_cast<const uint8_t *>(data)[i]) * 1099511628211ull;
  return h;
}

struct Options {
  std::string bundle, outputDir;
  uint64_t seed = 1; // ignc run's default
  int threads = 0;
  int repeat = 0;
  std::map<std::string, std::string> inputs; // name -> .npy file
};

bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    if (a == "--seed" && hasValue)
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--threads" && hasValue)
      o.threads = std::atoi(argv[++i]);
    else if (a == "--output-dir" && hasValue)
      o.outputDir = argv[++i];
    else if (a == "--repeat" && hasValue)
      o.repeat = std::max(0, std::atoi(argv[++i]));
    else if (a == "--input" && hasValue &&
             std::strchr(argv[i + 1], '=') > argv[i + 1]) {
      std::string spec = argv[++i];
      size_t eq = spec.find('=');
      o.inputs[spec.substr(0, eq)] = spec.substr(eq + 1);
    } else if (o.bundle.empty() && !a.empty() && a[0] != '-')
      o.bundle = a;
    else
      return false;
  }
  return !o.bundle.empty();
}

/// The data of a little-endian C-order .npy file of `info`'s dtype and
/// shape, or why not.
bool readNpy(const std::string &path, const ignrt_tensor_info &info,
             std::string &data, std::string &why) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (!in && bytes.empty())
    return why = "cannot read '" + path + "'", false;
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return why = "'" + path + "' is not a .npy file", false;
  size_t lenBytes = bytes[6] == 1 ? 2 : 4;
  if (bytes.size() < 8 + lenBytes)
    return why = "'" + path + "' has a damaged header", false;
  size_t headerLen = 0;
  for (size_t b = 0; b < lenBytes; ++b)
    headerLen |= size_t(uint8_t(bytes[8 + b])) << (8 * b);
  size_t start = 8 + lenBytes + headerLen;
  if (start > bytes.size())
    return why = "'" + path + "' has a damaged header", false;
  std::string header = bytes.substr(8 + lenBytes, headerLen);
  std::vector<int64_t> dims;
  size_t open = header.find("'shape': (");
  size_t close = header.find(')', open);
  if (open != std::string::npos && close != std::string::npos) {
    std::istringstream list(header.substr(open + 10, close - open - 10));
    for (std::string item; std::getline(list, item, ',');)
      if (item.find_first_not_of(' ') != std::string::npos)
        dims.push_back(std::strtoll(item.c_str(), nullptr, 10));
  }
  std::ostringstream shape;
  for (size_t d = 0; d < info.rank; ++d)
    shape << (d ? ", " : "") << info.dims[d];
  const char *descr = npyDescr(info.dtype);
  bool ok = descr && header.find(descr) != std::string::npos &&
            header.find("'fortran_order': False") != std::string::npos &&
            dims == std::vector<int64_t>(info.dims, info.dims + info.rank) &&
            bytes.size() - start == info.bytes;
  if (!ok)
    return why = "'" + path + "' is not a C-order " +
                 std::string(descr ? descr : "?") + " array of shape (" +
                 shape.str() + ") as input '" + info.name + "' needs",
           false;
  bytes.erase(0, start); // the data, without a second copy
  data = std::move(bytes);
  return true;
}

int setInputs(ignrt_bundle *bundle, ignrt_session *session, const Options &o) {
  std::mt19937_64 rng(o.seed);
  std::map<std::string, std::string> unused = o.inputs;
  for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle); ++i) {
    ignrt_tensor_info info;
    ignrt_bundle_input(bundle, i, &info);
    // Drawn for every input, so that the others' values do not depend on
    // which are given.
    std::string bytes = ign::randomBytes(info, rng), why;
    auto file = o.inputs.find(info.name);
    if (file != o.inputs.end() && !readNpy(file->second, info, bytes, why))
      return inputError(why);
    unused.erase(info.name);
    if (ignrt_session_set_input(session, info.name, info.dtype, info.dims,
                                info.rank, bytes.data(),
                                bytes.size()) != IGNRT_OK)
      return runtimeError("setting inputs");
  }
  if (!unused.empty())
    return inputError("the bundle has no input '" + unused.begin()->first +
                      "'");
  return 0;
}

int printOutputs(ignrt_bundle *bundle, ignrt_session *session,
                 const std::string &outputDir) {
  std::error_code ec;
  if (!outputDir.empty())
    std::filesystem::create_directories(outputDir, ec);
  if (ec) {
    std::fprintf(stderr, "ignrt-run: error: cannot create '%s': %s\n",
                 outputDir.c_str(), ec.message().c_str());
    return 4;
  }
  for (size_t i = 0; i < ignrt_bundle_num_outputs(bundle); ++i) {
    ignrt_tensor_info info; // the actual shape, for outputs of run-time size
    const void *data = nullptr;
    if (ignrt_session_output_at(session, i, &info, &data) != IGNRT_OK)
      return runtimeError("reading outputs");
    size_t bytes = info.bytes;
    std::printf("%s: %s [", info.name, ignrt_dtype_name(info.dtype));
    for (size_t d = 0; d < info.rank; ++d)
      std::printf("%s%lld", d ? "x" : "", (long long)info.dims[d]);
    std::printf("] fnv1a %016llx\n", (unsigned long long)checksum(data, bytes));
    if (!outputDir.empty()) {
      std::string name = info.name;
      for (char &c : name)
        if (c == '/' || c == '\\' || c == ':' || c == ' ')
          c = '_';
      std::string path = outputDir + "/" + name + ".npy";
      if (!writeNpy(path, info, data, bytes)) {
        std::fprintf(stderr, "ignrt-run: error: cannot write '%s'\n",
                     path.c_str());
        return 4;
      }
    }
  }
  return 0;
}

/// The device launches, cycles and time of the last run.
struct DeviceTotals {
  int64_t launches = 0, cycles = 0;
  double ms = 0;
};

DeviceTotals deviceTotals(ignrt_session *session) {
  DeviceTotals t;
  for (size_t i = 0; i < ignrt_session_num_kernels(session); ++i) {
    ignrt_device_stats stats;
    if (ignrt_session_kernel_device(session, i, &stats) == IGNRT_OK) {
      ++t.launches;
      t.cycles += stats.cycles;
      t.ms += stats.device_ns / 1e6;
    }
  }
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// `repeat` more runs: the median and least wall time, and the median of
/// the device's own time.
int timeRuns(ignrt_session *session, int repeat) {
  std::vector<double> wall, device;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (ignrt_session_run(session) != IGNRT_OK)
      return runtimeError("run failed");
    std::chrono::duration<double, std::milli> ms =
        std::chrono::steady_clock::now() - start;
    wall.push_back(ms.count());
    device.push_back(deviceTotals(session).ms);
  }
  std::printf("timing: %d runs, wall median %.4f ms, min %.4f ms, device "
              "median %.4f ms\n",
              repeat, median(wall), *std::min_element(wall.begin(), wall.end()),
              median(device));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o))
    return usage();
  ign::systolic::registerSystolicDevice();
  ign::vulkan::registerVulkanDevice();
  ign::cuda::registerCudaDevice();
  ignrt_bundle *bundle = nullptr;
  if (ignrt_bundle_open(o.bundle.c_str(), &bundle) != IGNRT_OK)
    return runtimeError(o.bundle.c_str());
  ignrt_session *session = nullptr;
  int code = 0;
  if (ignrt_session_create(bundle, o.threads, &session) != IGNRT_OK)
    code = runtimeError("cannot create a session");
  if (!code)
    code = setInputs(bundle, session, o);
  if (!code && ignrt_session_run(session) != IGNRT_OK)
    code = runtimeError("run failed");
  if (!code)
    code = printOutputs(bundle, session, o.outputDir);
  if (!code) {
    DeviceTotals t = deviceTotals(session);
    std::printf("device: %lld launches, %lld cycles, %.4f ms\n",
                (long long)t.launches, (long long)t.cycles, t.ms);
  }
  if (!code && o.repeat > 0)
    code = timeRuns(session, o.repeat);
  if (session)
    ignrt_session_destroy(session);
  ignrt_bundle_close(bundle);
  return code;
}
