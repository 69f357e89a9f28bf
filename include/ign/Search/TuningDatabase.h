//===- TuningDatabase.h - measured schedules, kept in SQLite ----*- C++ -*-===//
//
// Every measurement the search agent makes is one record, committed as soon
// as it is taken (SQLite in WAL mode), so a tuning run killed at any moment
// loses no finished measurement. Records are keyed by the kernel's
// structural hash (its task id) and the target fingerprint (target, CPU and
// features, ignc and LLVM versions): a record is applied only to the same
// kernel on the same fingerprint. docs/search.md describes the schema.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_TUNINGDATABASE_H
#define IGN_SEARCH_TUNINGDATABASE_H

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace ign::search {

/// What became of one candidate.
enum class Status {
  Ok,         // built, ran, matched the reference, timed
  Wrong,      // ran but its outputs differ from the reference
  BuildError, // the schedule did not compile
  Crash,      // the worker died (signal) while running it
  Timeout,    // the worker ran past its time limit
  Error,      // anything else (the worker failed to load it, ...)
};
const char *statusName(Status status);
std::optional<Status> statusFromName(const std::string &name);

struct TuningRecord {
  int64_t id = 0;          // assigned by the database
  std::string task;        // kernel structural hash
  std::string fingerprint; // target fingerprint
  std::string schedule;    // canonical schedule JSON (the knobs)
  Status status = Status::Error;
  /// Latency over the timed runs, nanoseconds (0 unless Ok or Wrong).
  double medianNs = 0, minNs = 0, p90Ns = 0;
  int64_t runs = 0;
  /// Validation against the reference over every input set (worst).
  double relL2 = 0, maxAbs = 0;
  std::string origin;  // "default", "random", "evolved", "imported", ...
  std::string message; // why it failed, when it did
  std::string kernel;  // what the kernel is (ops and shapes), for humans
  int64_t flops = 0;
  std::string created; // UTC, ISO 8601
  /// The cost model's score for the schedule when it was picked (its
  /// predicted log(default / latency)); NaN when not picked by the model.
  double predicted = std::nan("");
  /// What building and measuring it cost the worker processes (CPU and
  /// wall seconds; builds of a batch run in parallel).
  double workerCpuSeconds = 0, workerWallSeconds = 0;

  /// A record of the confirmation stage (Confirmation.h): a side-by-side
  /// timing, not a trial of the search.
  bool isConfirmation() const {
    return origin == "confirm" || origin == "confirmed";
  }
};

/// One tuning run as a whole (`ignc --trials/--tune-time`): what it cost.
struct TuningRunRecord {
  std::string fingerprint, started; // started: UTC, ISO 8601
  double seconds = 0, cpuSeconds = 0;
  int64_t newTrials = 0;
  std::vector<std::string> tasks;
};

/// How much faster than the default an unconfirmed candidate must have
/// measured to be chosen over it.
inline constexpr double kUnconfirmedGain = 0.10;

class TuningDatabase {
public:
  /// Opens (creating if needed) the database at `path`. nullptr and `error`
  /// set when it cannot be opened or is not a tuning database.
  static std::unique_ptr<TuningDatabase> open(const std::string &path,
                                              std::string &error);
  ~TuningDatabase();
  TuningDatabase(const TuningDatabase &) = delete;
  TuningDatabase &operator=(const TuningDatabase &) = delete;

  /// Stores a record in its own transaction (durable on return). Returns
  /// false and sets `error` on failure. `record.id` is set.
  bool add(TuningRecord &record, std::string &error);
  /// Stores many records in one transaction, skipping exact duplicates
  /// (same task, fingerprint, schedule, status, latency and time) unless
  /// `skipDuplicates` is false; returns how many were new, or -1 on failure.
  int64_t addAll(std::vector<TuningRecord> &records, std::string &error,
                 bool skipDuplicates = true);

  /// The fastest valid search record of a task on a fingerprint (ties:
  /// oldest; the confirmation stage's records are not search records).
  std::optional<TuningRecord> best(const std::string &task,
                                   const std::string &fingerprint) const;
  /// The record whose schedule a bundle uses: the pick of the task's latest
  /// confirmation (Confirmation.h); without one, the fastest valid record
  /// if it beats the default's median by kUnconfirmedGain (the lowest of
  /// many noisy medians is biased low), else the default's.
  std::optional<TuningRecord> chosen(const std::string &task,
                                     const std::string &fingerprint) const;
  /// All records of a task on a fingerprint, oldest first.
  std::vector<TuningRecord> records(const std::string &task,
                                    const std::string &fingerprint) const;
  /// Every record (of one fingerprint when given), oldest first.
  std::vector<TuningRecord> all(const std::string &fingerprint = "") const;
  /// Records a finished tuning run; false and `error` on failure.
  bool addRun(const TuningRunRecord &run, std::string &error);
  /// The tuning runs that measured any of `tasks` on `fingerprint`.
  std::vector<TuningRunRecord> runsFor(const std::vector<std::string> &tasks,
                                       const std::string &fingerprint) const;
  /// Fingerprints other than `fingerprint` with records for `task`.
  std::vector<std::string>
  otherFingerprints(const std::string &task,
                    const std::string &fingerprint) const;

  const std::string &path() const { return path_; }

private:
  TuningDatabase(sqlite3 *db, std::string path);
  std::vector<TuningRecord> query(const std::string &where,
                                  const std::vector<std::string> &args,
                                  const std::string &order) const;
  sqlite3 *db_;
  std::string path_;
};

/// The default database: $IGNC_TUNING_DB, else
/// $XDG_CACHE_HOME/ignc/tuning.db, else ~/.cache/ignc/tuning.db.
std::string defaultTuningDatabasePath();

/// The time now, UTC, ISO 8601 (as records' `created`).
std::string nowUtcText();

/// Records as JSON ({"format": "ignc-tuning-records", "version": 1,
/// "records": [...]}) and back; nullopt and `error` on malformed input.
std::string recordsToJson(const std::vector<TuningRecord> &records);
std::optional<std::vector<TuningRecord>>
recordsFromJson(const std::string &text, std::string &error);

} // namespace ign::search

#endif // IGN_SEARCH_TUNINGDATABASE_H
