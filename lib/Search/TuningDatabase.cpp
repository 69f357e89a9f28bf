//===- TuningDatabase.cpp - measured schedules, kept in SQLite
//--------------===//

#include "ign/Search/TuningDatabase.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace ign::search {

namespace {

constexpr int kSchemaVersion = 2;

const char *kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  schedule TEXT NOT NULL,
  status TEXT NOT NULL,
  median_ns REAL NOT NULL DEFAULT 0,
  min_ns REAL NOT NULL DEFAULT 0,
  p90_ns REAL NOT NULL DEFAULT 0,
  runs INTEGER NOT NULL DEFAULT 0,
  rel_l2 REAL NOT NULL DEFAULT 0,
  max_abs REAL NOT NULL DEFAULT 0,
  origin TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  kernel TEXT NOT NULL DEFAULT '',
  flops INTEGER NOT NULL DEFAULT 0,
  created TEXT NOT NULL,
  predicted REAL,
  worker_cpu_s REAL NOT NULL DEFAULT 0,
  worker_wall_s REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS records_by_task ON records (task, fingerprint);
CREATE TABLE IF NOT EXISTS tuning_runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  fingerprint TEXT NOT NULL,
  started TEXT NOT NULL,
  seconds REAL NOT NULL,
  cpu_s REAL NOT NULL,
  new_trials INTEGER NOT NULL,
  tasks TEXT NOT NULL
);
)sql";

/// Version 1 lacked the cost columns (version 2 adds them; tuning_runs is
/// created by the schema above).
const char *kMigrateFrom1 = R"sql(
ALTER TABLE records ADD COLUMN predicted REAL;
ALTER TABLE records ADD COLUMN worker_cpu_s REAL NOT NULL DEFAULT 0;
ALTER TABLE records ADD COLUMN worker_wall_s REAL NOT NULL DEFAULT 0;
UPDATE meta SET value = '2' WHERE key = 'schema';
)sql";

const char *kColumns =
    "id, task, fingerprint, schedule, status, median_ns, min_ns, p90_ns, "
    "runs, rel_l2, max_abs, origin, message, kernel, flops, created, "
    "predicted, worker_cpu_s, worker_wall_s";

std::string text(sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  return t ? reinterpret_cast<const char *>(t) : "";
}

std::string nowUtc() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

/// A prepared statement, finalized on scope exit.
struct Statement {
  sqlite3_stmt *st = nullptr;
  Statement(sqlite3 *db, const std::string &sql) {
    sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr);
  }
  ~Statement() { sqlite3_finalize(st); }
};

} // namespace

const char *statusName(Status status) {
  switch (status) {
  case Status::Ok:
    return "ok";
  case Status::Wrong:
    return "wrong";
  case Status::BuildError:
    return "build_error";
  case Status::Crash:
    return "crash";
  case Status::Timeout:
    return "timeout";
  case Status::Error:
    return "error";
  }
  return "error";
}

std::optional<Status> statusFromName(const std::string &name) {
  for (Status s : {Status::Ok, Status::Wrong, Status::BuildError, Status::Crash,
                   Status::Timeout, Status::Error})
    if (name == statusName(s))
      return s;
  return std::nullopt;
}

TuningDatabase::TuningDatabase(sqlite3 *db, std::string path)
    : db_(db), path_(std::move(path)) {}

TuningDatabase::~TuningDatabase() { sqlite3_close(db_); }

std::unique_ptr<TuningDatabase> TuningDatabase::open(const std::string &path,
                                                     std::string &error) {
  sqlite3 *db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    error = "cannot open tuning database '" + path +
            "': " + (db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return nullptr;
  }
  sqlite3_busy_timeout(db, 10000);
  char *message = nullptr;
  // WAL: readers never block the writer, and a killed writer leaves every
  // committed record in place. NORMAL sync is durable against a killed
  // process (not against power loss), which is what a tuning run needs.
  std::string setup = std::string("PRAGMA journal_mode=WAL;"
                                  "PRAGMA synchronous=NORMAL;") +
                      kSchema;
  if (sqlite3_exec(db, setup.c_str(), nullptr, nullptr, &message) !=
      SQLITE_OK) {
    error = "'" + path + "' is not a usable tuning database: " +
            (message ? message : sqlite3_errmsg(db));
    sqlite3_free(message);
    sqlite3_close(db);
    return nullptr;
  }
  {
    std::string version;
    {
      Statement get(db, "SELECT value FROM meta WHERE key = 'schema'");
      if (get.st && sqlite3_step(get.st) == SQLITE_ROW)
        version = text(get.st, 0);
    }
    if (version == "1" && sqlite3_exec(db, kMigrateFrom1, nullptr, nullptr,
                                       &message) != SQLITE_OK) {
      error = "cannot upgrade tuning database '" + path +
              "' from schema version 1: " +
              (message ? message : sqlite3_errmsg(db));
      sqlite3_free(message);
      sqlite3_close(db);
      return nullptr;
    }
    if (version == "1")
      version = std::to_string(kSchemaVersion);
    if (!version.empty()) {
      if (version != std::to_string(kSchemaVersion)) {
        error = "tuning database '" + path + "' has schema version " + version +
                "; this ignc reads version " + std::to_string(kSchemaVersion);
        sqlite3_close(db);
        return nullptr;
      }
    } else {
      std::string put = "INSERT OR IGNORE INTO meta VALUES ('schema', '" +
                        std::to_string(kSchemaVersion) + "')";
      sqlite3_exec(db, put.c_str(), nullptr, nullptr, nullptr);
    }
  }
  return std::unique_ptr<TuningDatabase>(new TuningDatabase(db, path));
}

static bool insert(sqlite3 *db, TuningRecord &r, bool skipDuplicate,
                   bool &inserted, std::string &error) {
  inserted = false;
  if (r.created.empty())
    r.created = nowUtc();
  if (skipDuplicate) {
    Statement dup(db, "SELECT id FROM records WHERE task = ?1 AND "
                      "fingerprint = ?2 AND schedule = ?3 AND status = ?4 AND "
                      "median_ns = ?5 AND created = ?6");
    sqlite3_bind_text(dup.st, 1, r.task.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(dup.st, 2, r.fingerprint.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(dup.st, 3, r.schedule.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(dup.st, 4, statusName(r.status), -1, SQLITE_STATIC);
    sqlite3_bind_double(dup.st, 5, r.medianNs);
    sqlite3_bind_text(dup.st, 6, r.created.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(dup.st) == SQLITE_ROW)
      return true;
  }
  Statement st(db, "INSERT INTO records (task, fingerprint, schedule, "
                   "status, median_ns, min_ns, p90_ns, runs, rel_l2, "
                   "max_abs, origin, message, kernel, flops, created, "
                   "predicted, worker_cpu_s, worker_wall_s) VALUES "
                   "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                   "?14, ?15, ?16, ?17, ?18)");
  if (!st.st) {
    error = sqlite3_errmsg(db);
    return false;
  }
  auto bindText = [&](int i, const std::string &v) {
    sqlite3_bind_text(st.st, i, v.c_str(), -1, SQLITE_TRANSIENT);
  };
  bindText(1, r.task);
  bindText(2, r.fingerprint);
  bindText(3, r.schedule);
  bindText(4, statusName(r.status));
  sqlite3_bind_double(st.st, 5, r.medianNs);
  sqlite3_bind_double(st.st, 6, r.minNs);
  sqlite3_bind_double(st.st, 7, r.p90Ns);
  sqlite3_bind_int64(st.st, 8, r.runs);
  sqlite3_bind_double(st.st, 9, r.relL2);
  sqlite3_bind_double(st.st, 10, r.maxAbs);
  bindText(11, r.origin);
  bindText(12, r.message);
  bindText(13, r.kernel);
  sqlite3_bind_int64(st.st, 14, r.flops);
  bindText(15, r.created);
  if (std::isfinite(r.predicted))
    sqlite3_bind_double(st.st, 16, r.predicted);
  else
    sqlite3_bind_null(st.st, 16);
  sqlite3_bind_double(st.st, 17, r.workerCpuSeconds);
  sqlite3_bind_double(st.st, 18, r.workerWallSeconds);
  if (sqlite3_step(st.st) != SQLITE_DONE) {
    error = std::string("cannot store a tuning record: ") + sqlite3_errmsg(db);
    return false;
  }
  r.id = sqlite3_last_insert_rowid(db);
  inserted = true;
  return true;
}

bool TuningDatabase::add(TuningRecord &record, std::string &error) {
  bool inserted;
  return insert(db_, record, /*skipDuplicate=*/false, inserted, error);
}

int64_t TuningDatabase::addAll(std::vector<TuningRecord> &records,
                               std::string &error, bool skipDuplicates) {
  if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) !=
      SQLITE_OK) {
    error = std::string("cannot start a transaction: ") + sqlite3_errmsg(db_);
    return -1;
  }
  int64_t added = 0;
  for (TuningRecord &r : records) {
    bool inserted;
    if (!insert(db_, r, skipDuplicates, inserted, error)) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return -1;
    }
    added += inserted;
  }
  if (sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
    error = std::string("cannot commit: ") + sqlite3_errmsg(db_);
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return -1;
  }
  return added;
}

std::vector<TuningRecord>
TuningDatabase::query(const std::string &where,
                      const std::vector<std::string> &args,
                      const std::string &order) const {
  std::vector<TuningRecord> out;
  Statement st(db_, std::string("SELECT ") + kColumns + " FROM records" +
                        (where.empty() ? "" : " WHERE " + where) +
                        " ORDER BY " + order);
  if (!st.st)
    return out;
  for (size_t i = 0; i < args.size(); ++i)
    sqlite3_bind_text(st.st, int(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st.st) == SQLITE_ROW) {
    TuningRecord r;
    r.id = sqlite3_column_int64(st.st, 0);
    r.task = text(st.st, 1);
    r.fingerprint = text(st.st, 2);
    r.schedule = text(st.st, 3);
    r.status = statusFromName(text(st.st, 4)).value_or(Status::Error);
    r.medianNs = sqlite3_column_double(st.st, 5);
    r.minNs = sqlite3_column_double(st.st, 6);
    r.p90Ns = sqlite3_column_double(st.st, 7);
    r.runs = sqlite3_column_int64(st.st, 8);
    r.relL2 = sqlite3_column_double(st.st, 9);
    r.maxAbs = sqlite3_column_double(st.st, 10);
    r.origin = text(st.st, 11);
    r.message = text(st.st, 12);
    r.kernel = text(st.st, 13);
    r.flops = sqlite3_column_int64(st.st, 14);
    r.created = text(st.st, 15);
    r.predicted = sqlite3_column_type(st.st, 16) == SQLITE_NULL
                      ? std::nan("")
                      : sqlite3_column_double(st.st, 16);
    r.workerCpuSeconds = sqlite3_column_double(st.st, 17);
    r.workerWallSeconds = sqlite3_column_double(st.st, 18);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<TuningRecord>
TuningDatabase::best(const std::string &task,
                     const std::string &fingerprint) const {
  auto r = query("task = ?1 AND fingerprint = ?2 AND status = 'ok' AND "
                 "origin NOT IN ('confirm', 'confirmed')",
                 {task, fingerprint}, "median_ns ASC, id ASC LIMIT 1");
  if (r.empty())
    return std::nullopt;
  return r.front();
}

std::optional<TuningRecord>
TuningDatabase::chosen(const std::string &task,
                       const std::string &fingerprint) const {
  auto confirmed = query("task = ?1 AND fingerprint = ?2 AND status = 'ok' "
                         "AND origin = 'confirmed'",
                         {task, fingerprint}, "id DESC LIMIT 1");
  if (!confirmed.empty())
    return confirmed.front();
  std::optional<TuningRecord> fastest = best(task, fingerprint);
  auto defaults = query("task = ?1 AND fingerprint = ?2 AND status = 'ok' "
                        "AND origin = 'default'",
                        {task, fingerprint}, "id ASC LIMIT 1");
  if (fastest && !defaults.empty() &&
      fastest->medianNs > defaults.front().medianNs * (1 - kUnconfirmedGain))
    return defaults.front();
  return fastest;
}

std::vector<TuningRecord>
TuningDatabase::records(const std::string &task,
                        const std::string &fingerprint) const {
  return query("task = ?1 AND fingerprint = ?2", {task, fingerprint}, "id ASC");
}

std::vector<TuningRecord>
TuningDatabase::all(const std::string &fingerprint) const {
  if (fingerprint.empty())
    return query("", {}, "id ASC");
  return query("fingerprint = ?1", {fingerprint}, "id ASC");
}

std::vector<std::string>
TuningDatabase::otherFingerprints(const std::string &task,
                                  const std::string &fingerprint) const {
  std::vector<std::string> out;
  Statement st(db_, "SELECT DISTINCT fingerprint FROM records WHERE task = ?1 "
                    "AND fingerprint != ?2 ORDER BY fingerprint");
  sqlite3_bind_text(st.st, 1, task.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.st, 2, fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st.st) == SQLITE_ROW)
    out.push_back(text(st.st, 0));
  return out;
}

bool TuningDatabase::addRun(const TuningRunRecord &run, std::string &error) {
  Statement st(db_,
               "INSERT INTO tuning_runs (fingerprint, started, seconds, "
               "cpu_s, new_trials, tasks) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  std::string tasks = nlohmann::json(run.tasks).dump();
  sqlite3_bind_text(st.st, 1, run.fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st.st, 2, run.started.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st.st, 3, run.seconds);
  sqlite3_bind_double(st.st, 4, run.cpuSeconds);
  sqlite3_bind_int64(st.st, 5, run.newTrials);
  sqlite3_bind_text(st.st, 6, tasks.c_str(), -1, SQLITE_TRANSIENT);
  if (!st.st || sqlite3_step(st.st) != SQLITE_DONE) {
    error = std::string("cannot store the tuning run: ") + sqlite3_errmsg(db_);
    return false;
  }
  return true;
}

std::vector<TuningRunRecord>
TuningDatabase::runsFor(const std::vector<std::string> &tasks,
                        const std::string &fingerprint) const {
  std::vector<TuningRunRecord> out;
  Statement st(db_, "SELECT fingerprint, started, seconds, cpu_s, new_trials, "
                    "tasks FROM tuning_runs WHERE fingerprint = ?1 ORDER BY "
                    "id ASC");
  sqlite3_bind_text(st.st, 1, fingerprint.c_str(), -1, SQLITE_TRANSIENT);
  while (st.st && sqlite3_step(st.st) == SQLITE_ROW) {
    TuningRunRecord r{text(st.st, 0),
                      text(st.st, 1),
                      sqlite3_column_double(st.st, 2),
                      sqlite3_column_double(st.st, 3),
                      sqlite3_column_int64(st.st, 4),
                      {}};
    nlohmann::json list = nlohmann::json::parse(text(st.st, 5), nullptr, false);
    if (list.is_array())
      for (const auto &t : list)
        if (t.is_string())
          r.tasks.push_back(t.get<std::string>());
    bool touches = std::any_of(r.tasks.begin(), r.tasks.end(), [&](auto &t) {
      return std::find(tasks.begin(), tasks.end(), t) != tasks.end();
    });
    if (touches)
      out.push_back(std::move(r));
  }
  return out;
}

std::string nowUtcText() { return nowUtc(); }

std::string defaultTuningDatabasePath() {
  if (const char *p = std::getenv("IGNC_TUNING_DB"); p && *p)
    return p;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/ignc/tuning.db";
  if (const char *h = std::getenv("HOME"); h && *h)
    return std::string(h) + "/.cache/ignc/tuning.db";
  return "ignc-tuning.db";
}

std::string recordsToJson(const std::vector<TuningRecord> &records) {
  nlohmann::json list = nlohmann::json::array();
  for (const TuningRecord &r : records)
    list.push_back(
        {{"task", r.task},
         {"fingerprint", r.fingerprint},
         {"schedule", nlohmann::json::parse(r.schedule, nullptr, false)},
         {"status", statusName(r.status)},
         {"median_ns", r.medianNs},
         {"min_ns", r.minNs},
         {"p90_ns", r.p90Ns},
         {"runs", r.runs},
         {"rel_l2", r.relL2},
         {"max_abs", r.maxAbs},
         {"origin", r.origin},
         {"message", r.message},
         {"kernel", r.kernel},
         {"flops", r.flops},
         {"created", r.created},
         {"worker_cpu_s", r.workerCpuSeconds},
         {"worker_wall_s", r.workerWallSeconds}});
  for (size_t i = 0; i < records.size(); ++i)
    if (std::isfinite(records[i].predicted))
      list[i]["predicted"] = records[i].predicted;
  nlohmann::json j = {
      {"format", "ignc-tuning-records"}, {"version", 1}, {"records", list}};
  return j.dump(1);
}

std::optional<std::vector<TuningRecord>>
recordsFromJson(const std::string &text, std::string &error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  // value() throws when a key holds another type than its default's.
  auto field = [&](const char *key) -> nlohmann::json {
    return j.is_object() && j.contains(key) ? j[key] : nlohmann::json();
  };
  if (j.is_discarded() || !j.is_object() ||
      field("format") != "ignc-tuning-records") {
    error = "not an ignc tuning-records JSON file (format "
            "\"ignc-tuning-records\")";
    return std::nullopt;
  }
  if (field("version") != 1) {
    error = "unsupported tuning-records version";
    return std::nullopt;
  }
  if (!j.contains("records") || !j["records"].is_array()) {
    error = "no \"records\" array";
    return std::nullopt;
  }
  std::vector<TuningRecord> out;
  size_t index = 0;
  for (const nlohmann::json &e : j["records"]) {
    auto where = "record " + std::to_string(index++);
    if (!e.is_object()) {
      error = where + " is not an object";
      return std::nullopt;
    }
    TuningRecord r;
    try {
      r.task = e.at("task").get<std::string>();
      r.fingerprint = e.at("fingerprint").get<std::string>();
      if (!e.at("schedule").is_object())
        throw std::runtime_error("schedule is not an object");
      for (auto &[k, v] : e.at("schedule").items())
        if (!v.is_number_integer())
          throw std::runtime_error("knob '" + k + "' is not an integer");
      r.schedule = e.at("schedule").dump();
      auto status = statusFromName(e.at("status").get<std::string>());
      if (!status)
        throw std::runtime_error("unknown status");
      r.status = *status;
      r.medianNs = e.value("median_ns", 0.0);
      r.minNs = e.value("min_ns", 0.0);
      r.p90Ns = e.value("p90_ns", 0.0);
      // value<int64_t>() casts a float, undefined out of range: integers
      // must be JSON integers.
      auto integer = [&](const char *key) -> int64_t {
        if (!e.contains(key))
          return 0;
        if (!e[key].is_number_integer())
          throw std::runtime_error(std::string(key) + " is not an integer");
        return e[key].get<int64_t>();
      };
      r.runs = integer("runs");
      r.relL2 = e.value("rel_l2", 0.0);
      r.maxAbs = e.value("max_abs", 0.0);
      r.origin = e.value("origin", std::string("imported"));
      r.message = e.value("message", std::string());
      r.kernel = e.value("kernel", std::string());
      r.flops = integer("flops");
      r.created = e.at("created").get<std::string>();
      if (e.contains("predicted") && e["predicted"].is_number())
        r.predicted = e["predicted"].get<double>();
      r.workerCpuSeconds = e.value("worker_cpu_s", 0.0);
      r.workerWallSeconds = e.value("worker_wall_s", 0.0);
    } catch (const std::exception &ex) {
      error = where + ": " + ex.what();
      return std::nullopt;
    }
    if (r.task.empty() || r.fingerprint.empty() || r.created.empty()) {
      error = where + ": empty task, fingerprint or time";
      return std::nullopt;
    }
    if (r.status == Status::Ok && !(r.medianNs > 0)) {
      error = where + ": an ok record needs a positive median_ns";
      return std::nullopt;
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace ign::search
