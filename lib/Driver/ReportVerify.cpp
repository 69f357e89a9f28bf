//===- ReportVerify.cpp - `ignc report --verify`: do the claims hold? -----===//
//
// Re-measures a bundle as the report did (fresh random inputs) and checks
// each of the report's claims: the bundle and its weights and schedules
// are the ones reported, outputs still match the reference and
// onnxruntime, and speedups and latency hold within their intervals (plus
// --tolerance). On a machine whose fingerprint differs, timing claims are
// not compared; the differing fields are named instead.
//
//===----------------------------------------------------------------------===//

#include "Digest.h"
#include "Report.h"

#include <cstdio>
#include <iostream>

namespace ign::report {

namespace {

struct Verdicts {
  int failed = 0, held = 0, skipped = 0;
  void say(const char *verdict, const std::string &what) {
    std::printf("%-8s %s\n", verdict, what.c_str());
    std::string v = verdict;
    failed += v == "FAILS";
    held += v == "holds";
    skipped += v == "skipped";
  }
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// Names up to five weights in one line.
void sayWeights(const std::string &what, const std::vector<std::string> &names,
                Verdicts &v) {
  if (names.empty())
    return;
  std::string list;
  for (size_t i = 0; i < names.size() && i < 5; ++i)
    list += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 5)
    list += " and " + std::to_string(names.size() - 5) + " more";
  v.say("FAILS",
        std::to_string(names.size()) + " weight(s) " + what + ": " + list);
}

/// The bundle is byte for byte the one reported; if not, which weights
/// and which kernels' schedules changed.
void checkBundle(const ReportOptions &o, const nlohmann::json &claims,
                 const nlohmann::json &manifest, Verdicts &v) {
  std::string digest = sha256OfFile(o.bundlePath);
  const auto &reported = claims["bundle"];
  if (digest == reported["sha256"]) {
    v.say("holds", "the bundle is the one reported (sha256 " +
                       digest.substr(0, 16) + "...)");
    return;
  }
  v.say("FAILS", "the bundle differs from the one reported (sha256 " +
                     digest.substr(0, 16) + "... vs " +
                     reported["sha256"].get<std::string>().substr(0, 16) +
                     "...)");
  nlohmann::json now = weightDigests(o.bundlePath, manifest);
  std::vector<std::string> changed, gone, added;
  for (auto &[name, sha] : reported["weights_sha256"].items())
    if (!now.contains(name))
      gone.push_back(name);
    else if (now[name] != sha)
      changed.push_back(name);
  for (auto &[name, sha] : now.items())
    if (!reported["weights_sha256"].contains(name))
      added.push_back(name);
  sayWeights("changed", changed, v);
  sayWeights("not in the bundle any more (a schedule packs its weights)", gone,
             v);
  sayWeights("new", added, v);
  std::map<std::string, nlohmann::json> schedules;
  for (const auto &k : claims["kernels"])
    schedules[k["name"]] = k["schedule"];
  for (const auto &k : manifest["kernels"]) {
    auto it = schedules.find(k["name"]);
    if (it == schedules.end())
      v.say("FAILS", "kernel " + k["name"].get<std::string>() +
                         " was not in the report");
    else if (it->second != k["schedule"])
      v.say("FAILS", "kernel " + k["name"].get<std::string>() + ": schedule " +
                         k["schedule"].dump() + ", the report's " +
                         it->second.dump());
  }
}

std::string whose(const std::string &against) {
  return against == "reference" ? "the reference lowering's" : against + "'s";
}

void checkCorrect(const nlohmann::json &correctness, const char *against,
                  Verdicts &v) {
  std::string worst;
  bool any = false, pass = true;
  for (const auto &set : correctness) {
    if (set.contains("error")) {
      pass = false;
      worst = set["error"];
    }
    for (const auto &o : set.value(against, nlohmann::json::array())) {
      any = true;
      if (!o.value("pass", false) && pass) {
        pass = false;
        worst = "output '" + o["output"].get<std::string>() + "' on set " +
                set["set"].dump() + " (" +
                set["distribution"].get<std::string>() + "): rel L2 " +
                fmt(o.value("rel_l2", 0.0)) + ", max abs " +
                fmt(o.value("max_abs", 0.0)) + ", threshold " +
                o.value("threshold", nlohmann::json()).dump();
      }
    }
  }
  std::string what = "outputs match " + whose(against) + " on fresh inputs";
  if (!any && pass)
    v.say("skipped", what + ": nothing to compare");
  else
    v.say(pass ? "holds" : "FAILS", what + (pass ? "" : ": " + worst));
}

/// A speedup holds while the re-measured value stays above the claimed
/// interval's low end, less the tolerance.
void checkSpeedup(const std::string &what, const nlohmann::json &claimed,
                  const nlohmann::json &now, double tolerance, Verdicts &v) {
  if (!now.is_object()) {
    v.say("FAILS", what + ": not measurable now");
    return;
  }
  double lo = claimed["lo"].get<double>() * (1 - tolerance);
  double value = now["value"].get<double>();
  v.say(value >= lo ? "holds" : "FAILS",
        what + ": claimed " + fmt(claimed["value"]) + "x [" +
            fmt(claimed["lo"]) + ", " + fmt(claimed["hi"]) + "], now " +
            fmt(value) + "x [" + fmt(now["lo"]) + ", " + fmt(now["hi"]) + "]");
}

void checkTiming(const ReportOptions &o, const nlohmann::json &claims,
                 Measurement &m, Verdicts &v) {
  nlohmann::json e = endToEnd(m);
  nlohmann::json kernels = kernelsSection(m, Machine{}, nullptr);
  for (const auto &c : claims["claims"]) {
    std::string id = c["id"];
    if (id == "latency") {
      double now = e["bundle"]["warm"]["median_ms"];
      double limit = c["p90_ms"].get<double>() * (1 + o.tolerance);
      v.say(now <= limit ? "holds" : "FAILS",
            "latency: claimed median " + fmt(c["median_ms"]) + " ms (p90 " +
                fmt(c["p90_ms"]) + "), now " + fmt(now) + " ms");
    } else if (id == "speedup/default") {
      checkSpeedup("end to end over the default schedules", c["interval"],
                   e["speedup_vs_default"], o.tolerance, v);
    } else if (id == "speedup/onnxruntime") {
      if (!e.contains("speedup_vs_onnxruntime"))
        v.say("skipped", "end to end over onnxruntime: " +
                             e["onnxruntime"].value("unavailable", ""));
      else
        checkSpeedup("end to end over onnxruntime", c["interval"],
                     e["speedup_vs_onnxruntime"], o.tolerance, v);
    } else if (id.rfind("kernel/", 0) == 0) {
      std::string name = id.substr(7);
      nlohmann::json now;
      for (const auto &k : kernels)
        if (k["name"] == name)
          now = k.value("speedup", nlohmann::json());
      checkSpeedup("kernel " + name + " over its default schedule",
                   c["interval"], now, o.tolerance, v);
    }
  }
}

} // namespace

int verifyReport(const ReportOptions &options) {
  std::string error;
  auto claims = readReportFile(options.claimsPath, error);
  if (!claims) {
    std::cerr << "ignc: error: " << error << "\n";
    return kExitUsage;
  }
  ReportOptions o = options;
  o.seed = options.seed + 1000003; // fresh inputs, not the report's
  Measurement m;
  ignrt_bundle *b = nullptr;
  if (ignrt_bundle_open(o.bundlePath.c_str(), &b) != IGNRT_OK) {
    std::cerr << "ignc: error: " << o.bundlePath << ": " << ignrt_last_error()
              << "\n";
    return kExitRuntime;
  }
  nlohmann::json manifest = nlohmann::json::parse(ignrt_bundle_manifest(b));
  ignrt_bundle_close(b);
  if (o.modelPath.empty())
    o.modelPath = (*claims)["model"]["path"];
  std::string model = findModel(o, manifest, error);
  if (model.empty()) {
    std::cerr << "ignc: error: " << error << "\n";
    return kExitUsage;
  }
  Verdicts v;
  checkBundle(o, *claims, manifest, v);
  v.say(sha256OfFile(model) == (*claims)["model"]["sha256"] ? "holds" : "FAILS",
        "the model is the one reported (" + model + ")");
  if (!measure(o, model, m, error)) {
    std::cerr << "ignc: error: " << error << "\n";
    return kExitRuntime;
  }
  nlohmann::json correctness = checkCorrectness(m, true, o.checkSets);
  for (const char *against : {"reference", "onnxruntime"}) {
    // Only what the report claimed: a report that found the outputs
    // differing (onnxruntime's approximate sigmoid, say) claimed nothing.
    std::optional<bool> claimed;
    for (const auto &c : (*claims)["claims"])
      if (c["id"] == std::string("correct/") + against && c.contains("holds"))
        claimed = c["holds"].is_boolean() && c["holds"].get<bool>();
    if (!claimed)
      continue;
    if (*claimed)
      checkCorrect(correctness, against, v);
    else
      v.say("skipped", "outputs match " + whose(against) +
                           ": the report found they do not");
  }
  std::vector<std::string> differ = environmentDifferences(
      (*claims)["environment"], environmentFor(manifest));
  if ((*claims)["measurement"]["threads"] != o.threads)
    differ.push_back("threads (" + (*claims)["measurement"]["threads"].dump() +
                     " reported, " + std::to_string(o.threads) + " now)");
  if (differ.empty())
    checkTiming(o, *claims, m, v);
  else
    v.say(
        "skipped", "timing claims: this machine differs from the report's "
                   "in " +
                       [&] {
                         std::string s;
                         for (const std::string &d : differ)
                           s += (s.empty() ? "" : ", ") + d;
                         return s;
                       }());
  std::printf("verify: %d claim(s) hold, %d fail, %d not checked\n", v.held,
              v.failed, v.skipped);
  return v.failed ? kExitClaims : kExitOk;
}

} // namespace ign::report
