// mirror/launch/banner_filter.h — MpiBannerFilter: drops the two boxed messages Open MPI's mpirun prints after a
// rank ends with a non-zero exit code ("Primary job  terminated normally, but 1 process returned a non-zero exit
// code..." and "mpirun detected that one or more processes exited with non-zero status..."), so that a rank's
// one-line error is the last thing a person reads; mirrorrun says itself how the job ended. Every other box
// passes unchanged, the one naming a rank that died of a signal ("mpirun noticed that process rank 1 ... exited
// on signal 9") included, and so does all other text.
//
// A box is mpirun's own text between two lines of dashes, each at the start of a line. Lines of a box are held
// until its closing rule (or finish()), then written or dropped whole; text that is not in a box goes through
// as it arrives, partial lines and carriage returns included; a rank's tagged line ("[r1] ...") that arrives
// while a box is held is written at once.
#pragma once

#include <string>
#include <string_view>

namespace mirror::launch {

class MpiBannerFilter {
 public:
  // The text to write for `data`, the next bytes of the stream.
  std::string feed(std::string_view data);
  // At the end of the stream: what was held back (an unclosed box is written as it is).
  std::string finish();

 private:
  void end_line(std::string& out);  // the held line `line_` is complete

  std::string line_;         // a line that starts with '-' (a rule, maybe), held until it ends
  std::string box_;          // the box so far, from its opening rule
  bool in_box_ = false;
  bool holding_line_ = false;  // line_ is being held (it started with '-' at the start of a line)
  bool at_line_start_ = true;
};

}  // namespace mirror::launch
