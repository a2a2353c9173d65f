// test_tensorboard_writer.cc — the TensorBoard writer's files, naming and resume rules (values and the
// wire format are checked by TensorBoard itself in tensorboard_read.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "mirror/error.h"
#include "mirror/telemetry/tensorboard_writer.h"
#include "mirror/telemetry/tfrecord.h"

namespace mirror::telemetry {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("mirror_test_tb_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

int count_records(const std::string& path) {
  TfRecordReader r(path);
  int n = 0;
  while (r.next()) ++n;
  return n;
}

TEST(TensorBoardWriter, MakesTheDirectoryAndAFileNamedAsTensorBoardExpects) {
  const auto dir = fresh_dir("name") / "nested";
  TensorBoardWriter w({dir.string(), -1});
  const std::string name = std::filesystem::path(w.path()).filename().string();
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  EXPECT_TRUE(std::regex_match(name, std::regex(R"(events\.out\.tfevents\.\d{10}\.)" + std::string(host) + "\\." +
                                                std::to_string(::getpid()))))
      << name;
  EXPECT_EQ(std::filesystem::path(w.path()).parent_path(), dir);
  EXPECT_EQ(count_records(w.path()), 1);  // the file_version record, flushed at once
}

TEST(TensorBoardWriter, FlushMakesTheScalarsReadable) {
  const auto dir = fresh_dir("flush");
  TensorBoardWriter w({dir.string(), -1});
  for (int s = 0; s < 5; ++s) EXPECT_TRUE(w.add_scalar("train/loss", s, 1.0f / static_cast<float>(s + 1)));
  w.flush();
  EXPECT_EQ(count_records(w.path()), 6);
  EXPECT_EQ(w.written(), 5);
  const EventDirectoryState st = scan_event_directory(dir.string());
  EXPECT_EQ(st.files, 1);
  EXPECT_EQ(st.last_step.at("train/loss"), 4);
}

TEST(TensorBoardWriter, ASecondWriterAddsALaterFileAndRepeatsNoStepPerTag) {
  const auto dir = fresh_dir("resume");
  std::string first;
  {
    TensorBoardWriter w({dir.string(), -1});
    for (int s = 0; s <= 29; ++s) w.add_scalar("train/loss", s, 0.5f);
    w.add_scalar("epoch/test_acc", 19, 0.9f);
    first = w.path();
  }
  TensorBoardWriter w({dir.string(), 19});  // resumed from step 19
  EXPECT_GT(std::filesystem::path(w.path()).filename(), std::filesystem::path(first).filename());
  EXPECT_FALSE(w.add_scalar("train/loss", 19, 1.0f));  // not after the resume step
  EXPECT_FALSE(w.add_scalar("train/loss", 29, 1.0f));  // already in the first file
  EXPECT_TRUE(w.add_scalar("train/loss", 30, 1.0f));
  EXPECT_TRUE(w.add_scalar("epoch/test_acc", 29, 0.95f));  // its tag's last step was 19
  EXPECT_TRUE(w.add_scalar("train/lr", 20, 0.1f));         // a new tag, after the resume step
  w.flush();
  EXPECT_EQ(count_records(w.path()), 4);
  const EventDirectoryState st = scan_event_directory(dir.string());
  EXPECT_EQ(st.files, 2);
  EXPECT_EQ(st.last_step.at("train/loss"), 30);
  EXPECT_EQ(st.last_step.at("epoch/test_acc"), 29);
}

TEST(TensorBoardWriter, ACorruptEventFileInTheDirectoryIsRefusedByName) {
  const auto dir = fresh_dir("corrupt");
  std::filesystem::create_directories(dir);
  const auto bad = dir / "events.out.tfevents.0000000001.host.1";
  std::ofstream(bad) << "this is not a TFRecord file at all";
  try {
    TensorBoardWriter w({dir.string(), -1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kFormat);
    EXPECT_NE(e.message().find(bad.string()), std::string::npos) << e.message();
  }
}

TEST(TensorBoardWriter, ADirectoryThatIsAFileIsAnIoError) {
  const auto path = fresh_dir("file");
  std::ofstream(path) << "x";
  try {
    TensorBoardWriter w({path.string(), -1});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(e.message().find(path.string()), std::string::npos) << e.message();
  }
  std::filesystem::remove(path);
}

TEST(TensorBoardWriter, AnEmptyTagIsRefused) {
  TensorBoardWriter w({fresh_dir("tag").string(), -1});
  EXPECT_THROW(w.add_scalar("", 1, 1.0f), Error);
}

}  // namespace
}  // namespace mirror::telemetry
