//===- BundleWriter.cpp - writes a kernel bundle
//---------------------------===//

#include "ign/Bundle/BundleWriter.h"
#include "ign/Bundle/BundleFormat.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#ifndef IGN_VERSION_STRING
#define IGN_VERSION_STRING "unknown"
#endif

namespace ign::bundle {
namespace {

struct SectionData {
  SectionKind kind;
  std::string name;
  std::string_view bytes;
};

nlohmann::json tensorJson(const TensorSpec &t) {
  return {{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}};
}

/// Weights packed at 64-byte aligned offsets, in manifest order.
std::string packWeights(const BundleContents &c,
                        std::vector<uint64_t> &offsets) {
  std::string bytes;
  for (const auto &[spec, data] : c.weights) {
    bytes.resize(alignUp(bytes.size(), kSectionAlignment), '\0');
    offsets.push_back(bytes.size());
    bytes.append(data.data(), data.size());
  }
  return bytes;
}

std::string manifestWithOffsets(const BundleContents &c,
                                const std::vector<uint64_t> &offsets) {
  nlohmann::json m;
  m["format_version"] = formatVersionOf(c);
  m["compiler"] = {{"name", "ignc"}, {"version", IGN_VERSION_STRING}};
  m["target"] = {{"name", c.targetName},
                 {"triple", c.triple},
                 {"cpu", c.cpu},
                 {"features", c.features}};
  if (!c.chip.empty())
    m["target"]["chip"] = c.chip;
  m["model"] = {
      {"source", c.modelSource}, {"producer", c.producer}, {"opset", c.opset}};
  if (!c.modelSha256.empty())
    m["model"]["sha256"] = c.modelSha256;
  if (!c.compileArgs.empty())
    m["compile"] = {{"args", c.compileArgs}};
  m["inputs"] = nlohmann::json::array();
  for (const auto &t : c.inputs)
    m["inputs"].push_back(tensorJson(t));
  m["outputs"] = nlohmann::json::array();
  for (const auto &t : c.outputs) {
    nlohmann::json out = tensorJson(t);
    if (!t.shapeOf.empty())
      out["shape_of"] = t.shapeOf;
    m["outputs"].push_back(out);
  }
  m["weights"] = nlohmann::json::array();
  for (size_t i = 0; i < c.weights.size(); ++i) {
    nlohmann::json w = tensorJson(c.weights[i].first);
    w["offset"] = offsets[i];
    w["bytes"] = c.weights[i].second.size();
    m["weights"].push_back(w);
  }
  m["memory"] = {{"arena_bytes", c.arenaBytes}};
  m["kernels"] = nlohmann::json::array();
  uint64_t blobOffset = 0;
  for (const auto &k : c.kernels) {
    nlohmann::json kernel = {
        {"name", k.name},
        {"symbol", k.symbol},
        {"ops", k.ops},
        {"workgroups", k.workgroups},
        {"results", k.results},
        {"task", k.task},
        {"op_shapes", k.opShapes},
        {"flops", k.flops},
        {"bytes_read", k.bytesRead},
        {"bytes_written", k.bytesWritten},
        {"schedule", nlohmann::json::parse(k.scheduleJson)}};
    if (k.steps > 1)
      kernel["steps"] = k.steps;
    if (!k.device.empty()) {
      nlohmann::json d = nlohmann::json::parse(k.deviceJson);
      d["name"] = k.device;
      d["blob_offset"] = blobOffset;
      d["blob_bytes"] = k.deviceBlob.size();
      blobOffset += (k.deviceBlob.size() + 63) / 64 * 64;
      kernel["device"] = d;
    }
    m["kernels"].push_back(kernel);
  }
  m["launches"] = nlohmann::json::array();
  for (const auto &l : c.launches) {
    nlohmann::json args = nlohmann::json::array();
    for (const auto &a : l.args) {
      nlohmann::json arg = {{"kind", a.kind}};
      if (a.kind == "arena")
        arg["offset"] = a.offset;
      else
        arg["index"] = a.index;
      arg["dtype"] = a.dtype;
      arg["shape"] = a.shape;
      args.push_back(arg);
    }
    nlohmann::json launch = {{"kind", launchKindName(l.kind)}};
    if (l.kind == LaunchSpec::Kind::Kernel)
      launch["kernel"] = l.kernel;
    if (l.kind != LaunchSpec::Kind::Kernel &&
        l.kind != LaunchSpec::Kind::Copy && l.kind != LaunchSpec::Kind::Fail)
      launch["to"] = l.to;
    if (l.kind == LaunchSpec::Kind::Fail)
      launch["message"] = l.message;
    if (l.kind == LaunchSpec::Kind::Loop && !l.message.empty())
      launch["must_run_all"] = l.message;
    if (l.kind == LaunchSpec::Kind::Loop && l.maxTrips >= 0)
      launch["max_trips"] = l.maxTrips;
    if (l.kind == LaunchSpec::Kind::Copy && !l.at.empty())
      launch["at"] = l.at;
    launch["args"] = std::move(args);
    m["launches"].push_back(std::move(launch));
  }
  return m.dump(2);
}

std::string writeSections(const std::string &path,
                          const std::vector<SectionData> &sections,
                          uint32_t version);
} // namespace

const char *launchKindName(LaunchSpec::Kind kind) {
  switch (kind) {
  case LaunchSpec::Kind::Kernel:
    return "kernel";
  case LaunchSpec::Kind::Copy:
    return "copy";
  case LaunchSpec::Kind::Branch:
    return "branch";
  case LaunchSpec::Kind::Jump:
    return "jump";
  case LaunchSpec::Kind::Loop:
    return "loop";
  case LaunchSpec::Kind::Next:
    return "next";
  case LaunchSpec::Kind::Fail:
    return "fail";
  }
  return "kernel";
}

std::string writeBundle(const std::string &path,
                        const BundleContents &contents) {
  std::vector<uint64_t> offsets;
  std::string weights = packWeights(contents, offsets);
  std::string manifest;
  try {
    manifest = manifestWithOffsets(contents, offsets);
  } catch (const std::exception &e) {
    return std::string("cannot build the manifest: ") + e.what();
  }
  std::vector<SectionData> sections = {
      {SectionKind::Manifest, "manifest", manifest},
      {SectionKind::Weights, "weights", weights},
      {SectionKind::Artifact, "kernels", contents.artifact}};
  // Device kernels' programs, each at a multiple of 64 bytes.
  std::string device;
  for (const auto &k : contents.kernels)
    if (!k.device.empty()) {
      device += k.deviceBlob;
      device.resize((device.size() + 63) / 64 * 64, '\0');
    }
  if (!device.empty())
    sections.push_back({SectionKind::Device, "device", device});
  return writeSections(path, sections, formatVersionOf(contents));
}

uint32_t formatVersionOf(const BundleContents &c) {
  for (const KernelSpec &k : c.kernels)
    if (k.steps > 1)
      return kFormatVersion;
  for (const TensorSpec &t : c.outputs)
    if (!t.shapeOf.empty())
      return kShapeOfFormatVersion;
  return kOldestFormatVersion;
}

namespace {
std::string writeSections(const std::string &path,
                          const std::vector<SectionData> &sections,
                          uint32_t version) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = version;
  header.sectionCount = uint32_t(sections.size());
  header.sectionTableOffset = sizeof(Header);
  std::vector<SectionEntry> table(sections.size());
  uint64_t offset = alignUp(
      sizeof(Header) + table.size() * sizeof(SectionEntry), kSectionAlignment);
  for (size_t i = 0; i < sections.size(); ++i) {
    SectionEntry &e = table[i];
    e.kind = uint32_t(sections[i].kind);
    e.offset = offset;
    e.size = sections[i].bytes.size();
    e.checksum = fnv1a(sections[i].bytes.data(), sections[i].bytes.size());
    std::strncpy(e.name, sections[i].name.c_str(), sizeof(e.name) - 1);
    offset = alignUp(offset + e.size, kSectionAlignment);
  }
  header.fileSize = offset;
  header.headerChecksum = fnv1a(&header, offsetof(Header, headerChecksum));

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      return "cannot open '" + tmp + "' for writing";
    auto pad = [&](uint64_t to) {
      static const char zeros[kSectionAlignment] = {};
      uint64_t at = uint64_t(out.tellp());
      if (to > at)
        out.write(zeros, std::streamsize(to - at));
    };
    out.write(reinterpret_cast<const char *>(&header), sizeof(header));
    out.write(reinterpret_cast<const char *>(table.data()),
              std::streamsize(table.size() * sizeof(SectionEntry)));
    for (size_t i = 0; i < sections.size(); ++i) {
      pad(table[i].offset);
      out.write(sections[i].bytes.data(),
                std::streamsize(sections[i].bytes.size()));
    }
    pad(header.fileSize);
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return "writing '" + tmp + "' failed (disk full?)";
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return "cannot move the bundle into place at '" + path + "'";
  }
  return "";
}
} // namespace

} // namespace ign::bundle
