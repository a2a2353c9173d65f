// mirror/data/windows.h — the one rule that cuts a token split into training windows (docs/dataset-format.md,
// "Token datasets"). A split of n tokens with context T has windows of T + 1 tokens at stride T: window i
// covers tokens [i*T, i*T + T] (inputs are its first T tokens, targets its last T), so neighbouring windows
// share one token and every token but the first is a target exactly once. The tail that does not fill a
// window is never trained on.
#pragma once

#include <cstdint>

namespace mirror::data {

// floor((tokens - 1) / context): 0 when tokens < context + 1 or context < 1.
inline int64_t window_count(int64_t tokens, int64_t context) {
  if (context < 1 || tokens < context + 1) return 0;
  return (tokens - 1) / context;
}

// The first token of window `window`; the window is tokens [first, first + context].
inline int64_t window_first_token(int64_t window, int64_t context) { return window * context; }

}  // namespace mirror::data
