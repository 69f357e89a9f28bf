//===- TargetRegistry.cpp - the targets ignc knows ------------------------===//

#include "ign/Target/TargetRegistry.h"

#include "llvm/ADT/StringExtras.h"

#include <mutex>

namespace ign::target {

Target::~Target() = default;

std::string Target::checkChip(const std::string &chip) const {
  std::vector<std::string> names;
  for (const ChipInfo &c : chips()) {
    if (c.name == chip)
      return "";
    names.push_back(c.name);
  }
  return "unknown chip '" + chip + "' for target '" + name() + "' (" +
         llvm::join(names, ", ") + ")";
}

std::optional<ChipInfo> Target::chipInfo(const std::string &chip) const {
  for (ChipInfo &c : chips())
    if (c.name == chip)
      return c;
  return std::nullopt;
}

GraphPolicy Target::graphPolicy(const TargetConfig &config) const {
  GraphPolicy policy;
  policy.fuse = config.fuse;
  policy.convToMatmul = config.schedule == "default";
  return policy;
}

namespace {
struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<Target>> targets;
};
Registry &registry() {
  static Registry r;
  return r;
}
} // namespace

bool registerTarget(std::unique_ptr<Target> target) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto &t : r.targets)
    if (t->name() == target->name())
      return false;
  r.targets.push_back(std::move(target));
  return true;
}

std::vector<const Target *> registeredTargets() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<const Target *> out;
  for (auto &t : r.targets)
    out.push_back(t.get());
  return out;
}

const Target *findTarget(llvm::StringRef name) {
  for (const Target *t : registeredTargets())
    if (t->name() == name)
      return t;
  return nullptr;
}

const Target *fallbackTarget() {
  for (const Target *t : registeredTargets())
    if (t->runsUnclaimedKernels())
      return t;
  return nullptr;
}

std::optional<Selection> resolveTarget(llvm::StringRef spelling,
                                       llvm::StringRef chip,
                                       std::string &error) {
  Selection s;
  if ((s.target = findTarget(spelling))) {
    s.chip = chip.empty() ? s.target->defaultChip() : chip.str();
  } else {
    for (const Target *t : registeredTargets())
      if (auto c = t->chipForSpelling(spelling)) {
        s.target = t;
        s.chip = *c;
        break;
      }
    if (!s.target) {
      error = "unknown target '" + spelling.str() +
              "'; `ignc targets` lists the known ones";
      return std::nullopt;
    }
    if (!chip.empty() && chip != s.chip) {
      error = "--target=" + spelling.str() + " names chip '" + s.chip +
              "' of target '" + s.target->name() + "'; --chip " + chip.str() +
              " contradicts it";
      return std::nullopt;
    }
  }
  error = s.target->checkChip(s.chip);
  if (!error.empty())
    return std::nullopt;
  return s;
}

void registerRuntimeDrivers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Target *t : registeredTargets())
      t->registerRuntimeDriver();
  });
}

} // namespace ign::target
