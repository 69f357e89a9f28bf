//===- VulkanDeviceTest.cpp - the Vulkan driver on a real device ----------===//
//
// Runs SPIR-V test shaders (Inputs/vulkan/*.spvasm, assembled here with
// spirv-as) through runVulkanCall, the body of libignrt's "vulkan" driver,
// and checks results, dispatch ordering, pipeline caching and descriptor
// errors. The tests that need a device skip where there is none (Mesa's
// lavapipe is one, on the CPU); the missing-loader test runs everywhere.
//
//===----------------------------------------------------------------------===//

#include "VulkanDevice.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>
#include <vector>

#ifndef IGN_TEST_INPUTS_DIR
#error "IGN_TEST_INPUTS_DIR must name test/unit/Inputs"
#endif
#ifndef IGN_SPIRV_AS
#define IGN_SPIRV_AS "spirv-as"
#endif

extern char **environ;

using namespace ign::vulkan;
using nlohmann::json;

namespace {

/// The bytes of Inputs/vulkan/NAME.spvasm assembled for Vulkan 1.1, or
/// empty with \p why set.
std::vector<uint8_t> assembleUncached(const std::string &name,
                                      std::string &why) {
  std::string source =
      std::string(IGN_TEST_INPUTS_DIR) + "/vulkan/" + name + ".spvasm";
  char out[] = "/tmp/ign-vulkan-test-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0)
    return why = "cannot make a temporary file", std::vector<uint8_t>();
  close(fd);
  std::string command = std::string(IGN_SPIRV_AS) +
                        " --target-env vulkan1.1 '" + source + "' -o " + out +
                        " 2>&1";
  std::string log;
  if (FILE *p = popen(command.c_str(), "r")) {
    char line[512];
    while (fgets(line, sizeof line, p))
      log += line;
    if (pclose(p) != 0)
      why = command + " failed: " + log;
  } else {
    why = "cannot run " + command;
  }
  std::ifstream in(out, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  std::remove(out);
  if (why.empty() && bytes.empty())
    why = command + " wrote nothing";
  return why.empty() ? bytes : std::vector<uint8_t>();
}

bool haveSpirvAs() {
  static const bool have =
      std::system(
          (std::string(IGN_SPIRV_AS) + " --version >/dev/null 2>&1").c_str()) ==
      0;
  return have;
}

std::vector<uint8_t> assemble(const std::string &name, std::string &why) {
  static std::map<std::string, std::vector<uint8_t>> cache;
  auto it = cache.find(name);
  if (it != cache.end())
    return it->second;
  std::vector<uint8_t> bytes = assembleUncached(name, why);
  if (!bytes.empty())
    cache[name] = bytes;
  return bytes;
}

/// A launch built the way libignrt builds one: arguments are byte vectors,
/// inputs first; the last `results` are outputs.
struct Launch {
  std::string kernel = "test_kernel";
  json descriptor;
  std::vector<uint8_t> blob;
  std::vector<std::vector<uint8_t>> tensors;
  size_t results = 1;
  std::vector<unsigned char> weights; // per tensor; empty: none
  uint64_t weightsEpoch = 0;
  std::vector<unsigned char> resident; // per tensor; empty: all on the host
  /// Per tensor, another launch's tensor to pass instead (the same host
  /// bytes: a resident intermediate's key); empty or null: its own.
  std::vector<std::vector<uint8_t> *> shared;
  int mayDefer = 0;
  int deferred = 0;         // set by the driver when it deferred the call
  ignrt_device_stats stats; // the last call's, filled late when deferred

  template <typename T> void addTensor(const std::vector<T> &values) {
    const uint8_t *p = reinterpret_cast<const uint8_t *>(values.data());
    tensors.emplace_back(p, p + values.size() * sizeof(T));
  }
  template <typename T> std::vector<T> tensor(size_t i) const {
    std::vector<T> v(tensors[i].size() / sizeof(T));
    std::memcpy(v.data(), tensors[i].data(), tensors[i].size());
    return v;
  }

  int run(std::string &error, ignrt_device_stats *statsOut = nullptr) {
    return runText(descriptor.dump(), error, statsOut);
  }

  int runText(const std::string &text, std::string &error,
              ignrt_device_stats *statsOut = nullptr) {
    std::vector<void *> data;
    std::vector<ignrt_tensor_info> args(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::vector<uint8_t> &t =
          i < shared.size() && shared[i] ? *shared[i] : tensors[i];
      data.push_back(t.data());
      args[i].name = "t";
      args[i].dtype = IGNRT_U8;
      args[i].rank = 1;
      args[i].dims[0] = int64_t(t.size());
      args[i].bytes = t.size();
    }
    ignrt_device_call call = {kernel.c_str(), text.c_str(),   blob.data(),
                              blob.size(),    tensors.size(), results,
                              data.data(),    args.data()};
    call.weights = weights.empty() ? nullptr : weights.data();
    call.weights_epoch = weightsEpoch;
    call.resident = resident.empty() ? nullptr : resident.data();
    call.may_defer = mayDefer;
    call.deferred = &deferred;
    deferred = 0;
    stats = {-1, -1, -1};
    int rc = runVulkanCall(call, stats, error);
    if (statsOut)
      *statsOut = stats;
    return rc;
  }
};

json dispatchJson(const std::string &entry, size_t offset, size_t bytes,
                  uint32_t groups, uint32_t local, json bindings) {
  return {{"entry", entry},         {"offset", offset},
          {"bytes", bytes},         {"groups", {groups, 1, 1}},
          {"local", {local, 1, 1}}, {"bindings", bindings}};
}

std::vector<float> iota(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = start + step * float(i);
  return v;
}

class VulkanDeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!probeVulkanDevice(info, why))
      GTEST_SKIP() << "no Vulkan device: " << why;
    if (!haveSpirvAs())
      GTEST_SKIP() << IGN_SPIRV_AS << " does not run: install spirv-tools";
  }

  /// A launch of add or mul (entry "main"), bound a, b, out, over `n`
  /// floats.
  Launch binaryLaunch(const std::string &shader, size_t n) {
    Launch l;
    std::string why;
    l.blob = assemble(shader, why);
    EXPECT_TRUE(why.empty()) << why;
    l.descriptor = {
        {"format", "spirv"},
        {"scratch", json::array()},
        {"dispatches",
         {dispatchJson("main", 0, l.blob.size(), (n + 63) / 64, 64,
                       {{{"arg", 0}}, {{"arg", 1}}, {{"arg", 2}}})}}};
    l.addTensor(iota(n, 1.0f, 0.5f));
    l.addTensor(iota(n, -3.0f, 2.0f));
    l.addTensor(std::vector<float>(n, -1.0f));
    return l;
  }

  VulkanDeviceInfo info;
};

TEST_F(VulkanDeviceTest, ProbeReportsTheDevice) {
  EXPECT_FALSE(info.name.empty());
  EXPECT_FALSE(info.type.empty());
  EXPECT_GT(info.subgroupSize, 0u);
  EXPECT_GE(info.apiVersion, (1u << 22) | (1u << 12)); // Vulkan 1.1
  EXPECT_GE(info.maxInvocations, 128u);                // the Vulkan minimum
  for (int i = 0; i < 3; ++i)
    EXPECT_GT(info.maxWorkgroupCount[i], 0u);
  EXPECT_GE(info.maxSharedMemoryBytes, 16384u);
  // ctest runs this suite with IGN_VULKAN_MEMORY=staged too.
  const char *mode = std::getenv("IGN_VULKAN_MEMORY");
  if (mode && std::string(mode) == "staged")
    EXPECT_EQ(info.memory, "device-local, staged (IGN_VULKAN_MEMORY=staged)");
  else
    EXPECT_FALSE(info.memory.empty());
}

TEST_F(VulkanDeviceTest, AddsTwoBuffersWithAPartialLastWorkgroup) {
  const size_t n = 1000; // 15 full workgroups of 64 and one of 40
  Launch l = binaryLaunch("add", n);
  std::string error;
  ignrt_device_stats stats;
  ASSERT_EQ(l.run(error, &stats), 0) << error;
  std::vector<float> a = l.tensor<float>(0), b = l.tensor<float>(1),
                     out = l.tensor<float>(2);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], a[i] + b[i]) << "element " << i;
  EXPECT_EQ(stats.cycles, 0);
  EXPECT_GT(stats.device_ns, 0.0);
  EXPECT_EQ(stats.utilization, 0.0);
}

TEST_F(VulkanDeviceTest, EnablesEightBitStorage) {
  if (!info.storageBuffer8BitAccess || !info.shaderInt8)
    GTEST_SKIP() << info.name << " lacks 8-bit storage or int8";
  const size_t n = 1001; // the buffers are padded to 1004 bytes
  Launch l;
  std::string why;
  l.blob = assemble("add_u8", why);
  ASSERT_TRUE(why.empty()) << why;
  l.descriptor = {{"format", "spirv"},
                  {"dispatches",
                   {dispatchJson("add_u8", 0, l.blob.size(), (n + 31) / 32, 32,
                                 {{{"arg", 0}}, {{"arg", 1}}, {{"arg", 2}}})}}};
  std::vector<uint8_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i)
    a[i] = uint8_t(i), b[i] = uint8_t(200 + 3 * i);
  l.addTensor(a);
  l.addTensor(b);
  l.addTensor(std::vector<uint8_t>(n, 0));
  ASSERT_EQ(l.run(why), 0) << why;
  std::vector<uint8_t> out = l.tensor<uint8_t>(2);
  ASSERT_EQ(out.size(), n);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], uint8_t(a[i] + b[i])) << "element " << i;
}

// lavapipe runs dispatches one after the other, so a missing barrier shows
// only on a GPU, or here under VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
// with VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_-
// VALIDATION_EXT (it reports SYNC-HAZARD-READ-AFTER-WRITE).
TEST_F(VulkanDeviceTest, SecondDispatchSeesTheFirstThroughScratch) {
  const size_t n = 777;
  std::string why;
  std::vector<uint8_t> scale = assemble("scale", why);
  std::vector<uint8_t> reverse = assemble("reverse_add", why);
  ASSERT_TRUE(why.empty()) << why;
  Launch l;
  l.blob = scale;
  l.blob.insert(l.blob.end(), reverse.begin(), reverse.end());
  l.descriptor = {
      {"format", "spirv"},
      {"scratch", {n * 4}},
      {"dispatches",
       {dispatchJson("scale", 0, scale.size(), (n + 63) / 64, 64,
                     {{{"arg", 0}}, {{"scratch", 0}}}),
        dispatchJson("reverse_add", scale.size(), reverse.size(), (n + 15) / 16,
                     16, {{{"scratch", 0}}, {{"arg", 1}}, {{"arg", 2}}})}}};
  l.addTensor(iota(n, 0.25f, 1.0f));
  l.addTensor(iota(n, 100.0f, -0.5f));
  l.addTensor(std::vector<float>(n, 0.0f));
  ASSERT_EQ(l.run(why), 0) << why;
  std::vector<float> a = l.tensor<float>(0), b = l.tensor<float>(1),
                     out = l.tensor<float>(2);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], a[n - 1 - i] * 2.0f + b[i]) << "element " << i;
}

TEST_F(VulkanDeviceTest, SameCallTwiceGivesTheSameResult) {
  Launch l = binaryLaunch("add", 300);
  std::string error;
  ASSERT_EQ(l.run(error), 0) << error;
  std::vector<float> first = l.tensor<float>(2);
  l.tensors[2].assign(l.tensors[2].size(), 0xFF); // poison, as libignrt does
  ASSERT_EQ(l.run(error), 0) << error;
  EXPECT_EQ(l.tensor<float>(2), first);
  // New inputs in the pooled buffers, the cached pipeline reused.
  l.tensors[0] = l.tensors[1];
  ASSERT_EQ(l.run(error), 0) << error;
  std::vector<float> b = l.tensor<float>(1), out = l.tensor<float>(2);
  for (size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(out[i], b[i] + b[i]) << "element " << i;
}

/// The runtime's call that ends a run with launches deferred (kernel NULL).
int finishDeferred(std::string &error) {
  ignrt_device_call call{};
  ignrt_device_stats stats{};
  return runVulkanCall(call, stats, error);
}

class DeferredLaunchTest : public VulkanDeviceTest {
protected:
  void SetUp() override {
    VulkanDeviceTest::SetUp();
    if (!IsSkipped() && !info.timestamps)
      GTEST_SKIP() << info.name << " has no timestamps: nothing is deferred";
  }

  /// t = a + b kept on the device (deferred), then out = t * c from it.
  void chain(Launch &first, Launch &second) {
    first = binaryLaunch("add", kElements);
    first.resident = {IGNRT_RESIDENT_HOST, IGNRT_RESIDENT_HOST, IGNRT_RESIDENT};
    first.mayDefer = 1;
    second = binaryLaunch("mul", kElements);
    second.resident = {IGNRT_RESIDENT_LAST, IGNRT_RESIDENT_HOST,
                       IGNRT_RESIDENT_HOST};
    second.shared = {&first.tensors[2], nullptr, nullptr};
  }

  void expectProduct(const Launch &first, const Launch &second) {
    std::vector<float> a = first.tensor<float>(0), b = first.tensor<float>(1),
                       c = second.tensor<float>(1),
                       out = second.tensor<float>(2);
    for (size_t i = 0; i < kElements; ++i)
      ASSERT_EQ(out[i], (a[i] + b[i]) * c[i]) << "element " << i;
  }

  static constexpr size_t kElements = 500;
};

/// A launch whose outputs stay on the device returns before it runs; the
/// next launch, which copies its result to the host, submits both.
TEST_F(DeferredLaunchTest, RunsWithTheNextLaunchThatCopiesBack) {
  Launch first, second;
  chain(first, second);
  std::string error;
  ASSERT_EQ(first.run(error), 0) << error;
  EXPECT_EQ(first.deferred, 1);
  EXPECT_EQ(first.stats.device_ns, 0.0); // not run yet
  EXPECT_EQ(first.tensor<float>(2), std::vector<float>(kElements, -1.0f));
  ASSERT_EQ(second.run(error), 0) << error;
  EXPECT_EQ(second.deferred, 0);
  expectProduct(first, second);
  EXPECT_GT(first.stats.device_ns, 0.0); // its own timestamps, filled late
  EXPECT_GT(second.stats.device_ns, 0.0);
  // The same again: the kernels' buffers and pipelines are reused.
  ASSERT_EQ(first.run(error), 0) << error;
  EXPECT_EQ(first.deferred, 1);
  ASSERT_EQ(second.run(error), 0) << error;
  expectProduct(first, second);
}

/// A call of a kernel whose launch waits in the batch submits the batch
/// first (its descriptor sets change); a run that stops is finished by the
/// runtime's call with no kernel.
TEST_F(DeferredLaunchTest, RunsBeforeItsKernelIsCalledAgainOrWhenFinished) {
  Launch first, second;
  chain(first, second);
  std::string error;
  ASSERT_EQ(first.run(error), 0) << error;
  ASSERT_EQ(first.deferred, 1);
  Launch again = first; // the same kernel, its output on the host
  again.resident.clear();
  again.mayDefer = 0;
  ASSERT_EQ(again.run(error), 0) << error;
  EXPECT_GT(first.stats.device_ns, 0.0);
  ASSERT_EQ(first.run(error), 0) << error;
  ASSERT_EQ(first.deferred, 1);
  ASSERT_EQ(finishDeferred(error), 0) << error;
  EXPECT_GT(first.stats.device_ns, 0.0);
  ASSERT_EQ(finishDeferred(error), 0) << error; // nothing left: a no-op
  ASSERT_EQ(second.run(error), 0) << error;     // t was computed
  expectProduct(first, second);
}

/// A failing call submits the open batch first: its launches may be another
/// session's, whose next launches read their outputs.
TEST_F(DeferredLaunchTest, FailedCallRunsTheBatch) {
  Launch first, second;
  chain(first, second);
  std::string error;
  ASSERT_EQ(first.run(error), 0) << error;
  ASSERT_EQ(first.deferred, 1);
  Launch bad = binaryLaunch("add", 16);
  EXPECT_NE(bad.runText("{\"format\": \"spirv\"}", error), 0);
  EXPECT_GT(first.stats.device_ns, 0.0);        // it ran
  ASSERT_EQ(finishDeferred(error), 0) << error; // nothing left: a no-op
  ASSERT_EQ(second.run(error), 0) << error;     // reads what it made
  expectProduct(first, second);
}

/// A bundle's weights (ignrt_device_call::weights) go to the device once:
/// the same address in the same bundle (epoch) is not copied again; another
/// bundle's is, and other arguments are copied on every call.
TEST_F(VulkanDeviceTest, WeightsAreCopiedOncePerBundle) {
  Launch l = binaryLaunch("add", 300);
  l.weights = {0, 1, 0};              // b is a weight
  l.weightsEpoch = uint64_t(1) << 40; // no bundle of this process has it
  std::string error;
  ASSERT_EQ(l.run(error), 0) << error;
  std::vector<float> a = l.tensor<float>(0), b = l.tensor<float>(1);
  // The weight changed in place (a bundle's never does): the device keeps
  // its first copy, while the new input goes in.
  std::vector<float> b2(b.size(), 100.0f), a2(a.size(), 1.0f);
  std::memcpy(l.tensors[1].data(), b2.data(), l.tensors[1].size());
  std::memcpy(l.tensors[0].data(), a2.data(), l.tensors[0].size());
  ASSERT_EQ(l.run(error), 0) << error;
  std::vector<float> out = l.tensor<float>(2);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], a2[i] + b[i]) << "element " << i;
  // Another bundle at the same address: copied again.
  l.weightsEpoch += 1;
  ASSERT_EQ(l.run(error), 0) << error;
  out = l.tensor<float>(2);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out[i], a2[i] + b2[i]) << "element " << i;
}

TEST_F(VulkanDeviceTest, CacheKeyIncludesTheBlobsContents) {
  // The same kernel name and descriptor (add and mul have one size and
  // entry name), another module: it must not run add's pipeline.
  Launch add = binaryLaunch("add", 200), mul = binaryLaunch("mul", 200);
  ASSERT_EQ(add.descriptor, mul.descriptor);
  std::string why;
  add.kernel = mul.kernel = "same_name";
  ASSERT_EQ(add.run(why), 0) << why;
  ASSERT_EQ(mul.run(why), 0) << why;
  std::vector<float> a = mul.tensor<float>(0), b = mul.tensor<float>(1),
                     out = mul.tensor<float>(2), sum = add.tensor<float>(2);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(out[i], a[i] * b[i]) << "element " << i;
    ASSERT_EQ(sum[i], a[i] + b[i]) << "element " << i;
  }
}

TEST_F(VulkanDeviceTest, BufferGrowsWithTheArguments) {
  // The same kernel (descriptor and blob) with larger arguments: the
  // pooled buffers must grow and the shader see the new lengths.
  for (size_t n : {64, 4096, 100}) {
    Launch l = binaryLaunch("add", n);
    l.descriptor["dispatches"][0]["groups"] = {64, 1, 1};
    std::string error;
    ASSERT_EQ(l.run(error), 0) << error;
    std::vector<float> a = l.tensor<float>(0), b = l.tensor<float>(1),
                       out = l.tensor<float>(2);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], a[i] + b[i]) << "n " << n << " element " << i;
  }
}

TEST_F(VulkanDeviceTest, UnboundArgumentsAreNotTouched) {
  Launch l = binaryLaunch("add", 64);
  l.addTensor(std::vector<float>(8, 42.0f)); // a second output, unbound
  l.results = 2;
  std::string error;
  ASSERT_EQ(l.run(error), 0) << error;
  EXPECT_EQ(l.tensor<float>(3), std::vector<float>(8, 42.0f));
}

TEST_F(VulkanDeviceTest, CallsFromManyThreads) {
  std::string why;
  assemble("add", why); // fills assemble's cache before the threads read it
  assemble("mul", why);
  ASSERT_TRUE(why.empty()) << why;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 10 && errors[t].empty(); ++k) {
        Launch l = binaryLaunch(t % 2 ? "mul" : "add", 100 + 37 * t);
        std::string error;
        if (l.run(error)) {
          errors[t] = error;
          break;
        }
        std::vector<float> a = l.tensor<float>(0), b = l.tensor<float>(1),
                           out = l.tensor<float>(2);
        for (size_t i = 0; i < a.size(); ++i)
          if (out[i] != (t % 2 ? a[i] * b[i] : a[i] + b[i]))
            errors[t] = "wrong element " + std::to_string(i);
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    EXPECT_EQ(e, "");
}

/// Runs \p l and expects an error mentioning every one of \p needles.
void expectError(Launch &l, const std::string &text,
                 std::vector<std::string> needles) {
  std::string error;
  EXPECT_NE(l.runText(text, error), 0);
  EXPECT_NE(error.find("vulkan kernel 'test_kernel'"), std::string::npos)
      << error;
  for (const std::string &n : needles)
    EXPECT_NE(error.find(n), std::string::npos)
        << "'" << n << "' not in: " << error;
}

TEST_F(VulkanDeviceTest, BadDescriptorsAreErrors) {
  Launch l = binaryLaunch("add", 64);
  json good = l.descriptor;
  auto with = [&](const char *key, json value) {
    json d = good;
    d["dispatches"][0][key] = value;
    return d.dump();
  };
  size_t size = l.blob.size();
  expectError(l, with("offset", size), {"dispatch 0", "beyond the blob"});
  expectError(l, with("bytes", size + 4), {"beyond the blob"});
  expectError(l, with("bytes", size - 2), {"multiple of 4"});
  expectError(l, with("bindings", {{{"arg", 0}}, {{"arg", 1}}, {{"arg", 3}}}),
              {"binding 2", "argument index 3", "out of range"});
  expectError(l, with("bindings", {{{"arg", 0}}, {{"scratch", 0}}}),
              {"binding 1", "scratch index 0", "out of range"});
  expectError(l, with("bindings", {{{"arg", 0}}, {{"arg", 1}}}),
              {"uses binding 2", "lists 2 bindings"});
  expectError(l, with("bindings", {{{"arg", 0}}, {{"const", 0}}, {{"arg", 2}}}),
              {"binding 1", "constant index 0", "out of range"});
  expectError(l, with("bindings", {{{"arg", 0}}, {{"arg", 1}, {"const", 0}}}),
              {"binding 1", "is not {\"arg\": N}"});
  json constant = good;
  constant["constants"] = {{{"offset", size - 4}, {"bytes", 8}}};
  expectError(l, constant.dump(), {"constant 0", "slice of the"});
  expectError(l, with("entry", "nope"), {"no GLCompute entry point", "'nope'"});
  expectError(l, with("groups", {1, 0, 1}), {"\"groups\""});
  expectError(l,
              with("groups", {uint64_t(info.maxWorkgroupCount[0]) + 1, 1, 1}),
              {"maximum workgroup count"});
  expectError(l, with("local", {uint64_t(info.maxInvocations) * 2, 1, 1}),
              {"workgroup size"});
  expectError(l, with("local", {32, 1, 1}), {"differs", "LocalSize"});
  json missing = good;
  missing["dispatches"][0].erase("bindings");
  expectError(l, missing.dump(), {"\"bindings\" is missing"});
  expectError(l, "{\"format\": \"spirv\", \"dispatches\": [", {"not JSON"});
  expectError(l, "[1, 2]", {"not a JSON object"});
  expectError(l, "{\"format\": \"ptx\", \"dispatches\": []}", {"format"});
  // After all that the driver still runs good launches.
  std::string error;
  EXPECT_EQ(l.run(error), 0) << error;
}

TEST_F(VulkanDeviceTest, BadBlobIsAnError) {
  Launch l = binaryLaunch("add", 64);
  std::vector<uint8_t> good = l.blob;
  l.blob[0] ^= 0xFF; // the magic number
  expectError(l, l.descriptor.dump(), {"not a SPIR-V module"});
  l.blob = good;
  l.blob[22] = l.blob[23] = 0xFF; // the first instruction's word count
  expectError(l, l.descriptor.dump(), {"malformed SPIR-V"});
}

TEST_F(VulkanDeviceTest, MoreResultsThanArgumentsIsAnError) {
  Launch l = binaryLaunch("add", 64);
  l.results = 4;
  expectError(l, l.descriptor.dump(), {"4 results but 3 arguments"});
}

//===----------------------------------------------------------------------===//
// Fresh processes: the loader and the device are chosen once per process,
// so the environment variables that steer them are tested in a child (this
// same binary, caught by the hook below before gtest's main).
//===----------------------------------------------------------------------===//

/// A module with just a GLCompute entry point "main": it passes the
/// driver's checks, so a launch of it reaches the loader without spirv-as.
std::vector<uint8_t> minimalModule() {
  const uint32_t words[] = {0x07230203,      0x00010300, 0, 2,          0,
                            (5u << 16) | 15, 5,          1, 0x6e69616d, 0};
  const uint8_t *p = reinterpret_cast<const uint8_t *>(words);
  return std::vector<uint8_t>(p, p + sizeof words);
}

/// The child's work: probe, then run a launch, printing what each says.
int childMain() {
  VulkanDeviceInfo info;
  std::string why;
  if (probeVulkanDevice(info, why))
    std::printf("probe: ok %s; memory: %s\n", info.name.c_str(),
                info.memory.c_str());
  else
    std::printf("probe: %s\n", why.c_str());
  Launch l;
  std::string assembleError;
  l.blob = assemble("add", assembleError);
  if (l.blob.empty()) // enough to get past the descriptor checks
    l.blob = minimalModule();
  l.descriptor = {{"format", "spirv"},
                  {"dispatches",
                   {dispatchJson("main", 0, l.blob.size(), 1, 64,
                                 {{{"arg", 0}}, {{"arg", 1}}, {{"arg", 2}}})}}};
  for (int i = 0; i < 3; ++i)
    l.addTensor(std::vector<float>(64, 1.0f));
  std::string error;
  int rc = l.run(error);
  bool right = true;
  if (!rc && !assembleError.size())
    for (float v : l.tensor<float>(2))
      right &= v == 2.0f;
  std::printf("run: %s\n", rc ? error.c_str() : right ? "ok" : "wrong sums");
  std::fflush(stdout);
  return 0;
}

const bool isChild = [] {
  if (std::getenv("IGN_VULKAN_TEST_CHILD"))
    std::exit(childMain());
  return false;
}();

/// Runs this binary as a child with \p env added; its output.
std::string runChild(const std::vector<std::string> &env, int &status) {
  std::vector<std::string> strings(env);
  strings.push_back("IGN_VULKAN_TEST_CHILD=1");
  for (char **e = environ; *e; ++e)
    if (std::strncmp(*e, "IGN_VULKAN_", 11))
      strings.push_back(*e);
  std::vector<char *> envp;
  for (std::string &s : strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  int fds[2];
  if (pipe(fds))
    return "pipe failed";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  char self[] = "/proc/self/exe";
  char *argv[] = {self, nullptr};
  pid_t pid = 0;
  int err = posix_spawn(&pid, self, &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;)
    out.append(buffer, size_t(n));
  close(fds[0]);
  if (err)
    return "posix_spawn failed: " + std::string(std::strerror(err));
  waitpid(pid, &status, 0);
  return out;
}

TEST(VulkanLoaderTest, MissingLoaderIsAClearError) {
  (void)isChild;
  int status = -1;
  std::string out =
      runChild({"IGN_VULKAN_LOADER=/nonexistent/libvulkan.so.1"}, status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the child crashed (status " << status << "): " << out;
  const char *expected[] = {
      "probe: cannot load /nonexistent/libvulkan.so.1 (",
      "install libvulkan1 and a Vulkan driver such as mesa-vulkan-drivers",
      "run: vulkan kernel 'test_kernel': cannot load /nonexistent/"};
  for (const char *e : expected)
    EXPECT_NE(out.find(e), std::string::npos) << e << "\nnot in:\n" << out;
}

TEST_F(VulkanDeviceTest, NoDriverIsAClearError) {
  // A loader with no driver (ICD) to load.
  int status = -1;
  std::string out = runChild({"VK_ICD_FILENAMES=/nonexistent/icd.json",
                              "VK_DRIVER_FILES=/nonexistent/icd.json"},
                             status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("install mesa-vulkan-drivers or your GPU's Vulkan "
                     "driver"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("run: vulkan kernel 'test_kernel': "), std::string::npos)
      << out;
}

TEST_F(VulkanDeviceTest, DeviceChosenByEnvironment) {
  int status = -1;
  std::string out = runChild({"IGN_VULKAN_DEVICE=no-such-gpu"}, status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_NE(out.find("probe: IGN_VULKAN_DEVICE=no-such-gpu names none of "
                     "the Vulkan devices"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find(info.name), std::string::npos) << out; // listed
  // By a substring of its name, in another case.
  std::string part = info.name.substr(0, 4);
  for (char &c : part)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  out = runChild({"IGN_VULKAN_DEVICE=" + part}, status);
  EXPECT_NE(out.find("probe: ok " + info.name), std::string::npos) << out;
  EXPECT_NE(out.find("run: ok"), std::string::npos) << out;
}

/// IGN_VULKAN_MEMORY chooses where buffers live; each mode computes the
/// same sums, and an unknown mode is an error for the probe and the launch.
TEST_F(VulkanDeviceTest, MemoryChosenByEnvironment) {
  const std::pair<const char *, const char *> modes[] = {
      {"staged", "memory: device-local, staged (IGN_VULKAN_MEMORY=staged)"},
      {"host", "memory: host-visible, mapped (IGN_VULKAN_MEMORY=host)"},
      {"auto", "memory: "}};
  for (auto [mode, expected] : modes) {
    int status = -1;
    std::string out =
        runChild({std::string("IGN_VULKAN_MEMORY=") + mode}, status);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
    EXPECT_NE(out.find(expected), std::string::npos) << mode << ": " << out;
    EXPECT_NE(out.find("run: ok"), std::string::npos) << mode << ": " << out;
  }
  int status = -1;
  std::string out = runChild({"IGN_VULKAN_MEMORY=vram"}, status);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  const char *message = "IGN_VULKAN_MEMORY=vram is none of auto, staged, host";
  EXPECT_NE(out.find(std::string("probe: ") + message), std::string::npos)
      << out;
  EXPECT_NE(
      out.find(std::string("run: vulkan kernel 'test_kernel': ") + message),
      std::string::npos)
      << out;
}

} // namespace
