//===- RuntimeTest.cpp - libignrt refuses bundles it must not run ---------===//

#include "ign/Bundle/BundleFormat.h"
#include "ign/Bundle/BundleWriter.h"
#include "ign/Runtime/ignrt.h"

#include <gtest/gtest.h>

#include <cstring>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::string tempPath(const char *name) {
  return (testing::TempDir() + "/ignrt-" + name + ".ignb");
}

ign::bundle::BundleContents minimal(const std::string &target,
                                    const std::string &triple) {
  ign::bundle::BundleContents c;
  c.targetName = target;
  c.triple = triple;
  c.cpu = "generic";
  c.inputs = {{"x", "f32", {2}}};
  c.outputs = {{"y", "f32", {2}}};
  c.kernels = {{"k0", "ign_k0", R"({"kind": "reference"})", {"ign.relu"}}};
  ign::bundle::LaunchSpec launch;
  launch.args = {{"input", 0, 0, "f32", {2}}, {"output", 0, 0, "f32", {2}}};
  c.launches = {launch};
  c.artifact = "not an ELF file";
  return c;
}

ignrt_status open(const std::string &path, std::string &message) {
  ignrt_bundle *b = nullptr;
  ignrt_status s = ignrt_bundle_open(path.c_str(), &b);
  message = ignrt_last_error();
  ignrt_bundle_close(b);
  return s;
}

TEST(Runtime, RefusesABundleForAnotherTarget) {
  std::string path = tempPath("cuda");
  ASSERT_EQ(ign::bundle::writeBundle(path, minimal("cuda", "nvptx64")), "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_TARGET);
  EXPECT_NE(message.find("built for target 'cuda'"), std::string::npos)
      << message;
}

/// A bundle whose only kernel runs on device "testdev": y = 2 * x, with the
/// device blob "blob!".
ign::bundle::BundleContents deviceBundle() {
  ign::bundle::BundleContents c = minimal("testdev", "x86_64-pc-linux-gnu");
#if !defined(__x86_64__)
  c.triple = "aarch64-unknown-linux-gnu";
#endif
  c.kernels[0].symbol = "";
  c.kernels[0].device = "testdev";
  c.kernels[0].deviceJson = R"({"factor": 2})";
  c.kernels[0].deviceBlob = "blob!";
  c.artifact.clear(); // no host kernel: no host artifact
  return c;
}

struct DriverLog {
  int calls = 0;
  std::string descriptor, blob;
  size_t args = 0, results = 0;
  bool fail = false;
};

int testDriver(void *user, const ignrt_device_call *call,
               ignrt_device_stats *stats, char *error, size_t errorSize) {
  auto *log = static_cast<DriverLog *>(user);
  ++log->calls;
  log->descriptor = call->descriptor;
  log->blob.assign(static_cast<const char *>(call->blob), call->blob_bytes);
  log->args = call->num_args;
  log->results = call->results;
  if (log->fail) {
    std::snprintf(error, errorSize, "the test device is on fire");
    return 1;
  }
  const float *x = static_cast<const float *>(call->data[0]);
  float *y = static_cast<float *>(call->data[1]);
  for (int i = 0; i < 2; ++i)
    y[i] = 2 * x[i];
  stats->cycles = 1234;
  stats->device_ns = 617;
  stats->utilization = 0.5;
  return 0;
}

struct WeightLog {
  std::vector<std::vector<unsigned char>> flags;
  std::vector<uint64_t> epochs;
};

int weightDriver(void *user, const ignrt_device_call *call,
                 ignrt_device_stats *, char *, size_t) {
  auto *log = static_cast<WeightLog *>(user);
  log->flags.emplace_back(call->weights, call->weights + call->num_args);
  log->epochs.push_back(call->weights_epoch);
  const float *x = static_cast<const float *>(call->data[0]);
  const float *w = static_cast<const float *>(call->data[1]);
  float *y = static_cast<float *>(call->data[2]);
  for (int i = 0; i < 2; ++i)
    y[i] = w[i] * x[i];
  return 0;
}

/// A driver learns which arguments are the bundle's weights (the same
/// bytes on every run: it may copy them to the device once) and an epoch
/// unique to the opened bundle, which keys such copies.
TEST(Runtime, DeviceCallsMarkTheBundlesWeights) {
  ign::bundle::BundleContents c = deviceBundle();
  static const float w[2] = {3.0f, 5.0f};
  c.weights.push_back(
      {{"w", "f32", {2}},
       std::string_view(reinterpret_cast<const char *>(w), sizeof w)});
  c.launches[0].args = {{"input", 0, 0, "f32", {2}},
                        {"weight", 0, 0, "f32", {2}},
                        {"output", 0, 0, "f32", {2}}};
  std::string path = tempPath("weights");
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  WeightLog log;
  ASSERT_EQ(ignrt_register_device("testdev", weightDriver, &log), IGNRT_OK);
  std::vector<uint64_t> bundleEpochs;
  for (int open = 0; open < 2; ++open) {
    ignrt_bundle *b = nullptr;
    ASSERT_EQ(ignrt_bundle_open(path.c_str(), &b), IGNRT_OK)
        << ignrt_last_error();
    ignrt_session *s = nullptr;
    ASSERT_EQ(ignrt_session_create(b, 1, &s), IGNRT_OK);
    float x[2] = {1.0f, 2.0f};
    int64_t dims[1] = {2};
    ASSERT_EQ(ignrt_session_set_input(s, "x", IGNRT_F32, dims, 1, x, sizeof x),
              IGNRT_OK);
    for (int run = 0; run < 2; ++run)
      ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
    const void *out;
    size_t bytes;
    ASSERT_EQ(ignrt_session_output(s, "y", &out, &bytes), IGNRT_OK);
    EXPECT_EQ(static_cast<const float *>(out)[1], 10.0f);
    // The weights section (what measurements evict from the caches) holds
    // the weight's bytes where the driver was handed them.
    const void *section = nullptr;
    size_t sectionBytes = 0;
    ASSERT_EQ(ignrt_bundle_weights(b, &section, &sectionBytes), IGNRT_OK);
    ASSERT_GE(sectionBytes, sizeof w);
    EXPECT_EQ(std::memcmp(section, w, sizeof w), 0);
    ignrt_session_destroy(s);
    ignrt_bundle_close(b);
    ASSERT_EQ(log.epochs.size(), size_t(2 * (open + 1)));
    EXPECT_EQ(log.epochs[2 * open], log.epochs[2 * open + 1]); // one bundle
    bundleEpochs.push_back(log.epochs.back());
  }
  ASSERT_EQ(ignrt_register_device("testdev", nullptr, nullptr), IGNRT_OK);
  for (const std::vector<unsigned char> &f : log.flags)
    EXPECT_EQ(f, (std::vector<unsigned char>{0, 1, 0}));
  EXPECT_NE(bundleEpochs[0], 0u);
  EXPECT_NE(bundleEpochs[0], bundleEpochs[1]); // each opened bundle its own
}

TEST(Runtime, DeviceKernelsRunThroughTheRegisteredDriver) {
  std::string path = tempPath("device");
  ASSERT_EQ(ign::bundle::writeBundle(path, deviceBundle()), "");
  // No driver: refused at open, naming the target.
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_TARGET);
  EXPECT_NE(message.find("target 'testdev' and no driver"), std::string::npos)
      << message;
  EXPECT_EQ(ignrt_register_device("host", testDriver, nullptr),
            IGNRT_ERROR_ARGUMENT);

  DriverLog log;
  ASSERT_EQ(ignrt_register_device("testdev", testDriver, &log), IGNRT_OK);
  ignrt_bundle *b = nullptr;
  ASSERT_EQ(ignrt_bundle_open(path.c_str(), &b), IGNRT_OK)
      << ignrt_last_error();
  ignrt_session *s = nullptr;
  ASSERT_EQ(ignrt_session_create(b, 1, &s), IGNRT_OK);
  float x[2] = {1.5f, -3.0f};
  int64_t dims[1] = {2};
  ASSERT_EQ(ignrt_session_set_input(s, "x", IGNRT_F32, dims, 1, x, sizeof x),
            IGNRT_OK);
  ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
  const void *out;
  size_t bytes;
  ASSERT_EQ(ignrt_session_output(s, "y", &out, &bytes), IGNRT_OK);
  EXPECT_EQ(static_cast<const float *>(out)[0], 3.0f);
  EXPECT_EQ(static_cast<const float *>(out)[1], -6.0f);
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.blob, "blob!");
  EXPECT_NE(log.descriptor.find("\"factor\":2"), std::string::npos)
      << log.descriptor;
  EXPECT_EQ(log.args, 2u);
  EXPECT_EQ(log.results, 1u);
  ignrt_device_stats stats;
  ASSERT_EQ(ignrt_session_kernel_device(s, 0, &stats), IGNRT_OK);
  EXPECT_EQ(stats.cycles, 1234);
  EXPECT_EQ(stats.utilization, 0.5);
  EXPECT_EQ(ignrt_session_kernel_device(s, 1, &stats), IGNRT_ERROR_ARGUMENT);

  // A failing driver fails the run with its message.
  log.fail = true;
  EXPECT_EQ(ignrt_session_run(s), IGNRT_ERROR_RUNTIME);
  EXPECT_NE(std::string(ignrt_last_error())
                .find("device kernel 'k0' failed: the test device is on fire"),
            std::string::npos)
      << ignrt_last_error();
  ignrt_session_destroy(s);
  ignrt_bundle_close(b);
  // Unregistered again: refused again.
  ASSERT_EQ(ignrt_register_device("testdev", nullptr, nullptr), IGNRT_OK);
  EXPECT_EQ(open(path, message), IGNRT_ERROR_TARGET);
}

/// A session of a bundle whose kernels run on the test driver, its input x
/// set to {1.5, -3}; closed and the driver unregistered at the end.
struct DeviceSession {
  DriverLog log;
  ignrt_bundle *bundle = nullptr;
  ignrt_session *session = nullptr;

  void open(const std::string &path, ignrt_device_fn driver = testDriver,
            void *user = nullptr) {
    ASSERT_EQ(ignrt_register_device("testdev", driver, user ? user : &log),
              IGNRT_OK);
    ASSERT_EQ(ignrt_bundle_open(path.c_str(), &bundle), IGNRT_OK)
        << ignrt_last_error();
    ASSERT_EQ(ignrt_session_create(bundle, 1, &session), IGNRT_OK);
    float x[2] = {1.5f, -3.0f};
    int64_t dims[1] = {2};
    ASSERT_EQ(
        ignrt_session_set_input(session, "x", IGNRT_F32, dims, 1, x, sizeof x),
        IGNRT_OK);
  }
  ~DeviceSession() {
    ignrt_session_destroy(session);
    ignrt_bundle_close(bundle);
    ignrt_register_device("testdev", nullptr, nullptr);
  }
};

/// A driver that defers what it may (ignrt_device_call::may_defer): each
/// launch doubles its input; a deferred one runs, and gets its stats, in the
/// driver's next call.
struct DeferringDriver {
  std::vector<int> mayDefer; // per launch call
  int finishes = 0;          // calls with kernel NULL
  bool failUndeferred = false;
  const float *pendingIn = nullptr;
  float *pendingOut = nullptr;
  ignrt_device_stats *pendingStats = nullptr;

  void runPending() {
    if (!pendingOut)
      return;
    for (int i = 0; i < 2; ++i)
      pendingOut[i] = 2 * pendingIn[i];
    pendingStats->cycles = 111;
    pendingOut = nullptr;
  }
};

int deferringDriver(void *user, const ignrt_device_call *call,
                    ignrt_device_stats *stats, char *error, size_t errorSize) {
  auto *d = static_cast<DeferringDriver *>(user);
  if (!call->kernel) {
    ++d->finishes;
    d->runPending();
    return 0;
  }
  d->mayDefer.push_back(call->may_defer);
  if (call->may_defer && call->deferred) {
    d->pendingIn = static_cast<const float *>(call->data[0]);
    d->pendingOut = static_cast<float *>(call->data[1]);
    d->pendingStats = stats;
    *call->deferred = 1;
    return 0;
  }
  if (d->failUndeferred) {
    std::snprintf(error, errorSize, "the second launch fails");
    return 1;
  }
  d->runPending();
  const float *x = static_cast<const float *>(call->data[0]);
  float *y = static_cast<float *>(call->data[1]);
  for (int i = 0; i < 2; ++i)
    y[i] = 2 * x[i];
  stats->cycles = 222;
  return 0;
}

/// Launch 0 writes an intermediate only launch 1 (the same driver) reads:
/// the runtime lets the driver defer it (its outputs stay on the device),
/// keeps its stats where the driver fills them later, and ends a run that
/// stops after a deferred launch with the driver's finishing call.
TEST(Runtime, DeviceLaunchesWhoseOutputsStayOnTheDeviceMayBeDeferred) {
  ign::bundle::BundleContents c = deviceBundle();
  c.arenaBytes = 8;
  ign::bundle::LaunchSpec first, second;
  first.args = {{"input", 0, 0, "f32", {2}}, {"arena", 0, 0, "f32", {2}}};
  second.args = {{"arena", 0, 0, "f32", {2}}, {"output", 0, 0, "f32", {2}}};
  c.launches = {first, second};
  std::string path = tempPath("deferred");
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  DeferringDriver driver;
  DeviceSession d;
  ASSERT_NO_FATAL_FAILURE(d.open(path, deferringDriver, &driver));
  ignrt_session *s = d.session;
  ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
  const void *out;
  size_t bytes;
  ASSERT_EQ(ignrt_session_output(s, "y", &out, &bytes), IGNRT_OK);
  EXPECT_EQ(static_cast<const float *>(out)[0], 6.0f);
  EXPECT_EQ(static_cast<const float *>(out)[1], -12.0f);
  EXPECT_EQ(driver.mayDefer, (std::vector<int>{1, 0}));
  EXPECT_EQ(driver.finishes, 0); // launch 1 ran what launch 0 deferred
  ignrt_device_stats stats;
  ASSERT_EQ(ignrt_session_kernel_device(s, 0, &stats), IGNRT_OK);
  EXPECT_EQ(stats.cycles, 111); // filled after launch 0 returned
  ASSERT_EQ(ignrt_session_kernel_device(s, 1, &stats), IGNRT_OK);
  EXPECT_EQ(stats.cycles, 222);

  // Launch 1 fails: the run still ends with the driver's finishing call,
  // and reports launch 1's error.
  driver.failUndeferred = true;
  EXPECT_EQ(ignrt_session_run(s), IGNRT_ERROR_RUNTIME);
  EXPECT_NE(std::string(ignrt_last_error()).find("the second launch fails"),
            std::string::npos)
      << ignrt_last_error();
  EXPECT_EQ(driver.finishes, 1);
}

/// deviceBundle() with a bool input `c`: launch 1 (y = 2x on the device)
/// runs when c is true, else launch 3 copies x into y.
ign::bundle::BundleContents branchBundle() {
  using Kind = ign::bundle::LaunchSpec::Kind;
  ign::bundle::BundleContents c = deviceBundle();
  c.inputs.push_back({"c", "bool", {}});
  ign::bundle::LaunchSpec branch, jump, copy;
  branch.kind = Kind::Branch;
  branch.args = {{"input", 1, 0, "bool", {}}};
  branch.to = 3;
  jump.kind = Kind::Jump;
  jump.to = 4;
  copy.kind = Kind::Copy;
  copy.args = {{"input", 0, 0, "f32", {2}}, {"output", 0, 0, "f32", {2}}};
  c.launches = {branch, c.launches[0], jump, copy};
  return c;
}

TEST(Runtime, BranchLaunchesRunOneSideOnTheCondition) {
  std::string path = tempPath("branch");
  ASSERT_EQ(ign::bundle::writeBundle(path, branchBundle()), "");
  DeviceSession d;
  ASSERT_NO_FATAL_FAILURE(d.open(path));
  ignrt_session *s = d.session;
  DriverLog &log = d.log;
  for (bool cond : {true, false, true}) {
    ASSERT_EQ(ignrt_session_set_input(s, "c", IGNRT_BOOL, nullptr, 0, &cond,
                                      sizeof cond),
              IGNRT_OK);
    int callsBefore = log.calls;
    ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
    const void *out;
    size_t bytes;
    ASSERT_EQ(ignrt_session_output(s, "y", &out, &bytes), IGNRT_OK);
    float scale = cond ? 2.0f : 1.0f;
    EXPECT_EQ(static_cast<const float *>(out)[0], 1.5f * scale);
    EXPECT_EQ(static_cast<const float *>(out)[1], -3.0f * scale);
    EXPECT_EQ(log.calls - callsBefore, cond ? 1 : 0);
    // Launches the branch skipped report no time.
    const char *name;
    double ns = -1;
    ASSERT_EQ(ignrt_session_kernel_timing(s, cond ? 3 : 1, &name, &ns),
              IGNRT_OK);
    EXPECT_EQ(ns, 0.0) << name;
  }
}

TEST(Runtime, RefusesBranchesThatDoNotGoForward) {
  DriverLog log;
  ASSERT_EQ(ignrt_register_device("testdev", testDriver, &log), IGNRT_OK);
  std::string path = tempPath("branch-bad");
  std::string message;
  auto c = branchBundle();
  c.launches[2].to = 1; // a jump back: a run that may never end
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("launch 2 (jump) must go on at a later launch"),
            std::string::npos)
      << message;
  c = branchBundle();
  c.launches[0].to = 9; // past the end
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  c = branchBundle();
  c.launches[0].args.push_back(c.launches[0].args[0]); // two conditions
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("one condition element"), std::string::npos)
      << message;
  ASSERT_EQ(ignrt_register_device("testdev", nullptr, nullptr), IGNRT_OK);
}

/// deviceBundle() as a loop: y = x, then n times (while input c is true)
/// y = 2 y through the device kernel. The iteration lives at arena+0, the
/// kernel's result at arena+64.
ign::bundle::BundleContents loopBundle() {
  using Kind = ign::bundle::LaunchSpec::Kind;
  ign::bundle::BundleContents c = deviceBundle();
  c.inputs.push_back({"n", "i64", {}});
  c.inputs.push_back({"c", "bool", {}});
  c.arenaBytes = 128;
  ign::bundle::LaunchArg counter = {"arena", 0, 0, "i64", {}};
  ign::bundle::LaunchArg doubled = {"arena", 0, 64, "f32", {2}};
  ign::bundle::LaunchArg y = {"output", 0, 0, "f32", {2}};
  ign::bundle::LaunchSpec init, loop, kernel, back, next;
  init.kind = back.kind = Kind::Copy;
  init.args = {{"input", 0, 0, "f32", {2}}, y};
  loop.kind = Kind::Loop;
  loop.args = {
      counter, {"input", 2, 0, "bool", {}}, {"input", 1, 0, "i64", {}}};
  loop.to = 5;
  kernel.args = {y, doubled};
  back.args = {doubled, y};
  next.kind = Kind::Next;
  next.args = {counter};
  next.to = 1;
  c.launches = {init, loop, kernel, back, next};
  return c;
}

TEST(Runtime, LoopLaunchesRunTheBodyUntilTheTripCountOrCondition) {
  std::string path = tempPath("loop");
  ASSERT_EQ(ign::bundle::writeBundle(path, loopBundle()), "");
  DeviceSession d;
  ASSERT_NO_FATAL_FAILURE(d.open(path));
  ignrt_session *s = d.session;
  DriverLog &log = d.log;
  for (auto [n, cond] :
       {std::pair<int64_t, bool>{3, true}, {0, true}, {1, true}, {5, false}}) {
    ASSERT_EQ(
        ignrt_session_set_input(s, "n", IGNRT_I64, nullptr, 0, &n, sizeof n),
        IGNRT_OK);
    ASSERT_EQ(ignrt_session_set_input(s, "c", IGNRT_BOOL, nullptr, 0, &cond,
                                      sizeof cond),
              IGNRT_OK);
    int callsBefore = log.calls;
    ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
    int64_t trips = cond ? n : 0;
    EXPECT_EQ(log.calls - callsBefore, trips);
    const void *out;
    size_t bytes;
    ASSERT_EQ(ignrt_session_output(s, "y", &out, &bytes), IGNRT_OK);
    EXPECT_EQ(static_cast<const float *>(out)[1], -3.0f * float(1 << trips));
  }
}

TEST(Runtime, RefusesLoopsThatDoNotCloseAndSlicesPastTheEnd) {
  DriverLog log;
  ASSERT_EQ(ignrt_register_device("testdev", testDriver, &log), IGNRT_OK);
  std::string path = tempPath("loop-bad");
  std::string message;
  auto c = loopBundle();
  c.launches[4].to = 0; // back to a copy, not to its loop
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("must end the loop it goes back to"),
            std::string::npos)
      << message;
  c = loopBundle();
  c.launches[1].args[0].dtype = "f32"; // the iteration is an i64
  c.launches[1].args[0].shape = {2};
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  // A slice copy into y's 2 slices on every iteration: the third is refused
  // at run time instead of writing past y.
  c = loopBundle();
  c.launches[3].at = "to";
  c.launches[3].args = {{"input", 0, 0, "f32", {1}},
                        {"output", 0, 0, "f32", {2}},
                        {"arena", 0, 0, "i64", {}}};
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  ignrt_bundle *b = nullptr;
  ASSERT_EQ(ignrt_bundle_open(path.c_str(), &b), IGNRT_OK)
      << ignrt_last_error();
  ignrt_session *s = nullptr;
  ASSERT_EQ(ignrt_session_create(b, 1, &s), IGNRT_OK);
  float x[2] = {1.0f, 2.0f};
  int64_t dims[1] = {2}, n = 3;
  bool cond = true;
  ASSERT_EQ(ignrt_session_set_input(s, "x", IGNRT_F32, dims, 1, x, sizeof x),
            IGNRT_OK);
  ASSERT_EQ(ignrt_session_set_input(s, "n", IGNRT_I64, nullptr, 0, &n, 8),
            IGNRT_OK);
  ASSERT_EQ(ignrt_session_set_input(s, "c", IGNRT_BOOL, nullptr, 0, &cond, 1),
            IGNRT_OK);
  EXPECT_EQ(ignrt_session_run(s), IGNRT_ERROR_RUNTIME);
  EXPECT_NE(std::string(ignrt_last_error())
                .find("iteration 2 lies outside its scan tensor of 2 slices"),
            std::string::npos)
      << ignrt_last_error();
  ignrt_session_destroy(s);
  ignrt_bundle_close(b);
  ASSERT_EQ(ignrt_register_device("testdev", nullptr, nullptr), IGNRT_OK);
}

/// deviceBundle() with an output z of run-time size (bound [2, 3]): copies
/// of input d into z and of input n into z's shape output.
ign::bundle::BundleContents boundedBundle() {
  using Kind = ign::bundle::LaunchSpec::Kind;
  ign::bundle::BundleContents c = deviceBundle();
  c.inputs.push_back({"d", "f32", {2, 3}});
  c.inputs.push_back({"n", "i64", {2}});
  c.outputs.push_back({"z", "f32", {2, 3}});
  c.outputs.push_back({"z:shape", "i64", {2}, "z"});
  ign::bundle::LaunchSpec data, shape;
  data.kind = shape.kind = Kind::Copy;
  data.args = {{"input", 1, 0, "f32", {2, 3}}, {"output", 1, 0, "f32", {2, 3}}};
  shape.args = {{"input", 2, 0, "i64", {2}}, {"output", 2, 0, "i64", {2}}};
  c.launches.push_back(data);
  c.launches.push_back(shape);
  return c;
}

TEST(Runtime, OutputsOfRunTimeSizeArePackedToTheirActualShape) {
  std::string path = tempPath("bounded");
  ASSERT_EQ(ign::bundle::writeBundle(path, boundedBundle()), "");
  // Version 3 only where a version-2 reader would misread the bundle.
  EXPECT_EQ(ign::bundle::formatVersionOf(boundedBundle()), 3u);
  EXPECT_EQ(ign::bundle::formatVersionOf(deviceBundle()), 2u);
  DeviceSession d;
  ASSERT_NO_FATAL_FAILURE(d.open(path));
  ignrt_session *s = d.session;
  // The shape output is not one the caller sees; z's dims are its bound.
  ASSERT_EQ(ignrt_bundle_num_outputs(d.bundle), 2u);
  ignrt_tensor_info info;
  ASSERT_EQ(ignrt_bundle_output(d.bundle, 1, &info), IGNRT_OK);
  EXPECT_EQ(std::string(info.name), "z");
  EXPECT_EQ(info.bytes, 24u);
  const void *out;
  size_t bytes;
  EXPECT_EQ(ignrt_session_output(s, "z:shape", &out, &bytes),
            IGNRT_ERROR_ARGUMENT);
  float data[6] = {0, 1, 2, 10, 11, 12};
  int64_t dataDims[2] = {2, 3}, shapeDims[1] = {2};
  ASSERT_EQ(ignrt_session_set_input(s, "d", IGNRT_F32, dataDims, 2, data,
                                    sizeof data),
            IGNRT_OK);
  struct Case {
    int64_t actual[2];
    std::vector<float> want;
  } cases[] = {{{2, 2}, {0, 1, 10, 11}},
               {{1, 3}, {0, 1, 2}},
               {{2, 0}, {}},
               {{2, 3}, {0, 1, 2, 10, 11, 12}}};
  for (const Case &c : cases) {
    ASSERT_EQ(ignrt_session_set_input(s, "n", IGNRT_I64, shapeDims, 1, c.actual,
                                      sizeof c.actual),
              IGNRT_OK);
    ASSERT_EQ(ignrt_session_run(s), IGNRT_OK) << ignrt_last_error();
    ASSERT_EQ(ignrt_session_output_at(s, 1, &info, &out), IGNRT_OK);
    EXPECT_EQ(info.rank, 2u);
    EXPECT_EQ(info.dims[0], c.actual[0]);
    EXPECT_EQ(info.dims[1], c.actual[1]);
    ASSERT_EQ(info.bytes, c.want.size() * sizeof(float));
    const float *got = static_cast<const float *>(out);
    EXPECT_EQ(std::vector<float>(got, got + c.want.size()), c.want);
  }
  // A shape past the bound fails the run, naming the output.
  int64_t past[2] = {3, 1};
  ASSERT_EQ(ignrt_session_set_input(s, "n", IGNRT_I64, shapeDims, 1, past, 16),
            IGNRT_OK);
  EXPECT_EQ(ignrt_session_run(s), IGNRT_ERROR_RUNTIME);
  EXPECT_NE(std::string(ignrt_last_error()).find("output 'z'"),
            std::string::npos)
      << ignrt_last_error();
}

TEST(Runtime, RefusesAShapeOutputThatDescribesNoOutput) {
  std::string path = tempPath("bounded-bad");
  ign::bundle::BundleContents c = boundedBundle();
  c.outputs[2].shapeOf = "nothing";
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  ASSERT_EQ(ignrt_register_device("testdev", testDriver, nullptr), IGNRT_OK);
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("shape of exactly one output named 'nothing'"),
            std::string::npos)
      << message;
  c = boundedBundle();
  c.outputs[2].shape = {3}; // not the rank of z
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  ignrt_register_device("testdev", nullptr, nullptr);
}

TEST(Runtime, RefusesABundleForAnotherArchitecture) {
#if defined(__x86_64__)
  const char *other = "aarch64-unknown-linux-gnu";
#else
  const char *other = "x86_64-pc-linux-gnu";
#endif
  std::string path = tempPath("arch");
  ASSERT_EQ(ign::bundle::writeBundle(path, minimal("host", other)), "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_TARGET);
  EXPECT_NE(message.find(other), std::string::npos) << message;
}

TEST(Runtime, RefusesAnotherFormatVersion) {
  std::string path = tempPath("version");
  ASSERT_EQ(ign::bundle::writeBundle(path, minimal("host", "x86_64")), "");
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  ign::bundle::Header h;
  f.read(reinterpret_cast<char *>(&h), sizeof(h));
  h.version = 99;
  h.headerChecksum =
      ign::bundle::fnv1a(&h, offsetof(ign::bundle::Header, headerChecksum));
  f.seekp(0);
  f.write(reinterpret_cast<const char *>(&h), sizeof(h));
  f.close();
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("format version 99"), std::string::npos) << message;
}

TEST(Runtime, KernelsInStepsAreFormat4AndMustDivideTheirWorkgroups) {
  std::string path = tempPath("steps");
  ign::bundle::BundleContents c = minimal("host", "x86_64");
  EXPECT_EQ(ign::bundle::formatVersionOf(c), ign::bundle::kOldestFormatVersion);
  c.kernels[0].workgroups = 4;
  c.kernels[0].steps = 2;
  EXPECT_EQ(ign::bundle::formatVersionOf(c), 4u);
  c.kernels[0].steps = 3;
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("4 workgroups, not a multiple of its 3 steps"),
            std::string::npos)
      << message;
}

TEST(Runtime, RefusesAnArtifactThatDoesNotLoad) {
#if defined(__x86_64__)
  std::string path = tempPath("artifact");
  ASSERT_EQ(
      ign::bundle::writeBundle(path, minimal("host", "x86_64-pc-linux-gnu")),
      "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_RUNTIME);
  EXPECT_NE(message.find("cannot load the kernels"), std::string::npos)
      << message;
#endif
}

TEST(Runtime, RefusesALaunchArgumentOutsideItsBuffer) {
  auto c = minimal("host", "x86_64-pc-linux-gnu");
  c.launches[0].args[0].shape = {3}; // 12 bytes of an 8-byte input
  std::string path = tempPath("outside");
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("outside its buffer"), std::string::npos) << message;

  c = minimal("host", "x86_64-pc-linux-gnu");
  c.arenaBytes = 64;
  c.launches[0].args[0] = {"arena", 0, 60, "f32", {2}}; // past the arena
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  EXPECT_EQ(open(path, message), IGNRT_ERROR_FORMAT);
  EXPECT_NE(message.find("outside its buffer"), std::string::npos) << message;
}

TEST(Runtime, RefusesACpuWithoutTheNeededFeatures) {
#if defined(__x86_64__)
  // The first feature the runtime checks that this CPU lacks, if any.
  const char *missing = nullptr;
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f"))
    missing = "avx512f";
  else if (!__builtin_cpu_supports("avx512bf16"))
    missing = "avx512bf16";
  if (!missing)
    GTEST_SKIP() << "this CPU has every feature the runtime checks";
  auto c = minimal("host", "x86_64-pc-linux-gnu");
  c.cpu = "x86-64-v4";
  c.features = {"+avx2", std::string("+") + missing};
  std::string path = tempPath("features");
  ASSERT_EQ(ign::bundle::writeBundle(path, c), "");
  std::string message;
  EXPECT_EQ(open(path, message), IGNRT_ERROR_TARGET);
  EXPECT_NE(message.find(std::string("CPU feature '") + missing + "'"),
            std::string::npos)
      << message;
#endif
}

TEST(Runtime, NullArgumentsAreErrorsNotCrashes) {
  EXPECT_EQ(ignrt_bundle_open(nullptr, nullptr), IGNRT_ERROR_ARGUMENT);
  EXPECT_EQ(ignrt_session_run(nullptr), IGNRT_ERROR_ARGUMENT);
  EXPECT_EQ(ignrt_bundle_num_inputs(nullptr), 0u);
  const void *data;
  size_t bytes;
  EXPECT_EQ(ignrt_bundle_weights(nullptr, &data, &bytes), IGNRT_ERROR_ARGUMENT);
}

TEST(BundleFormat, ChecksumDetectsAFlippedBit) {
  const char a[] = "weights", b[] = "weightr";
  EXPECT_NE(ign::bundle::fnv1a(a, 7), ign::bundle::fnv1a(b, 7));
  EXPECT_EQ(ign::bundle::alignUp(65, 64), 128u);
}

} // namespace
