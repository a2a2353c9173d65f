// mirror/nn/model_description.h — a model as data: a list of layers (each a type, a name and its settings;
// a residual block has a body and a shortcut), read from a JSON model file ({"layers": [...]}, vocabulary in
// docs/model-format.md) or taken from a built-in (keras-cnn, cnn-bn, resnet20, mlp:H1,H2,...). The list is a
// graph: a layer takes the previous layer's output unless it names its "inputs" (earlier layers, or "input":
// the model's input); the model's output is the last layer's unless "output" names another; a layer may use
// an earlier layer's parameters ("tied_to"). Checked for its structure here (every layer an object with a
// known "type", names unique within a list, inputs that name earlier layers, no layer left unused); whether
// each layer fits its input shapes is checked when the model is built (layer_registry.h), naming the layer.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace mirror::nn {

struct LayerDescription {
  std::string type;                       // "conv2d", "linear", "residual", ...
  std::string name;                       // "conv1"; default: type + its 1-based index in its list
  nlohmann::ordered_json settings;        // the layer's other keys (out_channels, kernel, p, ...)
  std::vector<LayerDescription> body;     // residual only
  std::vector<LayerDescription> shortcut; // residual only; empty: the identity
  std::vector<std::string> inputs;        // names of earlier layers or "input"; empty: the previous layer
  std::string tied_to;                    // an earlier layer whose parameters this one uses ("": its own)
};

// The name that stands for the model's input in a layer's "inputs".
inline constexpr const char* kModelInputName = "input";

struct ModelDescription {
  std::vector<LayerDescription> layers;
  std::string output;  // the layer whose output is the model's; "": the last layer

  // The index of the output layer.
  std::size_t output_index() const;

  // Parses {"layers": [...]}; `where` (a file name, or "model text") prefixes every error, which names the
  // layer by its path ("layers[3]", "block2.body[1]") and what is wrong. Throws kInvalidArgument.
  static ModelDescription parse(std::string_view json_text, std::string_view where);
  // The description as a JSON model file (names filled in); parse(to_json()) gives the same description.
  std::string to_json(int indent = 2) const;
};

// The built-in models by name, each with a line that says what it is (for --help and --print-model).
struct BuiltinModel {
  const char* name;
  const char* summary;
};
const std::vector<BuiltinModel>& builtin_models();

// The description of a built-in: "keras-cnn", "cnn-bn", "resnet20", or "mlp:H1,H2,..." (Linear/ReLU layers
// named fc1, relu1, ...). The last linear layer's out_features is "classes": the dataset's class count.
// Throws kInvalidArgument naming the name and listing the built-ins.
ModelDescription builtin_model(std::string_view name);

// A pre-LayerNorm GPT-2 of these sizes, the gpt-* built-ins' layout (Hugging Face's GPT2LMHeadModel): wte, wpe,
// per block l h{l}_ln1, h{l}_attn, h{l}_add1, h{l}_ln2, h{l}_fc, h{l}_gelu, h{l}_proj, h{l}_add2, then ln_f and a
// head tied to wte. vocab 0: "classes" (the dataset's vocabulary).
struct GptSizes {
  std::int64_t layers = 0, heads = 0, channels = 0, context = 0, vocab = 0;
};
ModelDescription gpt_model(const GptSizes& sizes);

// "mlp:512,256" for a name of the mlp built-in ("mlp:0512, 256" is refused like any malformed one), "" for any
// other name.
std::string canonical_mlp_name(std::string_view name);

// What a language model's description says about the sequences it takes, read from its top-level layers:
// whether its first layer is an `embedding` (it takes token ids), that embedding's "vocab" when it is a number
// (0: "classes", the dataset's vocabulary), and the first `position_embedding`'s "context" (0: none).
struct SequenceShape {
  bool takes_tokens = false;
  std::int64_t vocab = 0;
  std::int64_t context = 0;
};
SequenceShape sequence_shape(const ModelDescription& description);

// What a --model value names: an existing file is a JSON model file; text starting with '{' is JSON itself
// (a checkpoint's stored description); anything else a built-in. Errors name the value.
ModelDescription resolve_model_description(std::string_view model);

}  // namespace mirror::nn
