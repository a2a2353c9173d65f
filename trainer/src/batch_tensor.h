// batch_tensor.h — the batch-to-tensor step: a data::Batch as the model's input [batch, sample shape...] on the
// model's device: a view of the host rows on the CPU, a copy on CUDA. An image batch gives float32 rows
// (Batch::x); a token batch gives int32 ids [batch, context] (Batch::tokens). Private to trainer/.
#pragma once

#include <span>

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
  const bool tokens = !batch.tokens.empty();
  const std::size_t values = tokens ? batch.tokens.size() : batch.x.size();
  MIRROR_CHECK(static_cast<std::int64_t>(values) == nn::shape_numel(shape), kInternal,
               "batch of " << batch.size << " samples holds " << values << (tokens ? " token ids" : " values")
                           << ", expected " << nn::to_string(shape));
  const nn::DType dtype = tokens ? nn::DType::kInt32 : nn::DType::kFloat32;
  void* host = tokens ? static_cast<void*>(const_cast<std::int32_t*>(batch.tokens.data()))
                      : static_cast<void*>(const_cast<float*>(batch.x.data()));
  if (model.device().is_cpu()) return nn::Tensor::view(host, shape, model.device(), dtype);
  if (staging.dtype() != dtype || staging.numel() == 0) staging = nn::Tensor(shape, model.device(), dtype);
  staging.resize(shape);
  if (tokens)
    staging.copy_from_host(std::span<const std::int32_t>(batch.tokens));
  else
    staging.copy_from_host(batch.x);
  return nn::Tensor::view(staging.raw_data(), shape, model.device(), dtype);
}

}  // namespace mirror::train
