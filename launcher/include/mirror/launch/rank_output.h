// mirror/launch/rank_output.h — RankTagFilter: turns one of mpirun's output streams, tagged by
// `--tag-output`, into what a person reads: each rank's lines start with a short "[r3] " instead of
// "[1,3]<stdout>:", and carriage-return updates (rank 0's progress bar) stay one updating line.
//
// What Open MPI sends (measured with Open MPI 4.1): each chunk a rank writes comes with a tag in front,
// "[JOB,RANK]<stdout>:" (or <stderr>: / <stddiag>:), and after every '\n' inside the chunk; a chunk that does
// not end a line ("\repoch 1 [===>  ]") is followed directly by the next chunk's tag, in the middle of the line.
// mpirun's own messages carry no tag. So tags are recognised anywhere, a line after '\n' without a tag is
// mpirun's, and the filter keeps the output readable when sources interleave:
//   - a rank's line starts with "[rR] "; after '\r' the prefix is written again before the next visible
//     character, so a redrawn line keeps its tag and still redraws in place;
//   - when another source writes while a line is unfinished, that line is ended ('\n') first;
//   - an empty line stays empty, and so does a run of blanks between a '\r' and the next '\r' or '\n' (the way
//     a progress bar is cleared: a prefix there would make the line longer than the bar and wrap);
//   - mpirun's own text passes through unchanged.
// A tag split across two reads is held back until the rest arrives (or until finish()).
#pragma once

#include <string>
#include <string_view>

namespace mirror::launch {

// True for a line that says a rank has failed for good: Mirror's "[rank R] error: ..." (every Mirror program
// prints it before it ends the job) or Open MPI's "MPI_ABORT was invoked on rank R". The supervisor then gives
// mpirun --failure-grace seconds to end the job before it ends mpirun itself (an unreachable host can keep
// mpirun waiting for minutes).
bool reports_fatal_error(std::string_view line);

class RankTagFilter {
 public:
  // The text to write for `data`, the next bytes read from the stream.
  std::string feed(std::string_view data);
  // At the end of the stream: what was held back (an incomplete tag is plain text after all).
  std::string finish();

 private:
  static constexpr int kNone = -2;     // no unfinished line on the output
  static constexpr int kMpirun = -1;   // mpirun's own, untagged text

  void emit(char c, std::string& out);

  std::string held_;        // the start of a tag at the end of the last chunk
  std::string blanks_;      // blanks at the start of a rank's line, not written until something follows
  int source_ = kMpirun;    // who the incoming bytes belong to
  int line_owner_ = kNone;  // who wrote the unfinished line on the output
  bool at_column0_ = true;  // the next visible character of line_owner_ starts (or restarts) its line
};

}  // namespace mirror::launch
