// output_pump.h — (private) OutputPump: copies mpirun's stdout and stderr pipes to mirrorrun's own as the
// bytes arrive, each through a RankTagFilter (short rank tags, carriage returns kept), on a thread of its own
// so the supervisor's signal loop is untouched. A closed output (EPIPE, e.g. `mirrorrun ... | head`) drops
// the rest instead of killing mirrorrun.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

namespace mirror::launch::detail {

class OutputPump {
 public:
  // Takes the read ends of the two pipes (closed by the pump); writes to out_fd and err_fd.
  OutputPump(int stdout_pipe, int stderr_pipe, int out_fd, int err_fd);
  ~OutputPump();  // finish(0)
  OutputPump(const OutputPump&) = delete;
  OutputPump& operator=(const OutputPump&) = delete;

  // Waits up to wait_s for both pipes to reach end of file (every writer gone), then stops and writes out
  // what the filters held back.
  void finish(double wait_s);

  // The first line that reported a fatal error (reports_fatal_error), and when it came (steady clock, s);
  // 0 while there is none.
  double failure_seen_at() const { return failure_at_; }
  std::string failure_line() const;

 private:
  void run();
  void watch(int stream, const std::string& text);  // looks for the first fatal-error line

  int pipes_[2];                 // owned by run() once the thread runs
  int outputs_[2];
  std::atomic<int> open_pipes_{2};  // pipes not yet at end of file
  std::atomic<bool> stop_{false};
  std::string partial_[2];            // the unfinished last line of each stream (watch), at most kLineCap
  std::atomic<double> failure_at_{0};
  mutable std::mutex failure_mutex_;
  std::string failure_line_;
  std::thread thread_;
};

}  // namespace mirror::launch::detail
