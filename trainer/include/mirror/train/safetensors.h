// mirror/train/safetensors.h — the safetensors file format (Hugging Face): an 8-byte little-endian header
// length N, N bytes of JSON header ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// "__metadata__": {string: string}}), then the raw little-endian tensor data, offsets relative to its start.
// Writes float32 tensors; reads F32, F16 and BF16 (converted to float32). Reading checks the whole layout and
// refuses, naming the file and the tensor: a file shorter than 8 bytes, a header length past the end, a header
// that is not a JSON object, duplicate names, a dtype it does not know, a size that is not shape × dtype size,
// offsets out of order, overlapping, outside the data or leaving gaps (the data must be covered exactly).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mirror/train/checkpoint.h"

namespace mirror::train {

struct SafetensorsContent {
  std::vector<NamedTensor> tensors;  // in the order of their data in the file
  std::map<std::string, std::string> metadata;  // "__metadata__" (empty without one)
};

// Writes `tensors` as F32 in this order, with `metadata` as "__metadata__" when it is not empty, to `path`
// atomically: a temporary beside it (".<name>.tmp.<pid>"), flushed, then renamed; nothing is left on error.
// kInvalidArgument for an empty, duplicate or reserved name or values that do not fill the shape; kIo.
void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Reads and checks `path` (see above); kFormat naming the file and the tensor, kIo when it cannot be read.
SafetensorsContent read_safetensors(const std::string& path);

}  // namespace mirror::train
