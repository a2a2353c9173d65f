// prefetcher.cc — the background thread and hand-over queue of Prefetcher.
#include "prefetcher.h"

namespace mirror::data {

Prefetcher::Prefetcher(int depth, Produce produce, int64_t first, int64_t end)
    : depth_(static_cast<std::size_t>(depth < 1 ? 1 : depth)), produce_(std::move(produce)), next_step_(first),
      end_(end) {
  thread_ = std::thread([this] { run(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Prefetcher::run() {
  try {
    for (int64_t step = next_step_; step < end_; ++step) {
      Batch b;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || ready_.size() < depth_; });
        if (stop_) break;
        if (!spare_.empty()) {
          b = std::move(spare_.back());
          spare_.pop_back();
        }
      }
      produce_(step, b);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ready_.push_back(std::move(b));
      }
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  cv_.notify_all();
}

bool Prefetcher::pop(Batch& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return !ready_.empty() || finished_; });
  if (ready_.empty()) {
    if (error_) std::rethrow_exception(error_);
    return false;
  }
  std::swap(out, ready_.front());
  if (spare_.size() < depth_) spare_.push_back(std::move(ready_.front()));
  ready_.pop_front();
  ++popped_;
  lock.unlock();
  cv_.notify_all();
  return true;
}

}  // namespace mirror::data
