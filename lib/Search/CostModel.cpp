//===- CostModel.cpp - XGBoost over (kernel, schedule) features -----------===//

#include "ign/Search/CostModel.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>

namespace ign::search {

CostModel::CostModel(uint64_t seed) : seed_(seed) {}

CostModel::~CostModel() {
  if (booster_)
    XGBoosterFree(booster_);
}

void CostModel::addSample(std::vector<float> features, float label) {
  if (width_ == 0)
    width_ = features.size();
  features.resize(width_, 0.0f);
  data_.insert(data_.end(), features.begin(), features.end());
  labels_.push_back(label);
}

bool CostModel::train() {
  if (booster_) {
    XGBoosterFree(booster_);
    booster_ = nullptr;
  }
  if (labels_.size() < 4 || width_ == 0)
    return true; // too few samples to learn from; not an error
  DMatrixHandle matrix = nullptr;
  auto fail = [&](const char *what) {
    error_ = std::string(what) + ": " + XGBGetLastError();
    if (matrix)
      XGDMatrixFree(matrix);
    if (booster_)
      XGBoosterFree(booster_);
    booster_ = nullptr;
    return false;
  };
  if (XGDMatrixCreateFromMat(data_.data(), labels_.size(), width_, NAN,
                             &matrix) != 0)
    return fail("XGDMatrixCreateFromMat");
  if (XGDMatrixSetFloatInfo(matrix, "label", labels_.data(), labels_.size()) !=
      0)
    return fail("XGDMatrixSetFloatInfo");
  BoosterHandle booster;
  if (XGBoosterCreate(&matrix, 1, &booster) != 0)
    return fail("XGBoosterCreate");
  booster_ = booster;
  std::string seed = std::to_string(seed_ % 2147483647);
  const std::pair<const char *, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"max_depth", "6"},
      {"eta", "0.2"},
      {"min_child_weight", "1"},
      {"subsample", "1"},
      {"nthread", "1"},
      {"verbosity", "0"},
      {"seed", seed}};
  for (auto &[k, v] : params)
    if (XGBoosterSetParam(booster_, k, v.c_str()) != 0)
      return fail("XGBoosterSetParam");
  for (int iter = 0; iter < 50; ++iter)
    if (XGBoosterUpdateOneIter(booster_, iter, matrix) != 0)
      return fail("XGBoosterUpdateOneIter");
  XGDMatrixFree(matrix);
  return true;
}

std::vector<float>
CostModel::predict(const std::vector<std::vector<float>> &rows) {
  if (!booster_ || rows.empty())
    return {};
  std::vector<float> flat;
  for (const auto &r : rows) {
    size_t n = std::min(width_, r.size());
    flat.insert(flat.end(), r.begin(), r.begin() + n);
    flat.resize(flat.size() + (width_ - n), 0.0f);
  }
  DMatrixHandle matrix;
  if (XGDMatrixCreateFromMat(flat.data(), rows.size(), width_, NAN, &matrix) !=
      0) {
    error_ = XGBGetLastError();
    return {};
  }
  bst_ulong n = 0;
  const float *out = nullptr;
  int rc = XGBoosterPredict(booster_, matrix, 0, 0, 0, &n, &out);
  std::vector<float> scores;
  if (rc == 0 && n == rows.size())
    scores.assign(out, out + n);
  else
    error_ = XGBGetLastError();
  XGDMatrixFree(matrix);
  return scores;
}

} // namespace ign::search
