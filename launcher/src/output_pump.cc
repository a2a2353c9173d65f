// output_pump.cc — the poll loop behind OutputPump: read what is there, filter, write it all out at once.
#include "output_pump.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

#include "mirror/launch/banner_filter.h"
#include "mirror/launch/rank_output.h"

namespace mirror::launch::detail {
namespace {

constexpr int kPollMs = 50;  // how often the loop looks at the stop flag when nothing arrives
constexpr std::size_t kLineCap = 4096;  // characters of a line kept for watch(); an error line is shorter

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Writes all of `text`; false when the output is gone (EPIPE or another error), so the caller stops writing.
bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// At the end of a stream: what both filters held back, in order.
std::string drain(RankTagFilter& tags, MpiBannerFilter& banners) {
  std::string text = banners.feed(tags.finish());
  return text + banners.finish();
}

}  // namespace

OutputPump::OutputPump(int stdout_pipe, int stderr_pipe, int out_fd, int err_fd)
    : pipes_{stdout_pipe, stderr_pipe}, outputs_{out_fd, err_fd}, thread_([this] { run(); }) {}

OutputPump::~OutputPump() { finish(0); }

void OutputPump::finish(double wait_s) {
  if (!thread_.joinable()) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (open_pipes_ > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop_ = true;
  thread_.join();
}

std::string OutputPump::failure_line() const {
  std::lock_guard<std::mutex> lock(failure_mutex_);
  return failure_line_;
}

void OutputPump::watch(int stream, const std::string& text) {
  if (failure_at_ != 0) return;
  std::string& line = partial_[stream];
  for (char c : text) {
    if (c != '\n' && c != '\r') {
      if (line.size() < kLineCap) line += c;
      continue;
    }
    if (reports_fatal_error(line)) {
      {
        std::lock_guard<std::mutex> lock(failure_mutex_);
        failure_line_ = line;
      }
      failure_at_ = steady_now_s();
      return;
    }
    line.clear();
  }
}

void OutputPump::run() {
  RankTagFilter filters[2];
  MpiBannerFilter banners[2];  // after the tags: mpirun's own boxes are untagged text
  bool writable[2] = {true, true};
  char buffer[65536];
  while (!stop_ && (pipes_[0] >= 0 || pipes_[1] >= 0)) {
    pollfd fds[2];
    for (int s = 0; s < 2; ++s) fds[s] = {pipes_[s], POLLIN, 0};  // a negative fd is ignored by poll
    const int ready = ::poll(fds, 2, kPollMs);
    if (ready < 0 && errno != EINTR) break;
    for (int s = 0; s < 2 && ready > 0; ++s) {
      if (pipes_[s] < 0 || !(fds[s].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(pipes_[s], buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      std::string text = n > 0 ? banners[s].feed(filters[s].feed(std::string_view(buffer, static_cast<std::size_t>(n))))
                               : drain(filters[s], banners[s]);
      if (writable[s]) writable[s] = write_all(outputs_[s], text);
      watch(s, text);
      if (n <= 0) {
        ::close(pipes_[s]);
        pipes_[s] = -1;
        --open_pipes_;
      }
    }
  }
  for (int s = 0; s < 2; ++s) {
    if (pipes_[s] < 0) continue;
    if (writable[s]) write_all(outputs_[s], drain(filters[s], banners[s]));
    ::close(pipes_[s]);
    pipes_[s] = -1;
  }
}

}  // namespace mirror::launch::detail
