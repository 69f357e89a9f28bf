//===- ignrt-systolic-run.cpp - a systolic bundle through libignrt alone --===//
//
// What an application that deploys a --target=systolic bundle links: libignrt
// and the systolic driver (IgnSystolicDevice), no LLVM or MLIR. It registers
// the driver, runs the bundle once on seeded random inputs (drawn exactly as
// `ignc run --random-inputs --seed N` draws them), prints one line per output
// (dtype, shape, a checksum of its bytes) and the device's totals, and with
// --output-dir writes each output as NAME.npy.
//
//   ignrt-systolic-run BUNDLE [--seed N] [--threads N] [--output-dir DIR]
//
//===----------------------------------------------------------------------===//

#include "SystolicDevice.h"
#include "ign/Runtime/RandomInputs.h"
#include "ign/Runtime/ignrt.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace {

int usage() {
  std::fprintf(stderr, "usage: ignrt-systolic-run BUNDLE [--seed N] "
                       "[--threads N] [--output-dir DIR]\n");
  return 1;
}

int runtimeError(const char *what) {
  std::fprintf(stderr, "ignrt-systolic-run: error: %s: %s\n", what,
               ignrt_last_error());
  return 6;
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
    else if (o.bundle.empty() && !a.empty() && a[0] != '-')
      o.bundle = a;
    else
      return false;
  }
  return !o.bundle.empty();
}

int setInputs(ignrt_bundle *bundle, ignrt_session *session, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < ignrt_bundle_num_inputs(bundle); ++i) {
    ignrt_tensor_info info;
    ignrt_bundle_input(bundle, i, &info);
    std::string bytes = ign::randomBytes(info, rng);
    if (ignrt_session_set_input(session, info.name, info.dtype, info.dims,
                                info.rank, bytes.data(),
                                bytes.size()) != IGNRT_OK)
      return runtimeError("setting inputs");
  }
  return 0;
}

int printOutputs(ignrt_bundle *bundle, ignrt_session *session,
                 const std::string &outputDir) {
  std::error_code ec;
  if (!outputDir.empty())
    std::filesystem::create_directories(outputDir, ec);
  if (ec) {
    std::fprintf(stderr, "ignrt-systolic-run: error: cannot create '%s': %s\n",
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
        std::fprintf(stderr, "ignrt-systolic-run: error: cannot write '%s'\n",
                     path.c_str());
        return 4;
      }
    }
  }
  return 0;
}

void printDevice(ignrt_session *session) {
  int64_t launches = 0, cycles = 0;
  for (size_t i = 0; i < ignrt_session_num_kernels(session); ++i) {
    ignrt_device_stats stats;
    if (ignrt_session_kernel_device(session, i, &stats) == IGNRT_OK) {
      ++launches;
      cycles += stats.cycles;
    }
  }
  std::printf("device: %lld launches on the simulated array, %lld cycles\n",
              (long long)launches, (long long)cycles);
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o))
    return usage();
  ign::systolic::registerSystolicDevice();
  ignrt_bundle *bundle = nullptr;
  if (ignrt_bundle_open(o.bundle.c_str(), &bundle) != IGNRT_OK)
    return runtimeError(o.bundle.c_str());
  ignrt_session *session = nullptr;
  int code = 0;
  if (ignrt_session_create(bundle, o.threads, &session) != IGNRT_OK)
    code = runtimeError("cannot create a session");
  if (!code)
    code = setInputs(bundle, session, o.seed);
  if (!code && ignrt_session_run(session) != IGNRT_OK)
    code = runtimeError("run failed");
  if (!code)
    code = printOutputs(bundle, session, o.outputDir);
  if (!code)
    printDevice(session);
  if (session)
    ignrt_session_destroy(session);
  ignrt_bundle_close(bundle);
  return code;
}
