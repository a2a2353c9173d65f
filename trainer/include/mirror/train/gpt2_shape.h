// mirror/train/gpt2_shape.h — what makes a Mirror model GPT-2-shaped (the layout of Hugging Face's
// GPT2LMHeadModel, which the gpt-* built-ins follow): the description of such a model for given sizes, and the
// check that a model description is one, naming the first layer that does not fit. Used by the hf-gpt2 export
// and import (model_interchange.h).
#pragma once

#include <cstdint>
#include <string>

#include "mirror/nn/model_description.h"

namespace mirror::train {

struct Gpt2Shape {
  std::int64_t layers = 0, heads = 0, channels = 0, context = 0, vocab = 0;
};

// The gpt-* built-ins' description for these sizes, the vocabulary a number: wte, wpe, per block h{l}_ln1,
// h{l}_attn, h{l}_add1, h{l}_ln2, h{l}_fc, h{l}_gelu, h{l}_proj, h{l}_add2, then ln_f and head tied to wte.
nn::ModelDescription gpt2_description(const Gpt2Shape& shape);

// The sizes of `model_description` (a checkpoint's stored description; "classes" is num_classes) when it is
// GPT-2-shaped: the same layers, types, wiring, ties and settings (initialisation aside) as gpt2_description of
// its sizes. Else kInvalidArgument naming the first difference, e.g. "layer 1 ('fc1') is linear where GPT-2
// has embedding 'wte'".
Gpt2Shape check_gpt2_shaped(const std::string& model_description, std::int64_t num_classes);

}  // namespace mirror::train
