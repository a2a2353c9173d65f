// crc32c.cc — CRC-32C through Boost.CRC's table-driven crc_optimal (Debian's bookworm has no packaged
// crc32c library; Boost.CRC is parameterised by the polynomial), and TFRecord's mask.
#include "mirror/telemetry/crc32c.h"

#include <boost/crc.hpp>

namespace mirror::telemetry {

namespace {
constexpr std::uint32_t kMaskDelta = 0xa282ead8u;
// Castagnoli: width 32, polynomial 0x1EDC6F41, init 0xFFFFFFFF, final xor 0xFFFFFFFF, reflected in and out.
using Crc32c = boost::crc_optimal<32, 0x1EDC6F41u, 0xFFFFFFFFu, 0xFFFFFFFFu, true, true>;
}  // namespace

std::uint32_t crc32c(const void* data, std::size_t bytes) {
  Crc32c crc;
  crc.process_bytes(data, bytes);
  return crc.checksum();
}

std::uint32_t mask_crc(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

std::uint32_t unmask_crc(std::uint32_t masked) {
  const std::uint32_t rotated = masked - kMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace mirror::telemetry
