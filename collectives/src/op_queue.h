// op_queue.h — OpQueue: runs a communicator's collectives one at a time, in the order they were issued,
// on one progress thread; async calls return a Work whose wait() blocks until theirs has run.
//
// A blocking call runs inline on the caller's thread when nothing is queued or running (no thread hop on
// the latency path), otherwise it queues behind the outstanding async calls and waits. Without a progress
// thread (MPI gave less than MPI_THREAD_MULTIPLE) every call, async ones included, runs inline at once and
// its Work is returned already complete: same results and order, no overlap.
//
// Each op bounds itself (the transport's deadline); Work::wait() adds a backstop: once an op has started,
// waiting longer than its timeout plus a grace period throws kTimeout naming the op.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "mirror/coll/communicator.h"

namespace mirror::coll::detail {

class OpQueue {
 public:
  OpQueue(bool use_thread, std::chrono::milliseconds timeout);
  ~OpQueue();  // ops not yet started fail with kInvalidArgument "communicator destroyed"; the running one finishes
  OpQueue(const OpQueue&) = delete;
  OpQueue& operator=(const OpQueue&) = delete;

  Work submit(std::string description, std::function<void()> fn);
  // describe() is called only if the call has to queue.
  void run(const std::function<std::string()>& describe, std::function<void()> fn);
  bool threaded() const { return thread_.joinable(); }

 private:
  struct Op;
  class OpWork;
  void loop();

  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Op>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace mirror::coll::detail
