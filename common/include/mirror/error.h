// mirror/error.h — the one exception type of Mirror's libraries and the macros that raise it.
// Every error carries a kind, the source file and line where it was raised, and a message that says
// what was wrong, where, and what was expected. Only main() catches (see mirror/main_guard.h).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace mirror {

enum class ErrorKind {
  kInvalidArgument,  // a caller passed something wrong (flag value, buffer, dtype/op pair, ...)
  kIo,               // a file could not be opened, read, written or renamed
  kFormat,           // a file was read but its content is not what the format says
  kMpi,              // an MPI call failed
  kNccl,             // an NCCL call failed
  kCuda,             // a CUDA runtime call failed
  kCublas,           // a cuBLAS call failed
  kHdf5,             // an HDF5 call failed
  kTimeout,          // a collective or wait ran past its deadline
  kRemote,           // another rank failed; this rank stops because of it
  kInternal,         // a broken invariant: a bug in Mirror
};

inline const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid argument";
    case ErrorKind::kIo: return "I/O error";
    case ErrorKind::kFormat: return "format error";
    case ErrorKind::kMpi: return "MPI error";
    case ErrorKind::kNccl: return "NCCL error";
    case ErrorKind::kCuda: return "CUDA error";
    case ErrorKind::kCublas: return "cuBLAS error";
    case ErrorKind::kHdf5: return "HDF5 error";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kRemote: return "remote failure";
    case ErrorKind::kInternal: return "internal error";
  }
  return "error";
}

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message, const char* file, int line)
      : std::runtime_error(message + " (" + to_string(kind) + " at " + file + ":" + std::to_string(line) + ")"),
        kind_(kind), message_(std::move(message)), file_(file), line_(line) {}

  ErrorKind kind() const noexcept { return kind_; }
  const std::string& message() const noexcept { return message_; }  // without the file:line suffix
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  ErrorKind kind_;
  std::string message_;
  const char* file_;
  int line_;
};

}  // namespace mirror

// MIRROR_THROW(kInvalidArgument, "batch size must be > 0, got " << b);  — the message is a stream expression.
#define MIRROR_THROW(kind, stream_expr)                                                   \
  do {                                                                                    \
    std::ostringstream mirror_error_stream_;                                              \
    mirror_error_stream_ << stream_expr;                                                  \
    throw ::mirror::Error(::mirror::ErrorKind::kind, mirror_error_stream_.str(), __FILE__, __LINE__); \
  } while (0)

// MIRROR_CHECK(cond, kInvalidArgument, "what was wrong, where, what was expected");
#define MIRROR_CHECK(cond, kind, stream_expr) \
  do {                                        \
    if (!(cond)) MIRROR_THROW(kind, stream_expr); \
  } while (0)
