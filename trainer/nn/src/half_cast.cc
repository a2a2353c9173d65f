// half_cast.cc — mirror/nn/half_cast.h: the dispatch to the CUDA kernels (cuda/half_cast_cuda.cu).
#include "mirror/nn/half_cast.h"

#include "mirror/error.h"

namespace mirror::nn {

#if MIRROR_HAVE_CUDA
namespace detail::cuda {
void narrow_to_16bit(const float* in, std::uint16_t* out, std::size_t n, bool half, float scale);
void widen_from_16bit(const std::uint16_t* in, float* out, std::size_t n, bool half, float inv_scale);
}  // namespace detail::cuda
#endif

void narrow_to_16bit(const Device& device, const float* in, std::uint16_t* out, std::size_t n, bool half, float scale) {
  MIRROR_CHECK(device.is_cuda(), kInvalidArgument, "nn::narrow_to_16bit converts CUDA buffers only");
  if (n == 0) return;
#if MIRROR_HAVE_CUDA
  detail::cuda::narrow_to_16bit(in, out, n, half, scale);
#else
  (void)in, (void)out, (void)half, (void)scale;
  MIRROR_THROW(kInvalidArgument, "this Mirror was built without CUDA");
#endif
}

void widen_from_16bit(const Device& device, const std::uint16_t* in, float* out, std::size_t n, bool half,
                      float inv_scale) {
  MIRROR_CHECK(device.is_cuda(), kInvalidArgument, "nn::widen_from_16bit converts CUDA buffers only");
  if (n == 0) return;
#if MIRROR_HAVE_CUDA
  detail::cuda::widen_from_16bit(in, out, n, half, inv_scale);
#else
  (void)in, (void)out, (void)half, (void)inv_scale;
  MIRROR_THROW(kInvalidArgument, "this Mirror was built without CUDA");
#endif
}

}  // namespace mirror::nn
