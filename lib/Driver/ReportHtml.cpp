//===- ReportHtml.cpp - `ignc report` as one self-contained HTML page -----===//
//
// Plain HTML with inline SVG charts (no script or font from a network, so
// it renders offline); the report's JSON is embedded for `--verify`.
//
//===----------------------------------------------------------------------===//

#include "Report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace ign::report {

namespace {

std::string escape(const std::string &s) {
  std::string out;
  for (char c : s)
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  return out;
}

std::string num(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string ms(const nlohmann::json &stats) {
  if (!stats.is_object() || !stats.contains("median_ms"))
    return "-";
  return num(stats["median_ms"].get<double>(), 4) + " ms <small>(p10 " +
         num(stats["p10_ms"].get<double>(), 3) + ", p90 " +
         num(stats["p90_ms"].get<double>(), 3) + ", " +
         std::to_string(stats["runs"].get<int64_t>()) + " runs)</small>";
}

std::string interval(const nlohmann::json &i) {
  if (!i.is_object())
    return "-";
  return num(i["value"].get<double>()) + "x <small>[" +
         num(i["lo"].get<double>()) + ", " + num(i["hi"].get<double>()) +
         "]</small>";
}

/// Horizontal bars of speedups with their intervals, a line at 1x.
std::string
speedupBars(const std::vector<std::pair<std::string, nlohmann::json>> &rows) {
  if (rows.empty())
    return "<p>No speedups measured.</p>";
  double maxV = 1.5;
  for (const auto &[label, i] : rows)
    maxV = std::max(maxV, i["hi"].get<double>() * 1.1);
  int rowH = 22, left = 260, width = 760, height = rowH * int(rows.size()) + 40;
  auto x = [&](double v) { return left + (width - left - 20) * v / maxV; };
  std::ostringstream s;
  s << "<svg class='chart' width='" << width << "' height='" << height
    << "' viewBox='0 0 " << width << " " << height << "'>";
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto &[label, i] = rows[r];
    double y = 10 + rowH * double(r);
    double v = i["value"].get<double>();
    s << "<text x='" << left - 6 << "' y='" << y + 14
      << "' text-anchor='end' font-size='12'>" << escape(label) << "</text>";
    s << "<rect x='" << left << "' y='" << y + 3 << "' width='"
      << std::max(0.0, x(v) - left) << "' height='14' fill='"
      << (v >= 1 ? "#3a7" : "#c55") << "'/>";
    s << "<line x1='" << x(i["lo"].get<double>()) << "' x2='"
      << x(i["hi"].get<double>()) << "' y1='" << y + 10 << "' y2='" << y + 10
      << "' stroke='#222' stroke-width='2'/>";
    s << "<text x='" << x(v) + 4 << "' y='" << y + 14 << "' font-size='11'>"
      << num(v) << "x</text>";
  }
  s << "<line x1='" << x(1) << "' x2='" << x(1) << "' y1='5' y2='"
    << height - 25 << "' stroke='#555' stroke-dasharray='4'/>";
  s << "<text x='" << x(1) << "' y='" << height - 8
    << "' font-size='11' text-anchor='middle'>1x</text></svg>";
  return s.str();
}

/// Log-log roofline: achieved GFLOP/s of each host kernel against its
/// arithmetic intensity, under the machine's compute and bandwidth roofs.
std::string rooflineChart(const nlohmann::json &r) {
  double peak = r["machine"]["peak_gflops"].get<double>();
  double bw = r["machine"]["bandwidth_gbs"].get<double>();
  std::vector<std::tuple<double, double, std::string>> points;
  for (const auto &k : r["kernels"])
    if (k.contains("roofline") && k["roofline"]["intensity"] > 0 &&
        k["roofline"]["gflops"] > 0)
      points.emplace_back(k["roofline"]["intensity"].get<double>(),
                          k["roofline"]["gflops"].get<double>(),
                          k["name"].get<std::string>());
  if (points.empty() || !(peak > 0) || !(bw > 0))
    return "<p>No roofline: no host kernel with FLOPs, or no measured "
           "peak.</p>";
  double x0 = 1e-2, x1 = 1e3, y0 = 1e-2, y1 = peak * 3;
  for (auto &[i, g, n] : points) {
    x0 = std::min(x0, i / 2), x1 = std::max(x1, i * 2);
    y0 = std::min(y0, g / 2);
  }
  int w = 760, h = 420, l = 60, b = 40;
  auto px = [&](double v) {
    return l + (w - l - 20) * std::log10(v / x0) / std::log10(x1 / x0);
  };
  auto py = [&](double v) {
    return (h - b) - (h - b - 10) * std::log10(v / y0) / std::log10(y1 / y0);
  };
  std::ostringstream s;
  s << "<svg class='chart' width='" << w << "' height='" << h
    << "' viewBox='0 0 " << w << " " << h << "'>";
  s << "<polyline fill='none' stroke='#25a' stroke-width='2' points='";
  for (int step = 0; step <= 60; ++step) {
    double i = x0 * std::pow(x1 / x0, step / 60.0);
    s << px(i) << "," << py(std::min(peak, bw * i)) << " ";
  }
  s << "'/>";
  for (double t = std::pow(10, std::ceil(std::log10(x0))); t <= x1; t *= 10)
    s << "<text x='" << px(t) << "' y='" << h - b + 16
      << "' font-size='11' text-anchor='middle'>" << num(t) << "</text>";
  for (double t = std::pow(10, std::ceil(std::log10(y0))); t <= y1; t *= 10)
    s << "<text x='" << l - 4 << "' y='" << py(t) + 4
      << "' font-size='11' text-anchor='end'>" << num(t) << "</text>";
  for (auto &[i, g, n] : points)
    s << "<circle cx='" << px(i) << "' cy='" << py(g)
      << "' r='4' fill='#d62' fill-opacity='0.7'><title>" << escape(n) << ": "
      << num(g) << " GFLOP/s at " << num(i) << " FLOP/byte</title></circle>";
  s << "<text x='" << w / 2 << "' y='" << h - 6
    << "' font-size='12' text-anchor='middle'>arithmetic intensity "
       "(FLOP/byte)</text>";
  s << "<text x='14' y='" << h / 2
    << "' font-size='12' transform='rotate(-90 14 " << h / 2
    << ")' text-anchor='middle'>GFLOP/s</text>";
  s << "<text x='" << w - 24 << "' y='" << py(peak) - 6
    << "' font-size='11' text-anchor='end'>peak " << num(peak) << " GFLOP/s, "
    << num(bw) << " GB/s</text></svg>";
  return s.str();
}

/// Each tuned task's best latency after each trial, relative to its first.
std::string curvesChart(const nlohmann::json &r) {
  std::vector<std::pair<std::string, std::vector<double>>> curves;
  for (const auto &k : r["kernels"]) {
    if (!k.contains("tuning"))
      continue;
    std::vector<double> c;
    double first = 0;
    for (const auto &v : k["tuning"]["best_curve_ms"]) {
      double x = v.get<double>();
      if (first == 0 && x > 0)
        first = x;
      c.push_back(first > 0 && x > 0 ? first / x : 1);
    }
    if (c.size() > 1)
      curves.emplace_back(k["name"].get<std::string>(), c);
  }
  if (curves.empty())
    return "<p>No tuning records for these kernels.</p>";
  std::sort(curves.begin(), curves.end(),
            [](auto &a, auto &b) { return a.second.back() > b.second.back(); });
  curves.resize(std::min<size_t>(curves.size(), 8));
  size_t n = 0;
  double top = 1.2;
  for (auto &[name, c] : curves) {
    n = std::max(n, c.size());
    top = std::max(top, *std::max_element(c.begin(), c.end()) * 1.1);
  }
  int w = 760, h = 300, l = 50, b = 30;
  const char *colors[] = {"#25a", "#d62", "#3a7", "#a3a",
                          "#aa2", "#2aa", "#555", "#c55"};
  std::ostringstream s;
  s << "<svg class='chart' width='" << w << "' height='"
    << h + 20 * curves.size() << "'>";
  for (size_t i = 0; i < curves.size(); ++i) {
    s << "<polyline fill='none' stroke='" << colors[i] << "' points='";
    for (size_t t = 0; t < curves[i].second.size(); ++t)
      s << l + (w - l - 20) * double(t) / double(std::max<size_t>(1, n - 1))
        << "," << (h - b) - (h - b - 10) * (curves[i].second[t] - 1) / (top - 1)
        << " ";
    s << "'/><text x='" << l << "' y='" << h + 20 * i + 12 << "' fill='"
      << colors[i] << "' font-size='12'>" << escape(curves[i].first) << ": "
      << num(curves[i].second.back()) << "x after " << curves[i].second.size()
      << " trials</text>";
  }
  s << "<text x='" << l - 4 << "' y='" << 14
    << "' font-size='11' text-anchor='end'>" << num(top) << "x</text>";
  s << "<text x='" << l - 4 << "' y='" << h - b
    << "' font-size='11' text-anchor='end'>1x</text>";
  s << "<text x='" << w / 2 << "' y='" << h - 8
    << "' font-size='12' text-anchor='middle'>trials (best so far over the "
       "first measured)</text></svg>";
  return s.str();
}

/// The cost model's score of each candidate it ranked against what the
/// candidate measured (both log(default / latency)): a good model's points
/// rise from left to right.
std::string predictionsChart(const nlohmann::json &r) {
  std::vector<std::pair<double, double>> points;
  for (const auto &k : r["kernels"])
    if (k.contains("tuning"))
      for (const auto &p : k["tuning"]["predicted_vs_measured"])
        points.emplace_back(p[0].get<double>(), p[1].get<double>());
  if (points.size() < 2)
    return "<p>No candidate was ranked by the cost model.</p>";
  double x0 = 1e9, x1 = -1e9, y0 = 1e9, y1 = -1e9;
  for (auto &[x, y] : points) {
    x0 = std::min(x0, x), x1 = std::max(x1, x);
    y0 = std::min(y0, y), y1 = std::max(y1, y);
  }
  double dx = std::max(1e-6, x1 - x0), dy = std::max(1e-6, y1 - y0);
  int w = 420, h = 320, l = 50, b = 40;
  std::ostringstream s;
  s << "<svg class='chart' width='" << w << "' height='" << h << "'>";
  for (auto &[x, y] : points)
    s << "<circle cx='" << l + (w - l - 10) * (x - x0) / dx << "' cy='"
      << (h - b) - (h - b - 10) * (y - y0) / dy
      << "' r='3' fill='#25a' fill-opacity='0.5'/>";
  s << "<text x='" << w / 2 << "' y='" << h - 8
    << "' font-size='12' text-anchor='middle'>predicted (" << num(x0) << " .. "
    << num(x1) << ")</text><text x='14' y='" << h / 2
    << "' font-size='12' text-anchor='middle' transform='rotate(-90 14 "
    << h / 2 << ")'>measured log(default / latency) (" << num(y0) << " .. "
    << num(y1) << ")</text></svg>";
  return s.str();
}

std::string kernelTableHtml(const nlohmann::json &r) {
  std::ostringstream s;
  s << "<table><tr><th>kernel</th><th>where</th><th>schedule</th><th>bundle"
       "</th><th>default</th><th>speedup [95%]</th><th>GFLOP/s</th><th>% of "
       "roofline</th><th>trials</th><th>rel L2 (tuning)</th></tr>";
  for (const auto &k : r["kernels"]) {
    s << "<tr><td>" << escape(k["name"].get<std::string>()) << "</td><td>"
      << escape(k["where"].get<std::string>()) << "</td><td>"
      << escape(k["schedule"].value("kind", "?")) << "</td><td>"
      << ms(k["tuned"]) << "</td><td>"
      << ms(k.value("default", nlohmann::json())) << "</td><td>"
      << interval(k.value("speedup", nlohmann::json())) << "</td><td>";
    if (k.contains("roofline"))
      s << num(k["roofline"]["gflops"].get<double>());
    s << "</td><td>";
    if (k.contains("roofline") && k["roofline"].contains("percent_of_roofline"))
      s << num(k["roofline"]["percent_of_roofline"].get<double>()) << "%";
    s << "</td><td>";
    if (k.contains("tuning"))
      s << k["tuning"]["trials"];
    s << "</td><td>";
    if (k.contains("tuning") && k["tuning"].contains("validation"))
      s << num(k["tuning"]["validation"]["rel_l2"].get<double>());
    s << "</td></tr>";
  }
  return s.str() + "</table>";
}

std::string correctnessHtml(const nlohmann::json &r) {
  std::ostringstream s;
  s << "<table><tr><th>input set</th><th>against</th><th>output</th><th>rel "
       "L2</th><th>max abs</th><th>threshold</th><th>result</th></tr>";
  for (const auto &set : r["correctness"])
    for (const char *against : {"reference", "onnxruntime"})
      for (const auto &o : set.value(against, nlohmann::json::array()))
        s << "<tr><td>" << set["set"] << " ("
          << escape(set["distribution"].get<std::string>()) << ")</td><td>"
          << against << "</td><td>" << escape(o["output"].get<std::string>())
          << "</td><td>" << num(o.value("rel_l2", 0.0)) << "</td><td>"
          << num(o.value("max_abs", 0.0)) << "</td><td>"
          << escape(o.value("threshold", nlohmann::json()).dump())
          << "</td><td class='"
          << (o.value("pass", false) ? "ok'>pass" : "bad'>FAIL")
          << "</td></tr>";
  return s.str() + "</table>";
}

std::string definitionList(const nlohmann::json &object) {
  std::ostringstream s;
  s << "<table>";
  for (auto &[key, value] : object.items())
    s << "<tr><th>" << escape(key) << "</th><td>"
      << escape(value.is_string() ? value.get<std::string>() : value.dump())
      << "</td></tr>";
  return s.str() + "</table>";
}

std::string embeddedJson(const nlohmann::json &r) {
  std::string text = r.dump();
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/')
      out += "<\\";
    else
      out += text[i];
  }
  return out;
}

const char *kStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;margin:1em 0;font-size:13px}"
    "td,th{border:1px solid #ccc;padding:3px 6px;text-align:left}"
    ".ok{color:#080}.bad{color:#b00;font-weight:bold}"
    ".chart{border:1px solid #eee;margin:0.5em 0}code{background:#f4f4f4}";

/// What `--verify` reads of a report, checked before it is read: "" or
/// what is missing.
std::string malformed(const nlohmann::json &r) {
  auto has = [](const nlohmann::json &o, const char *key, auto isType) {
    return o.is_object() && o.contains(key) && isType(o[key]);
  };
  auto isString = [](const nlohmann::json &v) { return v.is_string(); };
  auto isObject = [](const nlohmann::json &v) { return v.is_object(); };
  auto isNumber = [](const nlohmann::json &v) { return v.is_number(); };
  auto isArray = [](const nlohmann::json &v) { return v.is_array(); };
  if (!has(r, "bundle", isObject) || !has(r["bundle"], "sha256", isString) ||
      !has(r["bundle"], "weights_sha256", isObject))
    return "no bundle digests";
  if (!has(r, "model", isObject) || !has(r["model"], "sha256", isString) ||
      !has(r["model"], "path", isString))
    return "no model path or digest";
  if (!has(r, "environment", isObject) || !has(r, "end_to_end", isObject) ||
      !has(r, "measurement", isObject) ||
      !has(r["measurement"], "threads", isNumber))
    return "no environment or measurement";
  if (!has(r, "kernels", isArray) || !has(r, "claims", isArray))
    return "no kernels or claims";
  for (const auto &k : r["kernels"])
    if (!has(k, "name", isString) || !k.contains("schedule"))
      return "a kernel without a name or schedule";
  for (const auto &c : r["claims"]) {
    if (!has(c, "id", isString))
      return "a claim without an id";
    if (c.contains("interval")) {
      const auto &i = c["interval"];
      if (!has(i, "value", isNumber) || !has(i, "lo", isNumber) ||
          !has(i, "hi", isNumber))
        return "claim '" + c["id"].get<std::string>() + "' has no interval";
    }
    bool speedup = c["id"].get<std::string>().find("speedup/") == 0 ||
                   c["id"].get<std::string>().find("kernel/") == 0;
    if (speedup && !c.contains("interval"))
      return "claim '" + c["id"].get<std::string>() + "' has no interval";
    if (c["id"] == "latency" &&
        (!has(c, "median_ms", isNumber) || !has(c, "p90_ms", isNumber)))
      return "the latency claim has no figures";
  }
  return "";
}

} // namespace

std::string renderHtml(const nlohmann::json &r) {
  const auto &e = r["end_to_end"];
  std::ostringstream s;
  std::string title = "ignc report: " + r["model"]["path"].get<std::string>() +
                      " on " + r["bundle"]["target"].value("name", "?");
  s << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
    << escape(title) << "</title><style>" << kStyle << "</style></head><body>";
  s << "<h1>" << escape(title) << "</h1><p>"
    << escape(r["environment"]["cpu_model"].get<std::string>()) << ", "
    << r["measurement"]["threads"] << " thread(s), created "
    << escape(r["created"].get<std::string>()) << "</p>";
  s << "<h2>End to end</h2><table><tr><th>the bundle</th><td>"
    << ms(e["bundle"]["warm"]) << " warm; " << ms(e["bundle"]["cold"])
    << " cold</td></tr><tr><th>default schedules</th><td>"
    << ms(e["default"]["warm"]) << "</td></tr><tr><th>onnxruntime</th><td>";
  if (e.contains("speedup_vs_onnxruntime"))
    s << ms(e["onnxruntime"]["warm"]) << " (version "
      << escape(e["onnxruntime"]["version"].get<std::string>()) << ")";
  else
    s << "not measured: " << escape(e["onnxruntime"].value("unavailable", ""));
  s << "</td></tr><tr><th>speedup over the default</th><td>"
    << interval(e["speedup_vs_default"]) << "</td></tr>";
  if (e.contains("speedup_vs_onnxruntime"))
    s << "<tr><th>speedup over onnxruntime</th><td>"
      << interval(e["speedup_vs_onnxruntime"]) << "</td></tr>";
  s << "</table>";
  std::vector<std::pair<std::string, nlohmann::json>> bars = {
      {"end to end vs default", e["speedup_vs_default"]}};
  if (e.contains("speedup_vs_onnxruntime"))
    bars.push_back({"end to end vs onnxruntime", e["speedup_vs_onnxruntime"]});
  std::vector<std::pair<double, std::pair<std::string, nlohmann::json>>> ks;
  // Kernels on their default schedule run the same code twice: their
  // "speedup" is the noise level, shown in the table, not as a bar.
  for (const auto &k : r["kernels"])
    if (k.contains("speedup") && k.contains("default") &&
        k["schedule"].value("kind", "") != "default")
      ks.push_back({k["default"]["median_ms"].get<double>(),
                    {k["name"].get<std::string>(), k["speedup"]}});
  std::sort(ks.begin(), ks.end(),
            [](auto &a, auto &b) { return a.first > b.first; });
  for (size_t i = 0; i < ks.size() && i < 16; ++i)
    bars.push_back(ks[i].second);
  s << "<h2>Speedups (95% bootstrap intervals)</h2><p>End to end, and the "
       "tuned kernels that take longest on their default schedules.</p>"
    << speedupBars(bars);
  s << "<h2>Roofline</h2><p>Host kernels: achieved GFLOP/s against "
       "arithmetic intensity (FLOPs over the bytes a launch reads and writes), "
       "under the FMA peak of the measuring threads and the memory bandwidth "
       "measured here. The roof is main memory's: a kernel whose data stays "
       "in cache can pass it.</p>"
    << rooflineChart(r);
  s << "<h2>Kernels</h2>" << kernelTableHtml(r);
  s << "<h2>Correctness</h2>" << correctnessHtml(r);
  s << "<h2>Tuning</h2>" << curvesChart(r)
    << "<h3>The cost model's predictions against the measurements</h3>"
    << predictionsChart(r);
  nlohmann::json cost = r["tuning"];
  cost.erase("runs");
  s << definitionList(cost);
  s << "<h2>How it was measured</h2>" << definitionList(r["measurement"]);
  s << "<h2>Environment</h2>" << definitionList(r["environment"]);
  s << "<h2>Files</h2><table><tr><th>model</th><td>"
    << escape(r["model"]["path"].get<std::string>()) << "</td><td><code>"
    << r["model"]["sha256"].get<std::string>() << "</code></td></tr><tr><th>"
    << "bundle</th><td>" << escape(r["bundle"]["path"].get<std::string>())
    << "</td><td><code>" << r["bundle"]["sha256"].get<std::string>()
    << "</code></td></tr></table>";
  s << "<h2>Reproduce</h2><pre>";
  for (const auto &c : r["reproduce"])
    s << escape(c.get<std::string>()) << "\n";
  s << "</pre><script type='application/json' id='ignc-report'>"
    << embeddedJson(r) << "</script>";
  // Marks the page as read: the render test finds the attribute only if the
  // embedded JSON parses and every chart is in place.
  s << "<script>var d=JSON.parse(document.getElementById('ignc-report')."
       "textContent);document.body.setAttribute('data-rendered',"
       "d.kernels.length+' kernels, '+document.querySelectorAll('svg').length+"
       "' charts');</script></body></html>\n";
  return s.str();
}

std::optional<nlohmann::json> readReportFile(const std::string &path,
                                             std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read '" + path + "'";
    return std::nullopt;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string open = "<script type='application/json' id='ignc-report'>";
  if (size_t at = text.find(open); at != std::string::npos) {
    size_t end = text.find("</script>", at);
    text = text.substr(at + open.size(), end - at - open.size());
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() ||
      j.value("format", "") != "ignc-report" || !j.contains("claims")) {
    error = "'" + path +
            "' is not an ignc report (JSON, or HTML that embeds "
            "it)";
    return std::nullopt;
  }
  if (std::string why = malformed(j); !why.empty()) {
    error = "the report '" + path + "' is damaged: " + why;
    return std::nullopt;
  }
  return j;
}

} // namespace ign::report
