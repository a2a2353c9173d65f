// banner_filter.cc — mirror/launch/banner_filter.h: a line-start state machine over the stream.
#include "mirror/launch/banner_filter.h"

namespace mirror::launch {
namespace {

bool is_rule(std::string_view line) {
  if (line.size() < 20) return false;
  for (char c : line)
    if (c != '-') return false;
  return true;
}

// The boxes dropped: Open MPI 4's messages for a rank's non-zero exit (help-errmgr-base.txt, help-orterun.txt).
bool is_exit_banner(std::string_view box) {
  return box.find("terminated normally, but") != std::string_view::npos ||
         box.find("mpirun detected that one or more processes exited with non-zero status") != std::string_view::npos;
}

}  // namespace

void MpiBannerFilter::end_line(std::string& out) {
  const bool rule = is_rule(line_);
  if (!in_box_) {
    if (rule) {
      in_box_ = true;
      box_ = line_ + '\n';
    } else {
      out += line_ + '\n';
    }
  } else if (line_.rfind("[r", 0) == 0) {  // a rank's tagged line written while the box came in: not the box's
    out += line_ + '\n';
  } else {
    box_ += line_ + '\n';
    if (rule && box_.size() > line_.size() + 1) {  // the closing rule
      if (!is_exit_banner(box_)) out += box_;
      box_.clear();
      in_box_ = false;
    }
  }
  line_.clear();
  holding_line_ = false;
}

std::string MpiBannerFilter::feed(std::string_view data) {
  std::string out;
  for (char c : data) {
    if (at_line_start_ && c == '-' && !holding_line_) holding_line_ = true;
    if (in_box_ && at_line_start_ && c != '\n') holding_line_ = true;  // every line of a box is held
    if (c == '\n') {
      if (holding_line_ || in_box_) {
        end_line(out);
      } else {
        out += c;
      }
      at_line_start_ = true;
      continue;
    }
    at_line_start_ = false;
    if (holding_line_) {
      line_ += c;
    } else {
      out += c;
    }
  }
  return out;
}

std::string MpiBannerFilter::finish() {
  std::string out = box_ + line_;
  box_.clear();
  line_.clear();
  in_box_ = holding_line_ = false;
  at_line_start_ = true;
  return out;
}

}  // namespace mirror::launch
