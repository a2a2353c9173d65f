// shm_piece.h — the piece size of the single-copy paths (shm_single.cc), chosen from this CPU's cache at
// run time: each rank reads the other ranks' pieces of its chunk into scratch and reduces them there, so
// the scratch (n - 1 pieces) plus the piece of the own send should stay in the per-core L2.
#pragma once

#include <cstddef>
#include <string>

namespace mirror::coll::detail {

// Bounds and fallback of the piece. Below 64 KiB the fixed cost of every process_vm_readv/writev call
// (a few µs) shows against the bytes; above 1 MiB the piece no longer stays in cache and gains nothing.
// Without a known L2 size: 1 MiB.
constexpr std::size_t kShmMinPieceBytes = 64 * 1024;
constexpr std::size_t kShmMaxPieceBytes = std::size_t{1} << 20;

// The per-core L2 size in bytes: sysfs (/sys/devices/system/cpu/cpu0/cache/index*/ with level 2 and type
// Data or Unified), else sysconf(_SC_LEVEL2_CACHE_SIZE); 0 when neither says.
std::size_t l2_cache_bytes();
// Parses a sysfs cache size ("512K", "1M", "1048576"): bytes, or 0 when it is not one.
std::size_t parse_cache_size(const std::string& text);
// The piece for `ranks` ranks and an L2 of `l2` bytes (0: unknown): the largest power of two within
// l2 / ranks, clamped to [kShmMinPieceBytes, kShmMaxPieceBytes]; kShmMaxPieceBytes when l2 is 0.
std::size_t single_piece_bytes(int ranks, std::size_t l2);

}  // namespace mirror::coll::detail
