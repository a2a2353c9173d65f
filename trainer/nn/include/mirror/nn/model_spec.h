// mirror/nn/model_spec.h — the `--model` string: "mlp:H1,H2,..." = Linear(in,H1) ReLU Linear(H1,H2) ReLU
// ... Linear(Hk, classes). Parsing refuses anything else with a message that quotes the string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mirror::nn {

struct ModelSpec {
  std::string kind = "mlp";
  std::vector<std::int64_t> hidden;  // hidden layer widths, each in [1, 1<<24]

  // Throws kInvalidArgument naming `text` and the expected form ("mlp:" "mlp:0" "mlp:a" "cnn:3" ...).
  static ModelSpec parse(std::string_view text);
  // Canonical text ("mlp:512,256"); parse(to_string()) gives the same spec.
  std::string to_string() const;
  friend bool operator==(const ModelSpec&, const ModelSpec&) = default;
};

}  // namespace mirror::nn
