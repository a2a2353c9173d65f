// op_queue.cc — the progress thread, ordered execution and Work handles of OpQueue.
#include "op_queue.h"

#include "mirror/error.h"

namespace mirror::coll::detail {

using Clock = std::chrono::steady_clock;

struct OpQueue::Op {
  std::string description;
  std::function<void()> fn;
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  bool done = false;
  Clock::time_point start_time;
  std::exception_ptr error;

  void mark_started() {
    std::lock_guard lk(mu);
    started = true;
    start_time = Clock::now();
  }
  void finish(std::exception_ptr e) {
    {
      std::lock_guard lk(mu);
      done = true;
      error = std::move(e);
      fn = nullptr;  // drop captured state now
    }
    cv.notify_all();
  }
  void execute() {
    mark_started();
    std::exception_ptr e;
    try {
      fn();
    } catch (...) {
      e = std::current_exception();
    }
    finish(std::move(e));
  }
};

class OpQueue::OpWork final : public Work::Impl {
 public:
  OpWork(std::shared_ptr<Op> op, std::chrono::milliseconds timeout) : op_(std::move(op)), timeout_(timeout) {}
  void wait() override {
    std::unique_lock lk(op_->mu);
    const auto grace = std::chrono::seconds(5);
    while (!op_->done) {
      if (op_->started) {
        const auto limit = op_->start_time + timeout_ + grace;
        if (!op_->cv.wait_until(lk, limit, [&] { return op_->done; })) {
          MIRROR_THROW(kTimeout, op_->description << " did not finish within " << timeout_.count()
                                                  << " ms (+5 s grace) of starting");
        }
      } else {
        op_->cv.wait_for(lk, std::chrono::milliseconds(100));  // queued behind others, each bounded
      }
    }
    if (op_->error) std::rethrow_exception(op_->error);
  }
  bool done() override {
    std::lock_guard lk(op_->mu);
    return op_->done;
  }

 private:
  std::shared_ptr<Op> op_;
  std::chrono::milliseconds timeout_;
};

OpQueue::OpQueue(bool use_thread, std::chrono::milliseconds timeout) : timeout_(timeout) {
  if (use_thread) thread_ = std::thread([this] { loop(); });
}

OpQueue::~OpQueue() {
  std::deque<std::shared_ptr<Op>> abandoned;
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    abandoned.swap(queue_);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (auto& op : abandoned) {
    op->finish(std::make_exception_ptr(
        Error(ErrorKind::kInvalidArgument, op->description + " never ran: its communicator was destroyed first",
              __FILE__, __LINE__)));
  }
}

Work OpQueue::submit(std::string description, std::function<void()> fn) {
  auto op = std::make_shared<Op>();
  op->description = std::move(description);
  op->fn = std::move(fn);
  if (!thread_.joinable()) {
    op->execute();  // no progress thread: run now, hand back a completed Work
  } else {
    {
      std::lock_guard lk(mu_);
      queue_.push_back(op);
    }
    cv_.notify_all();
  }
  return Work(std::make_shared<OpWork>(op, timeout_));
}

void OpQueue::run(const std::function<std::string()>& describe, std::function<void()> fn) {
  if (thread_.joinable()) {
    std::unique_lock lk(mu_);
    if (!queue_.empty() || busy_) {
      lk.unlock();
      submit(describe(), std::move(fn)).wait();
      return;
    }
    busy_ = true;  // idle: run inline, the progress thread stays out until we are done
  }
  struct Release {
    OpQueue* q;
    ~Release() {
      if (!q->thread_.joinable()) return;
      bool queued;
      {
        std::lock_guard lk(q->mu_);
        q->busy_ = false;
        queued = !q->queue_.empty();
      }
      if (queued) q->cv_.notify_all();  // wake the progress thread only when it has work (no futex per call)
    }
  } release{this};
  fn();
}

void OpQueue::loop() {
  for (;;) {
    std::shared_ptr<Op> op;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || (!queue_.empty() && !busy_); });
      if (stop_) return;
      op = queue_.front();
      queue_.pop_front();
      busy_ = true;
    }
    op->execute();
    std::lock_guard lk(mu_);
    busy_ = false;
  }
}

}  // namespace mirror::coll::detail
