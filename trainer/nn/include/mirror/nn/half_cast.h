// mirror/nn/half_cast.h — scaled float32 <-> 16-bit (float16 or bfloat16) conversion of CUDA buffers, for the
// trainer's 16-bit gradients (--grad-dtype). Round to nearest even (cuda_fp16.h / cuda_bf16.h's _rn
// conversions, the same rounding as the host's mirror/coll/half.h), on the default stream. CUDA memory only:
// the CPU conversions are the collectives' (mirror/coll/half.h), which nn does not include.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mirror/nn/device.h"

namespace mirror::nn {

// out[i] = 16-bit(scale * in[i]) (half: float16, else bfloat16), i < n. Throws kInvalidArgument for a CPU
// device or in a build without CUDA.
void narrow_to_16bit(const Device& device, const float* in, std::uint16_t* out, std::size_t n, bool half, float scale);
// out[i] = float32(in[i]) * inv_scale.
void widen_from_16bit(const Device& device, const std::uint16_t* in, float* out, std::size_t n, bool half,
                      float inv_scale);

}  // namespace mirror::nn
