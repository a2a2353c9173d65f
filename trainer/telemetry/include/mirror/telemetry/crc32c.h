// mirror/telemetry/crc32c.h — CRC-32C (Castagnoli) and the masked form TFRecord files store.
// crc32c: polynomial 0x1EDC6F41, reflected, initial value and final xor 0xFFFFFFFF (RFC 3720 B.4), computed
// by Boost.CRC; crc32c("123456789") = 0xE3069283. masked_crc32c: ((crc >> 15) | (crc << 17)) + 0xa282ead8,
// TFRecord's mask (a CRC of data that itself holds CRCs is then not a CRC of those CRCs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mirror::telemetry {

std::uint32_t crc32c(const void* data, std::size_t bytes);
inline std::uint32_t crc32c(std::string_view s) { return crc32c(s.data(), s.size()); }

std::uint32_t mask_crc(std::uint32_t crc);
std::uint32_t unmask_crc(std::uint32_t masked);
inline std::uint32_t masked_crc32c(const void* data, std::size_t bytes) { return mask_crc(crc32c(data, bytes)); }

}  // namespace mirror::telemetry
