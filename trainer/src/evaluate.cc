// evaluate.cc — data-parallel evaluation: this rank's part of a split, logits to the host, loss (log-sum-exp in
// double), arg-max, confusion matrix; sums reduced over the control communicator.
#include "mirror/train/evaluate.h"

#include <algorithm>
#include <cmath>

#include "mirror/coll/communicator.h"
#include "mirror/data/eval_loader.h"
#include "mirror/data/loader.h"
#include "mirror/error.h"
#include "mirror/nn/loss.h"
#include "mirror/nn/tensor.h"
#include "batch_tensor.h"

namespace mirror::train {

void check_dataset_fits(const nn::Model& model, const data::Dataset& dataset) {
  const data::DatasetInfo& info = dataset.info();
  const nn::Shape& wanted = model.input_sample_shape();
  if (info.text) {
    MIRROR_CHECK(wanted.size() == 1 && info.vocab_size <= model.num_classes(), kInvalidArgument,
                 "dataset " << dataset.describe() << " holds tokens of a vocabulary of " << info.vocab_size
                            << ", but the model takes samples of shape " << nn::to_string(wanted) << " and has "
                            << model.num_classes() << " classes (a language model takes [context] token ids and "
                            << "has at least the dataset's vocabulary)");
    return;
  }
  // A flat input (an MLP, or a model from a version-1 checkpoint) takes any sample of as many values.
  const bool fits = wanted.size() == 1 ? info.features == model.input_features()
                                       : nn::model_sample_shape(info.sample_shape) == wanted;
  MIRROR_CHECK(fits && info.num_classes == model.num_classes(), kInvalidArgument,
               "dataset " << dataset.describe() << " has samples of shape " << nn::to_string(info.sample_shape)
                          << " and " << info.num_classes << " classes, but the model expects samples of shape "
                          << nn::to_string(wanted) << " and " << model.num_classes() << " classes");
}

namespace {

// One reduction for the sums: [loss_sum] as float64, [correct, count, abandoned, confusion...] as int64.
void reduce_sums(EvalResult& result, coll::Communicator& control) {
  control.allreduce(&result.loss_sum, &result.loss_sum, 1, coll::DataType::kFloat64, coll::ReduceOp::kSum);
  std::vector<std::int64_t> counts{result.correct, result.count, result.abandoned ? 1 : 0};
  counts.insert(counts.end(), result.confusion.begin(), result.confusion.end());
  control.allreduce(counts.data(), counts.data(), counts.size(), coll::DataType::kInt64, coll::ReduceOp::kSum);
  result.correct = counts[0];
  result.count = counts[1];
  result.abandoned = counts[2] != 0;
  std::copy(counts.begin() + 3, counts.end(), result.confusion.begin());
}

}  // namespace

double EvalResult::class_accuracy(std::int64_t c) const {
  std::int64_t total = 0;
  for (std::int64_t p = 0; p < num_classes; ++p) total += confusion[static_cast<std::size_t>(c * num_classes + p)];
  return total ? static_cast<double>(confusion[static_cast<std::size_t>(c * num_classes + c)]) / total : 0.0;
}

EvalResult evaluate(nn::Model& model, const data::Dataset& dataset, const std::string& split, std::int64_t batch,
                    coll::Communicator& control, const PredictionFn& on_prediction,
                    const std::atomic<bool>* stop_requested) {
  MIRROR_CHECK(batch > 0, kInvalidArgument, "evaluation batch size must be > 0, got " << batch);
  if (dataset.info().text) {
    MIRROR_CHECK(!on_prediction, kInvalidArgument,
                 "per-sample predictions are for classifiers; " << dataset.describe() << " holds tokens");
    return evaluate_tokens(model, dataset, split, batch, control, 0, stop_requested);
  }
  const std::int64_t classes = model.num_classes();
  check_dataset_fits(model, dataset);
  EvalResult result;
  result.num_classes = classes;
  result.confusion.assign(static_cast<std::size_t>(classes * classes), 0);

  model.set_training(false);
  data::EvalLoader loader(dataset, split, control.size(), control.rank(), batch);
  data::Batch b;
  nn::Tensor staging;
  std::vector<float> logits, probs(static_cast<std::size_t>(classes));
  std::int64_t next_index = loader.first_index();  // the rank's part is contiguous, batches in order
  while (loader.next(b)) {
    if (stop_requested && stop_requested->load()) {
      result.abandoned = true;
      break;
    }
    const std::int64_t base = next_index;
    next_index += b.size;
    nn::ForwardContext context;
    context.sample_ids = b.indices;
    const nn::Tensor& out = model.forward(batch_tensor(b, model, staging), context);
    logits.resize(static_cast<std::size_t>(b.size * classes));
    out.copy_to_host(logits);
    for (std::int64_t i = 0; i < b.size; ++i) {
      const float* z = logits.data() + i * classes;
      const std::int32_t label = b.y[static_cast<std::size_t>(i)];
      MIRROR_CHECK(label >= 0 && label < classes, kFormat,
                   "label " << label << " of sample " << (base + i) << " is outside [0, " << classes << ")");
      const float zmax = *std::max_element(z, z + classes);
      const std::int32_t predicted = static_cast<std::int32_t>(std::max_element(z, z + classes) - z);
      double sum = 0.0;
      for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - zmax));
      result.loss_sum += std::log(sum) - static_cast<double>(z[label] - zmax);
      result.correct += predicted == label;
      result.count += 1;
      result.confusion[static_cast<std::size_t>(label * classes + predicted)] += 1;
      if (on_prediction) {
        for (std::int64_t c = 0; c < classes; ++c)
          probs[static_cast<std::size_t>(c)] = static_cast<float>(std::exp(static_cast<double>(z[c] - zmax)) / sum);
        on_prediction(Prediction{base + i, label, predicted, probs});
      }
    }
  }
  model.set_training(true);

  reduce_sums(result, control);
  return result;
}

EvalResult evaluate_tokens(nn::Model& model, const data::Dataset& dataset, const std::string& split,
                           std::int64_t batch, coll::Communicator& control, std::int64_t max_batches,
                           const std::atomic<bool>* stop_requested) {
  MIRROR_CHECK(batch > 0, kInvalidArgument, "evaluation batch size must be > 0, got " << batch);
  check_dataset_fits(model, dataset);
  EvalResult result;
  model.set_training(false);
  data::EvalLoader loader(dataset, split, control.size(), control.rank(), batch, model.input_sample_shape().at(0));
  data::Batch b;
  nn::Tensor staging;
  nn::SoftmaxCrossEntropy loss(model.device());
  for (std::int64_t done = 0; (max_batches == 0 || done < max_batches) && loader.next(b); ++done) {
    if (stop_requested && stop_requested->load()) {
      result.abandoned = true;
      break;
    }
    nn::ForwardContext context;
    context.sample_ids = b.indices;
    const nn::LossStats stats = loss.forward(model.forward(batch_tensor(b, model, staging), context), b.y);
    result.loss_sum += stats.loss_sum;
    result.correct += stats.correct;
    result.count += stats.count;
  }
  model.set_training(true);
  reduce_sums(result, control);
  return result;
}

}  // namespace mirror::train
