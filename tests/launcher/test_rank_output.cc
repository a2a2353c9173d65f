// test_rank_output.cc — RankTagFilter on the byte streams Open MPI's --tag-output produces (the chunk shapes
// were recorded from Open MPI 4.1: a tag before every chunk and after every '\n' inside it), expected text
// written out by hand from the rules in rank_output.h.
#include <gtest/gtest.h>

#include <string>

#include "mirror/launch/rank_output.h"

namespace mirror::launch {
namespace {

std::string filter_whole(const std::string& in) {
  RankTagFilter f;
  return f.feed(in) + f.finish();
}

std::string filter_bytewise(const std::string& in) {
  RankTagFilter f;
  std::string out;
  for (char c : in) out += f.feed(std::string(1, c));
  return out + f.finish();
}

TEST(RankTagFilter, LinesGetShortTags) {
  EXPECT_EQ(filter_whole("[1,0]<stdout>:hello\n[1,1]<stdout>:world\n"), "[r0] hello\n[r1] world\n");
  EXPECT_EQ(filter_whole("[1,12]<stderr>:x\n[7,3]<stddiag>:y\n"), "[r12] x\n[r3] y\n");
  EXPECT_EQ(filter_whole("[1,0]<stdout>:two\n[1,0]<stdout>:lines\n"), "[r0] two\n[r0] lines\n");
}

TEST(RankTagFilter, ChunksInsideALineJoin) {
  // "abc", 0.3 s later "def\n": Open MPI tags both chunks.
  EXPECT_EQ(filter_whole("[1,0]<stdout>:abc[1,0]<stdout>:def\n"), "[r0] abcdef\n");
}

TEST(RankTagFilter, CarriageReturnUpdatesStayOneLine) {
  const std::string in =
      "[1,0]<stdout>:\repoch 1 [=>  ] 1/4[1,0]<stdout>:\repoch 1 [==> ] 2/4[1,0]<stdout>:\repoch 1 [===>] 3/4"
      "[1,0]<stdout>:\n";
  EXPECT_EQ(filter_whole(in), "\r[r0] epoch 1 [=>  ] 1/4\r[r0] epoch 1 [==> ] 2/4\r[r0] epoch 1 [===>] 3/4\n");
}

TEST(RankTagFilter, BlanksThatClearABarGetNoPrefix) {
  // The trainer clears its bar with "\r" + spaces + "\r" before a log line.
  EXPECT_EQ(filter_whole("[1,0]<stdout>:\rbar 9/9[1,0]<stdout>:\r     \r[1,0]<stdout>:epoch 1 done\n"),
            "\r[r0] bar 9/9\r     \r[r0] epoch 1 done\n");
  EXPECT_EQ(filter_whole("[1,0]<stdout>:  indented\n[1,0]<stdout>:   \n"), "[r0]   indented\n   \n");
  RankTagFilter f;  // blanks held back across reads, written when the line goes on
  EXPECT_EQ(f.feed("[1,2]<stdout>:  "), "");
  EXPECT_EQ(f.feed("[1,2]<stdout>:x"), "[r2]   x");
  EXPECT_EQ(f.feed("[1,2]<stdout>:\n[1,2]<stdout>: "), "\n");
  EXPECT_EQ(f.finish(), " ");
}

TEST(RankTagFilter, AnotherSourceEndsAnUnfinishedLineFirst) {
  RankTagFilter f;
  EXPECT_EQ(f.feed("[1,0]<stdout>:\rbar 1"), "\r[r0] bar 1");
  EXPECT_EQ(f.feed("[1,1]<stdout>:oops\n"), "\n[r1] oops\n");
  EXPECT_EQ(f.feed("[1,0]<stdout>:\rbar 2"), "\r[r0] bar 2");
  EXPECT_EQ(f.feed("[1,1]<stdout>:half"), "\n[r1] half");
  EXPECT_EQ(f.feed("[1,0]<stdout>: more\n"), "\n[r0]  more\n");
  EXPECT_EQ(f.finish(), "");
}

TEST(RankTagFilter, MpirunTextPassesThrough) {
  EXPECT_EQ(filter_whole("[1,1]<stderr>:error\nmpirun noticed that process rank 1 exited\n"),
            "[r1] error\nmpirun noticed that process rank 1 exited\n");
  EXPECT_EQ(filter_whole("no tags at all\n"), "no tags at all\n");
}

TEST(RankTagFilter, BracketsThatAreNoTagStayText) {
  EXPECT_EQ(filter_whole("[1,0]<stdout>:[x] [12,3] a[1,b] [1,2]<stdin>: [1,2]<\n"),
            "[r0] [x] [12,3] a[1,b] [1,2]<stdin>: [1,2]<\n");
}

TEST(RankTagFilter, EmptyLinesStayEmpty) {
  EXPECT_EQ(filter_whole("[1,0]<stdout>:a\n[1,0]<stdout>:\n[1,0]<stdout>:b\n"), "[r0] a\n\n[r0] b\n");
}

TEST(RankTagFilter, TagSplitAcrossReadsIsHeldBack) {
  RankTagFilter f;
  EXPECT_EQ(f.feed("[1,0]<std"), "");
  EXPECT_EQ(f.feed("out>:hi\n"), "[r0] hi\n");
  EXPECT_EQ(f.feed("[1,"), "");
  EXPECT_EQ(f.finish(), "[1,");  // the stream ended inside something that only looked like a tag
}

TEST(RankTagFilter, ByteByByteEqualsWhole) {
  const std::string in =
      "[1,0]<stdout>:epoch 1/2\n[1,0]<stdout>:\rbar[1,1]<stderr>:[rank 1] error: x\nmpirun: done\n"
      "[1,0]<stdout>:abc[1,0]<stdout>:def\n[12,34]<stddiag>:[1,0 not a tag\n";
  EXPECT_EQ(filter_bytewise(in), filter_whole(in));
  EXPECT_EQ(filter_whole(in),
            "[r0] epoch 1/2\n\r[r0] bar\n[r1] [rank 1] error: x\nmpirun: done\n[r0] abcdef\n[r34] [1,0 not a tag\n");
}

TEST(ReportsFatalError, MirrorsErrorLineAndOpenMpisAbort) {
  EXPECT_TRUE(reports_fatal_error("[r1] [rank 1] error: allreduce #7 timed out after 5000 ms"));
  EXPECT_TRUE(reports_fatal_error("[rank 12] error: x"));
  EXPECT_TRUE(reports_fatal_error("MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD"));
  EXPECT_FALSE(reports_fatal_error("[r0] epoch 1/2  loss 0.1  (no error: none)"));
  EXPECT_FALSE(reports_fatal_error("[rank ] error: no number"));
  EXPECT_FALSE(reports_fatal_error("[rank 1] warning: slow"));
  EXPECT_FALSE(reports_fatal_error("[r0] error rate 0.5 [rank 3]"));
}

}  // namespace
}  // namespace mirror::launch
