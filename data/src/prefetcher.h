// prefetcher.h — Prefetcher (private): runs produce(step) for steps [first, end) on a background thread
// and hands the batches over in order through a queue of at most `depth` ready batches. pop() swaps the
// caller's previous batch in for reuse, so steady state allocates nothing. An exception in
// produce() is rethrown by pop(); destruction stops and joins the thread without throwing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "mirror/data/batch.h"

namespace mirror::data {

class Prefetcher {
 public:
  using Produce = std::function<void(int64_t step, Batch& out)>;

  Prefetcher(int depth, Produce produce, int64_t first, int64_t end);
  ~Prefetcher();
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  // Blocks until the next batch is ready; false once all steps were handed over.
  bool pop(Batch& out);

 private:
  void run();

  const std::size_t depth_;
  Produce produce_;
  int64_t next_step_;
  const int64_t end_;
  int64_t popped_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Batch> ready_;
  std::vector<Batch> spare_;  // batches handed back by pop(), reused so that buffers are not reallocated
  std::exception_ptr error_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace mirror::data
