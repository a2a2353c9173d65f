// test_crc32c.cc — CRC-32C against published check values, TFRecord's mask, and the record framing.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mirror/error.h"
#include "mirror/telemetry/crc32c.h"
#include "mirror/telemetry/tfrecord.h"

namespace mirror::telemetry {
namespace {

// The CRC catalogue's check value of CRC-32C (iSCSI), and RFC 3720 B.4's test vectors.
TEST(Crc32c, StandardCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  for (int i = 0; i < 32; ++i) ascending[i] = static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Crc32c, MaskRotatesAndOffsets) {
  // mask(0) is the delta itself; mask(1) rotates 1 right by 15 (= bit 17) before adding it.
  EXPECT_EQ(mask_crc(0), 0xa282ead8u);
  EXPECT_EQ(mask_crc(1), (1u << 17) + 0xa282ead8u);
  for (std::uint32_t c : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x80000000u}) EXPECT_EQ(unmask_crc(mask_crc(c)), c);
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("mirror_test_tfrecord_" + name + "_" +
                                                             std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<unsigned char> file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::uint32_t le32(const std::vector<unsigned char>& b, std::size_t at) {
  return b[at] | b[at + 1] << 8 | b[at + 2] << 16 | static_cast<std::uint32_t>(b[at + 3]) << 24;
}

TEST(TfRecord, FramingIsLengthCrcDataCrc) {
  const auto path = fresh_dir("framing") / "r";
  {
    TfRecordWriter w(path.string());
    w.write("123456789");
  }
  const auto b = file_bytes(path);
  ASSERT_EQ(b.size(), 8u + 4u + 9u + 4u);
  EXPECT_EQ(b[0], 9);
  for (int i = 1; i < 8; ++i) EXPECT_EQ(b[i], 0);
  const unsigned char length[8] = {9, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(le32(b, 8), mask_crc(crc32c(length, 8)));
  EXPECT_EQ(std::string(b.begin() + 12, b.begin() + 21), "123456789");
  EXPECT_EQ(le32(b, 21), mask_crc(0xE3069283u));
}

TEST(TfRecord, ReadsBackAndStopsQuietlyAtACutShortTail) {
  const auto path = fresh_dir("tail") / "r";
  {
    TfRecordWriter w(path.string());
    w.write("first");
    w.write(std::string(1000, 'x'));
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  TfRecordReader r(path.string());
  EXPECT_EQ(r.next().value(), "first");
  EXPECT_FALSE(r.next().has_value());
  EXPECT_TRUE(r.truncated());
}

TEST(TfRecord, ACorruptRecordIsAFormatErrorNamingTheOffset) {
  const auto path = fresh_dir("corrupt") / "r";
  {
    TfRecordWriter w(path.string());
    w.write("first");
    w.write("second");
  }
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 4 + 5 + 4 + 12 + 2);  // a byte of "second"
    f.put('X');
  }
  TfRecordReader r(path.string());
  EXPECT_EQ(r.next().value(), "first");
  try {
    r.next();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(e.message().find("byte 21"), std::string::npos) << e.message();
  }
}

TEST(TfRecord, NeverOverwritesAnExistingFile) {
  const auto path = fresh_dir("exists") / "r";
  std::ofstream(path) << "keep";
  EXPECT_THROW(TfRecordWriter w(path.string()), Error);
  EXPECT_EQ(std::filesystem::file_size(path), 4u);
}

}  // namespace
}  // namespace mirror::telemetry
