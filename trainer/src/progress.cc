// progress.cc — ProgressBar: at most ~10 redraws a second, carriage-return based, cleared before log lines.
#include "progress.h"

#include <cstdio>
#include <ostream>
#include <string>

namespace mirror::train {

void ProgressBar::update(std::int64_t epoch, std::int64_t epochs, std::int64_t done, std::int64_t total, double loss) {
  if (!enabled_ || total <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  std::string bar(static_cast<std::size_t>(filled), '=');
  if (filled < kWidth) bar += '>';
  bar.resize(kWidth, ' ');
  char text[160];
  std::snprintf(text, sizeof(text), "\repoch %lld/%lld [%s] %lld/%lld loss %.4f", static_cast<long long>(epoch),
                static_cast<long long>(epochs), bar.c_str(), static_cast<long long>(done),
                static_cast<long long>(total), loss);
  *out_ << text << std::flush;
  drawn_ = true;
}

void ProgressBar::clear() {
  if (!drawn_) return;
  *out_ << "\r" << std::string(100, ' ') << "\r" << std::flush;
  drawn_ = false;
}

}  // namespace mirror::train
