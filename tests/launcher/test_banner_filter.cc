// test_banner_filter.cc — MpiBannerFilter on Open MPI 4.1's own text (copied from mpirun's output): the two
// boxes after a non-zero exit are dropped, the box naming a rank killed by a signal and every other text kept,
// whole or fed a byte at a time; an unclosed box comes out at finish().
#include <gtest/gtest.h>

#include "mirror/launch/banner_filter.h"

namespace mirror::launch {
namespace {

const std::string kRule(74, '-');
const std::string kPrimary = kRule + "\nPrimary job  terminated normally, but 1 process returned\n"
                                     "a non-zero exit code. Per user-direction, the job has been aborted.\n" + kRule + "\n";
const std::string kDetected = kRule + "\nmpirun detected that one or more processes exited with non-zero status, thus causing\n"
                                      "the job to be terminated. The first process to do so was:\n\n"
                                      "  Process name: [[19554,1],0]\n  Exit code:    3\n" + kRule + "\n";
const std::string kSignal = kRule + "\nmpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed).\n" +
                            kRule + "\n";

std::string whole(const std::string& text) {
  MpiBannerFilter f;
  std::string out = f.feed(text);
  return out + f.finish();
}

std::string bytewise(const std::string& text) {
  MpiBannerFilter f;
  std::string out;
  for (char c : text) out += f.feed(std::string_view(&c, 1));
  return out + f.finish();
}

TEST(MpiBannerFilter, DropsTheExitBannersAndKeepsTheRest) {
  const std::string error = "[r0] error: dataset d.h5: /train/x is float64, expected uint8 or float32\n";
  const std::string input = error + kPrimary + kDetected;
  EXPECT_EQ(whole(input), error);
  EXPECT_EQ(bytewise(input), error);
  const std::string killed = "[r0] epoch 1/3 loss 0.5\n" + kSignal;
  EXPECT_EQ(whole(killed), killed);
  EXPECT_EQ(bytewise(killed), killed);
}

TEST(MpiBannerFilter, OtherTextPassesUnchanged) {
  const std::string text = "\r[r0] epoch 1 [===>   ]\r[r0] epoch 1 [======>]\n-x is a flag\n--- a short rule\n\n";
  EXPECT_EQ(whole(text), text);
  EXPECT_EQ(bytewise(text), text);
}

TEST(MpiBannerFilter, RankLinesInsideABoxAndAnUnclosedBox) {
  const std::string rank_line = "[r1] still printing\n";
  const std::string input = kRule + "\nPrimary job  terminated normally, but 1 process returned\n" + rank_line +
                            "a non-zero exit code. Per user-direction, the job has been aborted.\n" + kRule + "\n";
  EXPECT_EQ(whole(input), rank_line);
  const std::string unclosed = kRule + "\nsomething mpirun says\n";
  EXPECT_EQ(whole(unclosed), unclosed);
}

}  // namespace
}  // namespace mirror::launch
