//===- DatabaseCommands.cpp - ignc db stats|export|import|merge
//------------===//

#include "ign/Driver/Driver.h"
#include "ign/Search/TuningDatabase.h"
#include "ign/Target/TargetRegistry.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace ign {

namespace {

int dbError(const std::string &message, int code = kExitRuntime) {
  std::cerr << "ignc: error: " << message << "\n";
  return code;
}

struct Counts {
  int64_t records = 0, ok = 0, failed = 0;
  std::map<std::string, int64_t> tasks;
};

int stats(search::TuningDatabase &db, const std::string &here, bool json) {
  std::map<std::string, Counts> byFingerprint;
  std::map<std::string, int64_t> byStatus;
  for (const search::TuningRecord &r : db.all()) {
    Counts &c = byFingerprint[r.fingerprint];
    ++c.records;
    ++c.tasks[r.task];
    (r.status == search::Status::Ok ? c.ok : c.failed) += 1;
    ++byStatus[search::statusName(r.status)];
  }
  if (json) {
    nlohmann::json j = {{"path", db.path()},
                        {"this_fingerprint", here},
                        {"by_status", byStatus},
                        {"fingerprints", nlohmann::json::array()}};
    for (auto &[fp, c] : byFingerprint)
      j["fingerprints"].push_back({{"fingerprint", fp},
                                   {"records", c.records},
                                   {"ok", c.ok},
                                   {"failed", c.failed},
                                   {"tasks", c.tasks.size()},
                                   {"this_machine", fp == here}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("tuning database %s\n", db.path().c_str());
  std::printf("this machine: %s\n", here.c_str());
  std::printf("%-40s %8s %8s %8s %6s\n", "fingerprint", "records", "ok",
              "failed", "tasks");
  for (auto &[fp, c] : byFingerprint)
    std::printf("%-40s %8lld %8lld %8lld %6zu%s\n", fp.c_str(),
                (long long)c.records, (long long)c.ok, (long long)c.failed,
                c.tasks.size(), fp == here ? "  (this machine)" : "");
  std::string statuses;
  for (auto &[s, n] : byStatus)
    statuses += (statuses.empty() ? "" : ", ") + s + " " + std::to_string(n);
  std::printf("by status: %s\n",
              statuses.empty() ? "(empty)" : statuses.c_str());
  return kExitOk;
}

} // namespace

int runDbCommand(const DbCommand &command) {
  std::string path = command.dbPath.empty()
                         ? search::defaultTuningDatabasePath()
                         : command.dbPath;
  // Reading a database that is not there would create an empty one.
  if (command.action != "import" && command.action != "merge" &&
      !std::filesystem::exists(path))
    return dbError("no tuning database at '" + path + "'", kExitImport);
  std::string error;
  auto db = search::TuningDatabase::open(path, error);
  if (!db)
    return dbError(error);
  // "This machine": the host target's fingerprint for its own CPU.
  target::registerBuiltinTargets();
  const target::Target *host = target::fallbackTarget();
  std::string here =
      host ? host->fingerprint({host->defaultChip(), "default", true}) : "";
  if (command.action == "stats")
    return stats(*db, here, command.json);
  if (command.action == "export") {
    std::string fp = command.fingerprint == "this" ? here : command.fingerprint;
    std::string text = search::recordsToJson(db->all(fp));
    if (command.file.empty() || command.file == "-") {
      std::cout << text;
      return kExitOk;
    }
    std::ofstream out(command.file, std::ios::trunc);
    out << text;
    if (!out)
      return dbError("cannot write '" + command.file + "'", kExitOutput);
    return kExitOk;
  }
  std::vector<search::TuningRecord> incoming;
  if (command.action == "import") {
    std::ifstream in(command.file);
    if (!in)
      return dbError("cannot read '" + command.file + "'", kExitImport);
    std::ostringstream ss;
    ss << in.rdbuf();
    auto records = search::recordsFromJson(ss.str(), error);
    if (!records)
      return dbError(command.file + ": " + error, kExitImport);
    incoming = std::move(*records);
  } else if (command.action == "merge") {
    if (!std::filesystem::exists(command.file))
      return dbError("no tuning database at '" + command.file + "'",
                     kExitImport);
    auto other = search::TuningDatabase::open(command.file, error);
    if (!other)
      return dbError(error, kExitImport);
    incoming = other->all();
  } else {
    return dbError("unknown db action '" + command.action +
                       "' (stats, export, import, merge)",
                   kExitUsage);
  }
  int64_t foreign = 0;
  for (const search::TuningRecord &r : incoming)
    foreign += r.fingerprint != here;
  int64_t added = db->addAll(incoming, error);
  if (added < 0)
    return dbError(error);
  std::printf("%s: %lld new record(s) of %zu (%zu already present)\n",
              path.c_str(), (long long)added, incoming.size(),
              incoming.size() - size_t(added));
  if (foreign)
    std::printf("note: %lld record(s) are for other target fingerprints; "
                "they are kept but never applied on this machine (%s)\n",
                (long long)foreign, here.c_str());
  return kExitOk;
}

} // namespace ign
