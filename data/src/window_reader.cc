// window_reader.cc — WindowReader: a batch's windows read as coalesced runs of tokens, split into inputs
// and next-token targets.
#include "window_reader.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "mirror/data/windows.h"
#include "mirror/error.h"

namespace mirror::data {

namespace {

// The dataset, after checking that it has windows of `context` (before the reader opens its file).
const Dataset& checked(const Dataset& dataset, int64_t context) {
  MIRROR_CHECK(dataset.info().text, kInvalidArgument,
               "dataset " << dataset.describe() << " is not a token dataset; windows of a context need kind 'tokens'");
  MIRROR_CHECK(context >= 1, kInvalidArgument,
               "context must be >= 1 token for token dataset " << dataset.describe() << ", got " << context);
  return dataset;
}

}  // namespace

WindowReader::WindowReader(const Dataset& dataset, const std::string& split, int64_t context,
                           std::size_t chunk_cache_bytes)
    : reader_(checked(dataset, context), split, chunk_cache_bytes), context_(context),
      windows_(window_count(reader_.size(), context)) {}

void WindowReader::read(const std::vector<int64_t>& windows, Batch& out) {
  const std::size_t b = windows.size();
  const auto t = static_cast<std::size_t>(context_);
  for (int64_t w : windows) {
    MIRROR_CHECK(w >= 0 && w < windows_, kInvalidArgument,
                 "window " << w << " is outside the " << windows_ << " windows of context " << context_);
  }
  out.size = static_cast<int64_t>(b);
  out.indices = windows;
  out.x.clear();
  out.tokens.resize(b * t);
  out.y.resize(b * t);
  order_.resize(b);
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t c) { return windows[a] < windows[c]; });
  const int64_t max_gap_windows = kMaxGapTokens / context_;
  for (std::size_t i = 0; i < b;) {
    std::size_t j = i + 1;
    while (j < b && windows[order_[j]] - windows[order_[j - 1]] - 1 <= max_gap_windows) ++j;
    const int64_t first_window = windows[order_[i]];
    const int64_t first = window_first_token(first_window, context_);
    const int64_t count = window_first_token(windows[order_[j - 1]], context_) + context_ + 1 - first;
    run_.resize(static_cast<std::size_t>(count));
    reader_.read(first, count, run_.data());
    for (std::size_t k = i; k < j; ++k) {
      const std::size_t row = order_[k];
      const int32_t* src = run_.data() + static_cast<std::size_t>(windows[row] - first_window) * t;
      std::memcpy(out.tokens.data() + row * t, src, t * sizeof(int32_t));
      std::memcpy(out.y.data() + row * t, src + 1, t * sizeof(int32_t));
    }
    i = j;
  }
}

}  // namespace mirror::data
