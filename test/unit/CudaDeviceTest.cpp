//===- CudaDeviceTest.cpp - the CUDA driver against a fake libcuda --------===//
//
// Runs libignrt's CUDA driver (runCudaCall) with IGN_CUDA_DRIVER naming
// FakeCuda.cpp's library: a CUDA driver API on the CPU whose kernels are
// test functions. It checks what the driver does around the kernels
// (arguments and scratch passed in order, inputs copied in and outputs
// out, modules, constants and weights loaded once, architectures and bad
// descriptors refused) without a GPU; the kernels ignc compiles are
// checked by ptxas (test/targets/cuda) and, on a GPU, by the device script.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "CudaDescriptor.h"
#include "Ptxas.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#ifndef IGN_FAKE_CUDA
#error "IGN_FAKE_CUDA must name the fake CUDA driver library"
#endif

using namespace ign::cuda;
using nlohmann::json;

namespace {

// Before any call loads the driver.
const bool useFake = [] {
  setenv("IGN_CUDA_DRIVER", IGN_FAKE_CUDA, 1);
  return true;
}();

/// The fake's counters (FakeCuda.cpp).
struct Counters {
  long allocations, frees, copiesIn, bytesIn, copiesOut, launches, moduleLoads,
      synchronizations;
};
Counters counters() {
  void *lib = dlopen(IGN_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  auto read = reinterpret_cast<void (*)(long *)>(
      lib ? dlsym(lib, "ign_fake_cuda_counters") : nullptr);
  long v[8] = {0};
  if (read)
    read(v);
  return {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
}

/// A call as libignrt makes one: float tensors, inputs first, the last
/// `results` outputs; the blob is `ptx` (NUL-terminated) then `constants`.
struct Call {
  std::string kernel = "test_kernel", ptx;
  json descriptor;
  std::vector<std::vector<float>> tensors;
  std::vector<float> constants;
  size_t results = 1;
  std::vector<unsigned char> weights;
  uint64_t epoch = 0;
  std::vector<unsigned char> resident; // IGNRT_RESIDENT_* per argument
  /// Per argument, another call's tensor to pass instead of its own (the
  /// same host address, as a bundle's arena gives both launches).
  std::map<size_t, std::vector<float> *> alias;
  int mayDefer = 0;
  int deferred = 0;         // set by the driver when it deferred the call
  ignrt_device_stats stats; // the last call's, filled late when deferred

  std::string blob() const {
    std::string b = ptx + '\0';
    b.append(reinterpret_cast<const char *>(constants.data()),
             constants.size() * sizeof(float));
    return b;
  }
  int run(std::string &error, ignrt_device_stats *out = nullptr) {
    std::string text = descriptor.dump(), bytes = blob();
    std::vector<void *> data;
    std::vector<ignrt_tensor_info> args(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      data.push_back(alias.count(i) ? alias[i]->data() : tensors[i].data());
      args[i].name = "t";
      args[i].dtype = IGNRT_F32;
      args[i].rank = 1;
      args[i].dims[0] = int64_t(tensors[i].size());
      args[i].bytes = tensors[i].size() * sizeof(float);
    }
    ignrt_device_call call = {kernel.c_str(), text.c_str(),   bytes.data(),
                              bytes.size(),   tensors.size(), results,
                              data.data(),    args.data()};
    call.weights = weights.empty() ? nullptr : weights.data();
    call.weights_epoch = epoch;
    call.resident = resident.empty() ? nullptr : resident.data();
    call.may_defer = mayDefer;
    call.deferred = &deferred;
    deferred = 0;
    stats = {-1, -1, -1};
    int rc = runCudaCall(call, stats, error);
    if (out)
      *out = stats;
    return rc;
  }
};

json launch(const std::string &entry, uint32_t groups, uint32_t local,
            json args) {
  return {{"entry", entry},
          {"groups", {groups, 1, 1}},
          {"local", {local, 1, 1}},
          {"args", args}};
}

/// c = a + b over n floats (n a multiple of 32), as one launch.
Call addCall(size_t n) {
  Call c;
  c.ptx = "// fake\n.visible .entry fake_add(\n";
  c.descriptor = {
      {"format", "cuda"},
      {"arch", "sm_80"},
      {"image", {{"kind", "ptx"}, {"offset", 0}, {"bytes", c.ptx.size() + 1}}},
      {"dispatches",
       {launch("fake_add", uint32_t(n / 32), 32,
               {{{"arg", 0}}, {{"arg", 1}}, {{"arg", 2}}})}}};
  for (float base : {1.0f, 10.0f, -1.0f}) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = base + float(i);
    c.tensors.push_back(v);
  }
  return c;
}

TEST(CudaDeviceTest, ProbeReportsTheDevice) {
  (void)useFake;
  CudaDeviceInfo info;
  std::string why;
  ASSERT_TRUE(probeCudaDevice(info, why)) << why;
  EXPECT_EQ(info.name, "Fake GPU");
  EXPECT_EQ(info.computeCapability, 80);
  EXPECT_EQ(info.multiprocessors, 4);
}

TEST(CudaDeviceTest, AddsTwoBuffersAndTimesTheLaunch) {
  Call c = addCall(64);
  std::string error;
  ignrt_device_stats stats;
  ASSERT_EQ(c.run(error, &stats), 0) << error;
  for (size_t i = 0; i < 64; ++i)
    EXPECT_EQ(c.tensors[2][i], 11.0f + 2 * float(i)) << i;
  EXPECT_DOUBLE_EQ(stats.device_ns, 0.25e6);
}

TEST(CudaDeviceTest, ScratchCarriesOneLaunchToTheNext) {
  Call c = addCall(32); // out = 2a + b
  c.descriptor["scratch"] = {32 * sizeof(float)};
  c.ptx += ".visible .entry fake_double(\n";
  c.descriptor["image"]["bytes"] = c.ptx.size() + 1;
  c.descriptor["dispatches"] = {
      launch("fake_double", 1, 32, {{{"arg", 0}}, {{"scratch", 0}}}),
      launch("fake_add", 1, 32,
             {{{"scratch", 0}}, {{"arg", 1}}, {{"arg", 2}}})};
  std::string error;
  ASSERT_EQ(c.run(error), 0) << error;
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(c.tensors[2][i], 2 * (1.0f + float(i)) + 10.0f + float(i));
}

TEST(CudaDeviceTest, ModulesConstantsAndWeightsLoadOnce) {
  Call c = addCall(32); // out = a + constant; a is a weight
  c.kernel = "weights_kernel";
  c.constants.assign(32, 0.5f);
  size_t offset = c.ptx.size() + 1;
  c.descriptor["constants"] = {{{"offset", offset}, {"bytes", 32 * 4}}};
  c.descriptor["dispatches"] = json::array({launch(
      "fake_add", 1, 32, {{{"arg", 0}}, {{"const", 0}}, {{"arg", 2}}})});
  c.weights = {1, 0, 0};
  c.epoch = 7;
  std::string error;
  Counters before = counters();
  ASSERT_EQ(c.run(error), 0) << error;
  Counters first = counters();
  c.tensors[2].assign(32, -1.0f);
  ASSERT_EQ(c.run(error), 0) << error;
  Counters second = counters();
  EXPECT_EQ(c.tensors[2][3], 4.5f);
  EXPECT_EQ(first.moduleLoads - before.moduleLoads, 1);
  EXPECT_EQ(second.moduleLoads, first.moduleLoads);
  // The weight and the constant once; the unbound input b never.
  EXPECT_EQ(first.copiesIn - before.copiesIn, 2);
  EXPECT_EQ(second.copiesIn, first.copiesIn);
  EXPECT_EQ(second.copiesOut - first.copiesOut, 1);
  EXPECT_EQ(second.allocations, first.allocations);
}

/// An intermediate between two launches of the driver stays on the GPU:
/// the producer does not copy it back, the reader does not copy it in and
/// reads the GPU's copy, which then returns to a pool the next producer
/// takes from.
TEST(CudaDeviceTest, IntermediatesStayOnTheGpuBetweenLaunches) {
  Call producer = addCall(32); // c = a + b, kept on the GPU
  producer.kernel = "producer";
  producer.resident = {IGNRT_RESIDENT_HOST, IGNRT_RESIDENT_HOST,
                       IGNRT_RESIDENT};
  std::vector<float> hostC = producer.tensors[2];
  Call reader = addCall(32); // d = c + b2, c read on the GPU
  reader.kernel = "reader";
  reader.alias[0] = &producer.tensors[2];
  reader.resident = {IGNRT_RESIDENT_LAST, IGNRT_RESIDENT_HOST,
                     IGNRT_RESIDENT_HOST};
  std::string error;
  ASSERT_EQ(producer.run(error), 0) << error; // modules loaded, buffers made
  ASSERT_EQ(reader.run(error), 0) << error;
  Counters before = counters();
  ASSERT_EQ(producer.run(error), 0) << error;
  EXPECT_EQ(producer.tensors[2], hostC); // the host's copy is stale
  ASSERT_EQ(reader.run(error), 0) << error;
  Counters after = counters();
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(reader.tensors[2][i],
              (1.0f + float(i)) + (10.0f + float(i)) + (10.0f + float(i)));
  // In: a and b, then b2; out: d only; the released copy is reused.
  EXPECT_EQ(after.copiesIn - before.copiesIn, 3);
  EXPECT_EQ(after.copiesOut - before.copiesOut, 1);
  EXPECT_EQ(after.allocations, before.allocations);
  // A reader whose intermediate no launch kept is an error, not stale data.
  EXPECT_NE(reader.run(error), 0);
  EXPECT_NE(error.find("was to be on the device"), std::string::npos) << error;
}

/// A launch whose outputs stay on the GPU, and which copies nothing from the
/// host, returns without waiting for the stream; the next launch that
/// copies back waits once for both and fills the first one's time. A
/// finishing call (no kernel) waits for what is queued.
TEST(CudaDeviceTest, LaunchesWhoseOutputsStayOnTheGpuAreNotWaitedFor) {
  Call source = addCall(32); // c = a + b: its inputs come from the host
  source.kernel = "deferred_source";
  source.resident = {IGNRT_RESIDENT_HOST, IGNRT_RESIDENT_HOST, IGNRT_RESIDENT};
  source.mayDefer = 1;
  Call producer = addCall(32); // d = c + w, w a weight
  producer.kernel = "deferred_producer";
  producer.alias[0] = &source.tensors[2];
  producer.weights = {0, 1, 0};
  producer.epoch = 7;
  producer.resident = {IGNRT_RESIDENT_LAST, IGNRT_RESIDENT_HOST,
                       IGNRT_RESIDENT};
  producer.mayDefer = 1;
  Call reader = addCall(32); // e = d + b2, back to the host
  reader.kernel = "deferred_reader";
  reader.alias[0] = &producer.tensors[2];
  reader.resident = {IGNRT_RESIDENT_LAST, IGNRT_RESIDENT_HOST,
                     IGNRT_RESIDENT_HOST};
  std::string error;
  auto syncs = [] { return counters().synchronizations; };
  // Its async copies in might read the host's bytes after it returned.
  ASSERT_EQ(source.run(error), 0) << error;
  EXPECT_EQ(source.deferred, 0);
  long before = syncs();
  ASSERT_EQ(producer.run(error), 0) << error;
  EXPECT_EQ(producer.deferred, 1);
  EXPECT_EQ(producer.stats.device_ns, 0.0); // not waited for yet
  EXPECT_EQ(syncs(), before);
  ASSERT_EQ(reader.run(error), 0) << error;
  EXPECT_EQ(reader.deferred, 0);
  EXPECT_EQ(syncs(), before + 1);
  EXPECT_EQ(producer.stats.device_ns, 0.25e6); // the fake's 0.25 ms
  EXPECT_EQ(reader.stats.device_ns, 0.25e6);
  for (size_t i = 0; i < 32; ++i)
    EXPECT_EQ(reader.tensors[2][i], (1.0f + float(i)) + 3 * (10.0f + float(i)));
  ASSERT_EQ(source.run(error), 0) << error;
  ASSERT_EQ(producer.run(error), 0) << error;
  ASSERT_EQ(producer.deferred, 1);
  ignrt_device_call finish{};
  ignrt_device_stats unused{};
  before = syncs();
  ASSERT_EQ(runCudaCall(finish, unused, error), 0) << error;
  EXPECT_EQ(syncs(), before + 1);
  EXPECT_EQ(producer.stats.device_ns, 0.25e6);
  ASSERT_EQ(reader.run(error), 0) << error;
}

TEST(CudaDeviceTest, ArchitecturesTheGpuCannotRunAreRefused) {
  Call c = addCall(32);
  c.descriptor["arch"] = "sm_90";
  std::string error;
  EXPECT_NE(c.run(error), 0);
  EXPECT_NE(error.find("compiled for sm_90; this GPU is sm_80"),
            std::string::npos)
      << error;
  CudaDescriptor d;
  d.arch = 86;
  d.kind = "cubin";
  EXPECT_FALSE(checkArchitecture(d, 80, error)); // an older minor
  EXPECT_FALSE(checkArchitecture(d, 90, error)); // another major
  EXPECT_TRUE(checkArchitecture(d, 89, error));
  d.kind = "fatbin";
  EXPECT_TRUE(checkArchitecture(d, 90, error)); // its PTX compiles
}

TEST(CudaDeviceTest, BadDescriptorsAreErrors) {
  struct Case {
    const char *what;
    std::function<void(Call &)> damage;
    const char *message;
  };
  std::vector<Case> cases = {
      {"format", [](Call &c) { c.descriptor["format"] = "spirv"; },
       "\"format\" is not \"cuda\""},
      {"arch", [](Call &c) { c.descriptor["arch"] = "80"; },
       "\"arch\" is missing or not \"sm_XX\""},
      {"image bounds", [](Call &c) { c.descriptor["image"]["bytes"] = 1000; },
       "\"image\" is not a non-empty slice"},
      {"unterminated PTX",
       [](Call &c) { c.descriptor["image"]["bytes"] = c.ptx.size(); },
       "the PTX image does not end with a NUL byte"},
      {"argument index",
       [](Call &c) {
         c.descriptor["dispatches"][0]["args"][2] = {{"arg", 9}};
       },
       "argument 2 argument index 9 is out of range"},
      {"block size",
       [](Call &c) {
         c.descriptor["dispatches"][0]["local"] = {64, 32, 1};
       },
       "block [64, 32, 1] is over CUDA's limits"},
      {"missing kernel",
       [](Call &c) { c.descriptor["dispatches"][0]["entry"] = "fake_sub"; },
       "the module has no kernel 'fake_sub': CUDA_ERROR_NOT_FOUND"},
      {"not a module",
       [](Call &c) {
         c.ptx = "garbage";
         c.kernel = "garbage_kernel";
         c.descriptor["image"]["bytes"] = c.ptx.size() + 1;
       },
       "loading its ptx for Fake GPU: CUDA_ERROR_INVALID_IMAGE (200)"},
  };
  for (const Case &k : cases) {
    Call c = addCall(32);
    c.kernel = std::string("bad_") + k.what;
    k.damage(c);
    std::string error;
    EXPECT_NE(c.run(error), 0) << k.what;
    EXPECT_NE(error.find(k.message), std::string::npos)
        << k.what << ": " << error;
    EXPECT_EQ(error.rfind("cuda kernel '", 0), 0u) << error;
  }
}

TEST(PtxasTest, ParsesResourcesPerEntry) {
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k_a' for 'sm_80'\n"
      "ptxas info    : Function properties for k_a\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, "
      "368 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'k_b' for 'sm_80'\n"
      "ptxas info    : Function properties for k_b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, used 0 barriers, 368 bytes cmem[0]\n";
  std::map<std::string, KernelResources> r = parsePtxasInfo(log);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r["k_a"].registers, 40);
  EXPECT_EQ(r["k_a"].stackBytes, 16);
  EXPECT_EQ(r["k_a"].spillStoreBytes, 8);
  EXPECT_EQ(r["k_a"].spillLoadBytes, 4);
  EXPECT_EQ(r["k_a"].sharedBytes, 1024);
  EXPECT_EQ(r["k_b"].registers, 10);
  EXPECT_EQ(r["k_b"].sharedBytes, 0);
}

} // namespace
