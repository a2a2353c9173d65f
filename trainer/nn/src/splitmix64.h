// splitmix64.h (private) — the splitmix64 finaliser (Steele, Lea, Flood 2014), for the host and for CUDA
// kernels: the parameters' seeds (init.cc) and Dropout's counter-based draw (dropout_hash.h).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MIRROR_NN_HOST_DEVICE __host__ __device__
#else
#define MIRROR_NN_HOST_DEVICE
#endif

namespace mirror::nn::detail {

// x advanced by the golden-ratio increment, then mixed.
MIRROR_NN_HOST_DEVICE inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace mirror::nn::detail
