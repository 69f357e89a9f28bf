//===- CostModel.h - learned ranking of candidate schedules -----*- C++ -*-===//
//
// Gradient-boosted trees (XGBoost's C API) trained online on the
// measurements so far: features of (kernel, schedule) -> how much faster
// than the kernel's default schedule (log ratio, higher is better). The
// search measures only the candidates the model ranks highest.
//
//===----------------------------------------------------------------------===//

#ifndef IGN_SEARCH_COSTMODEL_H
#define IGN_SEARCH_COSTMODEL_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ign::search {

class CostModel {
public:
  explicit CostModel(uint64_t seed);
  ~CostModel();
  CostModel(const CostModel &) = delete;
  CostModel &operator=(const CostModel &) = delete;

  void addSample(std::vector<float> features, float label);
  /// Retrains from all samples. False (and `error()`) when XGBoost fails;
  /// the model then predicts nothing (predict returns an empty vector).
  bool train();
  /// Scores, higher = predicted faster; empty when untrained.
  std::vector<float> predict(const std::vector<std::vector<float>> &rows);
  const std::string &error() const { return error_; }

private:
  uint64_t seed_;
  size_t width_ = 0;
  std::vector<float> data_, labels_;
  void *booster_ = nullptr;
  std::string error_;
};

} // namespace ign::search

#endif // IGN_SEARCH_COSTMODEL_H
