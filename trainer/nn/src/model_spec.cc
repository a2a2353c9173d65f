// model_spec.cc — mirror/nn/model_spec.h: parsing and printing "mlp:H1,H2,...".
#include "mirror/nn/model_spec.h"

#include <charconv>

#include "mirror/error.h"

namespace mirror::nn {

ModelSpec ModelSpec::parse(std::string_view text) {
  constexpr std::string_view kExpected = "expected mlp:H1,H2,... with hidden sizes in [1, 16777216], e.g. mlp:512,256";
  const auto colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  MIRROR_CHECK(kind == "mlp", kInvalidArgument,
               "model '" << text << "': unknown model kind '" << kind << "' (" << kExpected << ")");
  MIRROR_CHECK(colon != std::string_view::npos && colon + 1 < text.size(), kInvalidArgument,
               "model '" << text << "': no hidden sizes (" << kExpected << ")");
  ModelSpec spec;
  spec.kind = "mlp";
  std::string_view rest = text.substr(colon + 1);
  while (true) {
    const auto comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    MIRROR_CHECK(!item.empty() && ec == std::errc() && end == item.data() + item.size(), kInvalidArgument,
                 "model '" << text << "': hidden size '" << item << "' is not a whole number (" << kExpected << ")");
    MIRROR_CHECK(value >= 1 && value <= (1 << 24), kInvalidArgument,
                 "model '" << text << "': hidden size " << value << " out of range (" << kExpected << ")");
    spec.hidden.push_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return spec;
}

std::string ModelSpec::to_string() const {
  std::string out = kind + ":";
  for (std::size_t i = 0; i < hidden.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(hidden[i]);
  }
  return out;
}

}  // namespace mirror::nn
