//===- SearchTest.cpp - tuning database, workers, cost model, search ------===//

#include "ign/Search/Search.h"
#include "ign/Search/CostModel.h"
#include "ign/Search/TuningDatabase.h"
#include "ign/Search/Validator.h"
#include "ign/Search/WorkerProcess.h"
#include "ign/Target/TargetRegistry.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

namespace {

using namespace ign::search;

std::string freshPath(const char *name) {
  std::string p = testing::TempDir() + "/ign-search-" + name + ".db";
  for (const char *suffix : {"", "-wal", "-shm"})
    std::filesystem::remove(p + suffix);
  return p;
}

TuningRecord record(const std::string &task, const std::string &fp,
                    const std::string &schedule, Status status, double ns) {
  TuningRecord r;
  r.task = task;
  r.fingerprint = fp;
  r.schedule = schedule;
  r.status = status;
  r.medianNs = ns;
  r.origin = "random";
  return r;
}

TEST(ScheduleSpace, JsonIsCanonicalAndRoundTrips) {
  Schedule s{{"split.1", 4}, {"c0.rows", 6}};
  EXPECT_EQ(scheduleToJson(s), R"({"c0.rows":6,"split.1":4})");
  EXPECT_EQ(scheduleFromJson(scheduleToJson(s)), s);
  std::string error;
  EXPECT_FALSE(scheduleFromJson(R"({"c0.rows":"six"})", &error));
  EXPECT_NE(error.find("c0.rows"), std::string::npos);
  EXPECT_FALSE(scheduleFromJson("[1,2]", &error));
}

TEST(TuningDatabase, BestIsTheFastestValidRecordOfThisFingerprint) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("best"), error);
  ASSERT_TRUE(db) << error;
  std::vector<TuningRecord> rs = {
      record("t1", "fpA", R"({"a":1})", Status::Ok, 300),
      record("t1", "fpA", R"({"a":2})", Status::Ok, 100),
      // Faster, but wrong: never the best.
      record("t1", "fpA", R"({"a":3})", Status::Wrong, 10),
      // Faster, but measured on another machine.
      record("t1", "fpB", R"({"a":4})", Status::Ok, 50),
      record("t2", "fpA", R"({"a":5})", Status::Crash, 0)};
  for (auto &r : rs)
    ASSERT_TRUE(db->add(r, error)) << error;
  auto best = db->best("t1", "fpA");
  ASSERT_TRUE(best);
  EXPECT_EQ(best->schedule, R"({"a":2})");
  EXPECT_FALSE(db->best("t2", "fpA"));
  EXPECT_EQ(db->records("t1", "fpA").size(), 3u);
  EXPECT_EQ(db->otherFingerprints("t1", "fpA"),
            std::vector<std::string>{"fpB"});
}

TEST(TuningDatabase, ChosenNeedsAMarginOrAConfirmation) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("chosen"), error);
  ASSERT_TRUE(db) << error;
  auto add = [&](const char *task, const char *schedule, const char *origin,
                 double ns) {
    TuningRecord r = record(task, "fp", schedule, Status::Ok, ns);
    r.origin = origin;
    ASSERT_TRUE(db->add(r, error)) << error;
  };
  // 5% faster by one noisy measurement: not enough to leave the default.
  add("t1", R"({"a":0})", "default", 100);
  add("t1", R"({"a":1})", "random", 95);
  EXPECT_EQ(db->chosen("t1", "fp")->schedule, R"({"a":0})");
  EXPECT_EQ(db->best("t1", "fp")->schedule, R"({"a":1})");
  // 20% faster: chosen without a confirmation.
  add("t1", R"({"a":2})", "evolved", 80);
  EXPECT_EQ(db->chosen("t1", "fp")->schedule, R"({"a":2})");
  // Side by side the default held its own: it stays, and the confirmation's
  // own (faster) timings are never the search's best.
  add("t1", R"({"a":0})", "confirmed", 50);
  add("t1", R"({"a":2})", "confirm", 49);
  EXPECT_EQ(db->chosen("t1", "fp")->schedule, R"({"a":0})");
  EXPECT_EQ(db->best("t1", "fp")->schedule, R"({"a":2})");
  EXPECT_EQ(db->best("t1", "fp")->medianNs, 80);
  // A later confirmation decides.
  add("t1", R"({"a":0})", "confirm", 50);
  add("t1", R"({"a":1})", "confirmed", 40);
  EXPECT_EQ(db->chosen("t1", "fp")->schedule, R"({"a":1})");
  // Without a default record (imported), the fastest.
  add("t2", R"({"a":3})", "imported", 99);
  add("t2", R"({"a":4})", "imported", 98);
  EXPECT_EQ(db->chosen("t2", "fp")->schedule, R"({"a":4})");
}

TEST(TuningDatabase, ExportImportRoundTripsWithoutDuplicates) {
  std::string error;
  auto a = TuningDatabase::open(freshPath("export-a"), error);
  ASSERT_TRUE(a) << error;
  for (auto r : {record("t", "fp", R"({"x":1})", Status::Ok, 5),
                 record("t", "fp", R"({"x":2})", Status::Timeout, 0)})
    ASSERT_TRUE(a->add(r, error));
  std::string json = recordsToJson(a->all());
  auto parsed = recordsFromJson(json, error);
  ASSERT_TRUE(parsed) << error;
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[1].status, Status::Timeout);
  auto b = TuningDatabase::open(freshPath("export-b"), error);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->addAll(*parsed, error), 2);
  // Importing the same records again adds nothing.
  EXPECT_EQ(b->addAll(*parsed, error), 0);
  EXPECT_EQ(b->all().size(), 2u);
  EXPECT_EQ(b->best("t", "fp")->schedule, R"({"x":1})");
}

TEST(TuningDatabase, RejectsMalformedRecordsAndForeignFiles) {
  std::string error;
  EXPECT_FALSE(recordsFromJson("{}", error));
  EXPECT_FALSE(recordsFromJson(
      R"({"format":"ignc-tuning-records","version":1,"records":[{"task":"t"}]})",
      error));
  EXPECT_NE(error.find("record 0"), std::string::npos);
  // An ok record without a latency is refused.
  EXPECT_FALSE(recordsFromJson(
      R"({"format":"ignc-tuning-records","version":1,"records":[{"task":"t",
      "fingerprint":"f","schedule":{},"status":"ok","created":"x"}]})",
      error));
  std::string notDb = testing::TempDir() + "/ign-search-not-a-db.db";
  FILE *f = std::fopen(notDb.c_str(), "w");
  std::fputs("this is not a database, just text that is long enough to be a "
             "header and more and more bytes to fill a page",
             f);
  std::fclose(f);
  EXPECT_FALSE(TuningDatabase::open(notDb, error));
  EXPECT_NE(error.find("not a usable tuning database"), std::string::npos);
}

TEST(TuningDatabase, KeepsCostsPredictionsAndRuns) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("costs"), error);
  ASSERT_TRUE(db) << error;
  TuningRecord picked = record("t", "fp", R"({"a":1})", Status::Ok, 10);
  picked.predicted = 0.25;
  picked.workerCpuSeconds = 1.5;
  picked.workerWallSeconds = 2.5;
  TuningRecord unranked = record("t", "fp", R"({"a":2})", Status::Ok, 20);
  ASSERT_TRUE(db->add(picked, error) && db->add(unranked, error)) << error;
  auto rs = db->records("t", "fp");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_DOUBLE_EQ(rs[0].predicted, 0.25);
  EXPECT_DOUBLE_EQ(rs[0].workerCpuSeconds, 1.5);
  EXPECT_DOUBLE_EQ(rs[0].workerWallSeconds, 2.5);
  EXPECT_TRUE(std::isnan(rs[1].predicted)); // not ranked by the model
  // Export and import keep them.
  auto parsed = recordsFromJson(recordsToJson(rs), error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_DOUBLE_EQ((*parsed)[0].predicted, 0.25);
  EXPECT_TRUE(std::isnan((*parsed)[1].predicted));
  EXPECT_DOUBLE_EQ((*parsed)[0].workerCpuSeconds, 1.5);
  // Runs are found by any task they measured, on their fingerprint.
  ASSERT_TRUE(
      db->addRun({"fp", "2026-01-01T00:00:00Z", 9, 17, 2, {"t", "u"}}, error))
      << error;
  ASSERT_TRUE(
      db->addRun({"other", "2026-01-01T00:00:00Z", 1, 1, 1, {"t"}}, error));
  auto runs = db->runsFor({"u"}, "fp");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_DOUBLE_EQ(runs[0].cpuSeconds, 17);
  EXPECT_EQ(runs[0].tasks, (std::vector<std::string>{"t", "u"}));
  EXPECT_TRUE(db->runsFor({"v"}, "fp").empty());
}

TEST(TuningDatabase, UpgradesSchemaOneKeepingItsRecords) {
  std::string path = freshPath("schema1");
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  // The version 1 schema, as ignc before 2026-12-02 created it.
  const char *v1 = R"sql(
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO meta VALUES ('schema', '1');
    CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT,
      task TEXT NOT NULL, fingerprint TEXT NOT NULL, schedule TEXT NOT NULL,
      status TEXT NOT NULL, median_ns REAL NOT NULL DEFAULT 0,
      min_ns REAL NOT NULL DEFAULT 0, p90_ns REAL NOT NULL DEFAULT 0,
      runs INTEGER NOT NULL DEFAULT 0, rel_l2 REAL NOT NULL DEFAULT 0,
      max_abs REAL NOT NULL DEFAULT 0, origin TEXT NOT NULL DEFAULT '',
      message TEXT NOT NULL DEFAULT '', kernel TEXT NOT NULL DEFAULT '',
      flops INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL);
    INSERT INTO records (task, fingerprint, schedule, status, median_ns,
      created) VALUES ('t', 'fp', '{"a":1}', 'ok', 42, '2026-01-01');)sql";
  ASSERT_EQ(sqlite3_exec(raw, v1, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  std::string error;
  auto db = TuningDatabase::open(path, error);
  ASSERT_TRUE(db) << error;
  auto best = db->best("t", "fp");
  ASSERT_TRUE(best);
  EXPECT_DOUBLE_EQ(best->medianNs, 42);
  EXPECT_TRUE(std::isnan(best->predicted));
  TuningRecord more = record("t", "fp", R"({"a":2})", Status::Ok, 7);
  more.workerCpuSeconds = 3;
  ASSERT_TRUE(db->add(more, error)) << error;
  db.reset();
  // Opened again: version 2 now, both records there.
  db = TuningDatabase::open(path, error);
  ASSERT_TRUE(db) << error;
  EXPECT_EQ(db->records("t", "fp").size(), 2u);
  EXPECT_DOUBLE_EQ(db->best("t", "fp")->workerCpuSeconds, 3);
}

TEST(WorkerProcess, TellsExitCrashAndTimeoutApart) {
  auto ok = runWorker({"/bin/sh", "-c", "echo hi"}, 10);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.out, "hi\n");
  auto fail = runWorker({"/bin/sh", "-c", "echo why >&2; exit 3"}, 10);
  EXPECT_EQ(fail.exitCode, 3);
  EXPECT_NE(fail.describe(10).find("why"), std::string::npos);
  auto crash = runWorker({"/bin/sh", "-c", "kill -SEGV $$"}, 10);
  EXPECT_EQ(crash.signal, SIGSEGV);
  auto hang = runWorker({"/bin/sh", "-c", "sleep 30"}, 0.3);
  EXPECT_TRUE(hang.timedOut);
  EXPECT_FALSE(hang.ok());
  // What a worker cost: its CPU time and its wall time.
  auto busy = runWorker(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"},
      30);
  EXPECT_GT(busy.cpuSeconds, 0.0);
  EXPECT_GE(busy.wallSeconds, busy.cpuSeconds * 0.5);
  // Several at once keep their order.
  auto many = runWorkers(
      {{"/bin/sh", "-c", "sleep 0.2; echo a"}, {"/bin/sh", "-c", "echo b"}}, 2,
      10);
  EXPECT_EQ(many[0].out, "a\n");
  EXPECT_EQ(many[1].out, "b\n");
}

TEST(CostModel, LearnsARanking) {
  CostModel model(7);
  for (int x = 0; x < 40; ++x)
    model.addSample({float(x % 8), float(x / 8)},
                    float(-(x % 8 - 5) * (x % 8 - 5)));
  ASSERT_TRUE(model.train()) << model.error();
  auto scores = model.predict({{5, 0}, {0, 0}, {7, 1}});
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_GT(scores[0], scores[1]);
  EXPECT_GT(scores[0], scores[2]);
}

/// A synthetic task whose latency is known: the search must find the
/// optimum, never return an invalid point, and count database records.
TEST(Search, FindsTheOptimumAndNeverChoosesAFailure) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("search"), error);
  ASSERT_TRUE(db);
  SearchTask task;
  task.task = "synthetic";
  task.space.knobs = {{"x", {0, 1, 2, 3, 4, 5, 6, 7}},
                      {"y", {0, 1, 2, 3, 4, 5, 6, 7}}};
  task.space.defaults = {{"x", 0}, {"y", 0}};
  task.space.legal = [](const Schedule &s) { return s.at("x") != 7; };
  auto latency = [](const Schedule &s) {
    double dx = s.at("x") - 5, dy = s.at("y") - 2;
    return 100 + 10 * dx * dx + 10 * dy * dy;
  };
  int illegalMeasured = 0;
  Measurer measure = [&](size_t, const std::vector<Schedule> &batch) {
    std::vector<TuningRecord> out;
    for (const Schedule &s : batch) {
      illegalMeasured += s.at("x") == 7;
      TuningRecord r;
      // y == 2 with x == 4 is faster than the optimum but wrong.
      if (s.at("x") == 4 && s.at("y") == 2) {
        r.status = Status::Wrong;
      } else {
        r.status = Status::Ok;
        r.medianNs = latency(s);
      }
      out.push_back(r);
    }
    return out;
  };
  Featurizer features = [](size_t, const Schedule &s) {
    return std::vector<float>{float(s.at("x")), float(s.at("y"))};
  };
  SearchOptions options;
  options.trials = 40;
  options.seed = 3;
  auto summary = runSearch({task}, measure, features, *db, "fp", options);
  EXPECT_EQ(illegalMeasured, 0);
  ASSERT_TRUE(summary.tasks[0].best);
  EXPECT_EQ(summary.tasks[0].best->schedule, R"({"x":5,"y":2})");
  EXPECT_EQ(summary.newTrials, 40);
  EXPECT_EQ(db->best("synthetic", "fp")->schedule, R"({"x":5,"y":2})");
  // The budget counts what the database already holds: nothing more.
  auto again = runSearch({task}, measure, features, *db, "fp", options);
  EXPECT_EQ(again.newTrials, 0);
}

/// A task whose search measurements have a lucky outlier: x == 3 measured
/// 40% faster once but is as fast as the default side by side, x == 5 is
/// 15% faster both ways.
struct LuckyTask {
  SearchTask task;
  int compared = 0;
  LuckyTask() {
    task.task = "lucky";
    task.space.knobs = {{"x", {0, 1, 2, 3, 4, 5}}};
    task.space.defaults = {{"x", 0}};
  }
  static double searchNs(const Schedule &s) {
    int x = int(s.at("x"));
    return x == 3 ? 60 : x == 5 ? 85 : 100 + x;
  }
  static double trueRatio(const Schedule &s) {
    int x = int(s.at("x"));
    return x == 5 ? 0.85 : x == 3 ? 1.0 : 1 + 0.01 * x;
  }
  Measurer measurer() {
    return [](size_t, const std::vector<Schedule> &batch) {
      std::vector<TuningRecord> out(batch.size());
      for (size_t k = 0; k < batch.size(); ++k) {
        out[k].status = Status::Ok;
        out[k].medianNs = searchNs(batch[k]);
      }
      return out;
    };
  }
  /// The search over every schedule of the space, with the stage.
  SearchSummary search(TuningDatabase &db) {
    Featurizer features = [](size_t, const Schedule &s) {
      return std::vector<float>{float(s.at("x"))};
    };
    SearchOptions options;
    options.trials = int64_t(task.space.knobs[0].values.size());
    options.compare = comparer();
    return runSearch({task}, measurer(), features, db, "fp", options);
  }
  Comparer comparer() {
    return [this](size_t, const std::vector<Schedule> &batch) {
      ++compared;
      std::vector<SideBySide> out(batch.size());
      for (size_t k = 0; k < batch.size(); ++k) {
        double ratio = trueRatio(batch[k]) / trueRatio(batch[0]);
        out[k].record.status = Status::Ok;
        out[k].record.medianNs = 100 * ratio;
        if (k > 0)
          out[k].ratio = ratio, out[k].low = ratio - 0.03,
          out[k].high = ratio + 0.03;
      }
      return out;
    };
  }
};

TEST(Search, ConfirmationKeepsOnlyWinnersThatHoldSideBySide) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("confirm"), error);
  ASSERT_TRUE(db);
  LuckyTask lucky;
  auto summary = lucky.search(*db);
  ASSERT_EQ(summary.tasks.size(), 1u);
  // The search's fastest is the lucky one; the bundle gets x == 5.
  EXPECT_EQ(summary.tasks[0].best->schedule, R"({"x":3})");
  ASSERT_TRUE(summary.tasks[0].chosen);
  EXPECT_EQ(summary.tasks[0].chosen->schedule, R"({"x":5})");
  EXPECT_EQ(db->chosen("lucky", "fp")->schedule, R"({"x":5})");
  EXPECT_NE(summary.tasks[0].confirmation.find("confirmed: x0.850"),
            std::string::npos)
      << summary.tasks[0].confirmation;
  EXPECT_EQ(lucky.compared, 1);
  // Confirmation records are not trials, and a task confirmed after its
  // last search record is not confirmed again.
  auto again = lucky.search(*db);
  EXPECT_EQ(again.newTrials, 0);
  EXPECT_EQ(again.tasks[0].trials, 6);
  EXPECT_EQ(lucky.compared, 1);
}

TEST(Search, ConfirmationKeepsTheDefaultAgainstALuckyMeasurement) {
  std::string error;
  auto db = TuningDatabase::open(freshPath("lucky"), error);
  ASSERT_TRUE(db);
  LuckyTask lucky;
  lucky.task.space.knobs = {{"x", {0, 1, 2, 3}}};
  auto summary = lucky.search(*db);
  // Without the stage x == 3 (40% faster once) would be chosen.
  EXPECT_EQ(summary.tasks[0].best->schedule, R"({"x":3})");
  EXPECT_EQ(db->chosen("lucky", "fp")->schedule, R"({"x":0})");
  EXPECT_NE(summary.tasks[0].confirmation.find("kept the default: best "
                                               "x1.000"),
            std::string::npos)
      << summary.tasks[0].confirmation;
}

} // namespace

//===----------------------------------------------------------------------===//
// The one validator and the target registry.
//===----------------------------------------------------------------------===//

TEST(Validator, FloatThresholdsAndNonFinite) {
  using ign::search::compareValues;
  std::vector<double> want = {1, 2, 3, 4};
  EXPECT_TRUE(compareValues({1, 2, 3, 4.00001}, want, IGNRT_F32).pass);
  // Within f16's thresholds, outside f32's.
  std::vector<double> close = {1, 2, 3, 4.01};
  EXPECT_FALSE(compareValues(close, want, IGNRT_F32).pass);
  EXPECT_TRUE(compareValues(close, want, IGNRT_F16).pass);
  // A NaN where the reference is finite fails whatever the thresholds.
  auto nan = compareValues({1, 2, 3, NAN}, want, IGNRT_F16);
  EXPECT_FALSE(nan.pass);
  EXPECT_TRUE(std::isinf(nan.relL2));
  // Integers match exactly; sizes must agree.
  EXPECT_FALSE(compareValues({1, 2, 3, 5}, want, IGNRT_I32).pass);
  EXPECT_TRUE(compareValues(want, want, IGNRT_I8).pass);
  EXPECT_FALSE(compareValues({1, 2, 3}, want, IGNRT_F32).pass);
}

TEST(Validator, OutputBytes) {
  float got[3] = {1, 2, 3}, want[3] = {1, 2, 3.5f};
  std::string w(reinterpret_cast<const char *>(want), sizeof want);
  auto c = ign::search::compareOutput(reinterpret_cast<const char *>(got), w,
                                      sizeof got, IGNRT_F32);
  EXPECT_FALSE(c.pass);
  EXPECT_NEAR(c.maxAbs, 0.5, 1e-9);
  EXPECT_TRUE(ign::search::compareOutput(reinterpret_cast<const char *>(want),
                                         w, sizeof want, IGNRT_F32)
                  .pass);
}

// f32 outputs of kernels computing in bf16 are held to bf16's thresholds;
// integer outputs stay exact whatever the kernels compute in.
TEST(Validator, OutputsOfKernelsComputingInBf16) {
  float got[4] = {1, 2, 3, 4.01f}, want[4] = {1, 2, 3, 4};
  std::string w(reinterpret_cast<const char *>(want), sizeof want);
  const char *g = reinterpret_cast<const char *>(got);
  EXPECT_FALSE(ign::search::compareOutput(g, w, sizeof got, IGNRT_F32).pass);
  EXPECT_TRUE(
      ign::search::compareOutput(g, w, sizeof got, IGNRT_F32, IGNRT_BF16).pass);
  int32_t gi[2] = {1, 2}, wi[2] = {1, 3};
  std::string wis(reinterpret_cast<const char *>(wi), sizeof wi);
  EXPECT_FALSE(ign::search::compareOutput(reinterpret_cast<const char *>(gi),
                                          wis, sizeof gi, IGNRT_I32, IGNRT_BF16)
                   .pass);
}

TEST(TargetRegistry, ResolvesNamesSpellingsAndChips) {
  using namespace ign::target;
  registerBuiltinTargets();
  std::string error;
  auto host = resolveTarget("host", "", error);
  ASSERT_TRUE(host) << error;
  EXPECT_EQ(host->target, fallbackTarget());
  EXPECT_EQ(host->chip, "host");
  auto cpu = resolveTarget("x86-64-v3", "", error);
  ASSERT_TRUE(cpu) << error;
  EXPECT_EQ(cpu->target->name(), "host");
  EXPECT_EQ(cpu->chip, "x86-64-v3");
  auto array = resolveTarget("systolic", "", error);
  ASSERT_TRUE(array) << error;
  EXPECT_EQ(array->chip, array->target->defaultChip());
  EXPECT_FALSE(array->target->runsUnclaimedKernels());
  EXPECT_FALSE(resolveTarget("systolic", "no-such-chip", error));
  EXPECT_NE(error.find("no-such-chip"), std::string::npos);
  EXPECT_FALSE(resolveTarget("x86-64-v3", "znver4", error));
  EXPECT_FALSE(resolveTarget("tpu9000", "", error));
  EXPECT_NE(error.find("unknown target 'tpu9000'"), std::string::npos);
  auto gpu = resolveTarget("vulkan", "mali-g710", error);
  ASSERT_TRUE(gpu) << error;
  EXPECT_EQ(gpu->target->name(), "vulkan");
  EXPECT_FALSE(resolveTarget("vulkan", "mali-g999", error));
  EXPECT_NE(error.find("unknown vulkan chip 'mali-g999'"), std::string::npos);
  // An architecture spelling names the CUDA target's chip for it.
  auto sm90 = resolveTarget("sm_90", "", error);
  ASSERT_TRUE(sm90) << error;
  EXPECT_EQ(sm90->target->name(), "cuda");
  EXPECT_EQ(sm90->chip, "h100");
  EXPECT_FALSE(resolveTarget("sm80", "h100", error));
  EXPECT_NE(error.find("--target=sm80 names chip 'a100'"), std::string::npos);
  // The built-in targets, once each: registration is idempotent.
  registerBuiltinTargets();
  EXPECT_EQ(registeredTargets().size(), 4u);
}
