// progress.h — rank 0's in-epoch progress bar: drawn on a terminal, silent on a pipe or file. Private.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>

namespace mirror::train {

class ProgressBar {
 public:
  // enabled: "auto" resolves to isatty(stdout) before this is built.
  ProgressBar(std::ostream* out, bool enabled) : out_(out), enabled_(enabled && out != nullptr) {}
  void update(std::int64_t epoch, std::int64_t epochs, std::int64_t done, std::int64_t total, double loss);
  void clear();  // erases the bar before a normal line is printed

 private:
  std::ostream* out_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace mirror::train
