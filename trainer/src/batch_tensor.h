// batch_tensor.h — the batch-to-tensor step: a data::Batch (rows of features, host) as the model's input
// [batch, sample shape...] on the model's device: a view of the host rows on the CPU, a copy on CUDA.
// Private to trainer/.
#pragma once

#include "mirror/data/batch.h"
#include "mirror/error.h"
#include "mirror/nn/model.h"
#include "mirror/nn/tensor.h"

namespace mirror::train {

// Reuses `staging` (CUDA) across batches; the returned tensor (a view on the CPU) is valid while `batch`
// and `staging` are.
inline nn::Tensor batch_tensor(const data::Batch& batch, const nn::Model& model, nn::Tensor& staging) {
  nn::Shape shape{batch.size};
  const nn::Shape& sample = model.input_sample_shape();
  shape.insert(shape.end(), sample.begin(), sample.end());
  MIRROR_CHECK(static_cast<std::int64_t>(batch.x.size()) == nn::shape_numel(shape), kInternal,
               "batch of " << batch.size << " samples holds " << batch.x.size() << " values, expected "
                           << nn::to_string(shape));
  if (model.device().is_cpu())
    return nn::Tensor::view(const_cast<float*>(batch.x.data()), shape, model.device());
  staging.resize(shape);
  staging.copy_from_host(batch.x);
  return nn::Tensor::view(staging.data(), shape, model.device());
}

}  // namespace mirror::train
