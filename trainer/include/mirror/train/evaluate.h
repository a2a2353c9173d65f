// mirror/train/evaluate.h — evaluation of a model on a split, data-parallel: every rank evaluates its own
// contiguous part (together the ranks cover every sample exactly once) and the sums are reduced, so no rank
// idles while another works and nothing waits without a timeout. Loss, accuracy, per-class accuracy and the
// confusion matrix; optionally a per-sample prediction callback.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "mirror/coll/communicator.h"
#include "mirror/data/dataset.h"
#include "mirror/nn/model.h"

namespace mirror::train {

struct EvalResult {
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t count = 0;
  std::int64_t num_classes = 0;
  std::vector<std::int64_t> confusion;  // [label * classes + predicted], summed over all ranks
  bool abandoned = false;  // some rank saw its stop request set and stopped early: the sums cover part of the split

  double mean_loss() const { return count ? loss_sum / static_cast<double>(count) : 0.0; }
  double accuracy() const { return count ? static_cast<double>(correct) / static_cast<double>(count) : 0.0; }
  // Correct / samples of class c (0 when the class has no sample).
  double class_accuracy(std::int64_t c) const;
};

// One evaluated sample: its index in the split, label, predicted class and softmax probabilities.
struct Prediction {
  std::int64_t index;
  std::int32_t label;
  std::int32_t predicted;
  std::span<const float> probabilities;
};
using PredictionFn = std::function<void(const Prediction&)>;

// Throws kInvalidArgument naming both shapes when the dataset's samples or classes do not fit the model.
void check_dataset_fits(const nn::Model& model, const data::Dataset& dataset);

// Evaluates `model` on `split` of `dataset` in batches of `batch` (this rank's part only), calls on_prediction
// (when set) for each of this rank's samples in index order, and reduces the sums over `control` (a host
// communicator). Every rank returns the same totals. When `stop_requested` is given, a rank that finds it set
// before a batch evaluates no further batches (a SIGTERM need not wait for a long evaluation); the reduction
// still runs on every rank, and every rank then returns `abandoned` set.
// A token dataset goes to evaluate_tokens (with on_prediction empty, else kInvalidArgument).
EvalResult evaluate(nn::Model& model, const data::Dataset& dataset, const std::string& split, std::int64_t batch,
                    coll::Communicator& control, const PredictionFn& on_prediction = {},
                    const std::atomic<bool>* stop_requested = nullptr);

// A language model on a token split: the split cut into consecutive windows of context + 1 tokens at stride
// context from its first token (context: the model's input length), each rank its contiguous part, in batches
// of `batch` windows, at most `max_batches` of them per rank (0: all); the loss over every target token, and
// `correct` the targets that are the arg-max. No confusion matrix (num_classes stays 0). Reduced as evaluate.
EvalResult evaluate_tokens(nn::Model& model, const data::Dataset& dataset, const std::string& split,
                           std::int64_t batch, coll::Communicator& control, std::int64_t max_batches = 0,
                           const std::atomic<bool>* stop_requested = nullptr);

}  // namespace mirror::train
