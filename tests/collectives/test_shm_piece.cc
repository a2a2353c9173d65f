// test_shm_piece.cc — the single-copy paths' piece size (shm_piece.h; one process, no MPI): the rule
// "largest power of two within L2 / ranks, clamped to [64 KiB, 1 MiB], 1 MiB when L2 is unknown" on
// worked cases, the sysfs size parser, and that this machine's L2 gives a piece within the bounds.
#include <gtest/gtest.h>

#include <cstddef>

#include "shm_piece.h"

namespace mirror::coll::detail {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * 1024;

TEST(ShmPiece, LargestPowerOfTwoWithinTheRanksShareOfL2) {
  EXPECT_EQ(single_piece_bytes(2, 512 * KiB), 256 * KiB);
  EXPECT_EQ(single_piece_bytes(3, 512 * KiB), 128 * KiB);  // 170.7 KiB share
  EXPECT_EQ(single_piece_bytes(4, 512 * KiB), 128 * KiB);
  EXPECT_EQ(single_piece_bytes(2, 1 * MiB), 512 * KiB);
  EXPECT_EQ(single_piece_bytes(3, 1280 * KiB), 256 * KiB);  // 426.7 KiB share
}

TEST(ShmPiece, ClampedAndFallback) {
  EXPECT_EQ(single_piece_bytes(2, 0), kShmMaxPieceBytes);             // unknown L2
  EXPECT_EQ(single_piece_bytes(8, 256 * KiB), kShmMinPieceBytes);      // 32 KiB share
  EXPECT_EQ(single_piece_bytes(2, 32 * MiB), kShmMaxPieceBytes);       // large L2
  EXPECT_EQ(single_piece_bytes(1, 512 * KiB), 512 * KiB);
  EXPECT_EQ(single_piece_bytes(0, 512 * KiB), 512 * KiB);              // no division by zero
}

TEST(ShmPiece, ParsesSysfsSizes) {
  EXPECT_EQ(parse_cache_size("512K"), 512 * KiB);
  EXPECT_EQ(parse_cache_size("1M"), 1 * MiB);
  EXPECT_EQ(parse_cache_size("1048576"), 1 * MiB);
  EXPECT_EQ(parse_cache_size(""), 0u);
  EXPECT_EQ(parse_cache_size("K"), 0u);
  EXPECT_EQ(parse_cache_size("12Q"), 0u);
}

TEST(ShmPiece, ThisMachinesPieceIsWithinBounds) {
  const std::size_t piece = single_piece_bytes(2, l2_cache_bytes());
  EXPECT_GE(piece, kShmMinPieceBytes);
  EXPECT_LE(piece, kShmMaxPieceBytes);
  EXPECT_EQ(piece & (piece - 1), 0u);
}

}  // namespace
}  // namespace mirror::coll::detail
