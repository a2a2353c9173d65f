// mirror/launch/hostfile.h — checks an Open MPI hostfile before mirrorrun hands it to mpirun, so a missing,
// empty or mistyped file is a clear error up front. Accepted lines: "host", "host slots=N",
// "host slots=N max_slots=M" (max-slots also), blank lines and '#' comments. A host named twice is an error
// (Open MPI would add the slots up silently; a repeated line is far more often a mistake).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mirror::launch {

struct HostEntry {
  std::string host;
  std::optional<int> slots;      // ranks Open MPI places there; unset: Open MPI counts the host's cores
  std::optional<int> max_slots;
};

// Parses hostfile text; `name` is used in messages. Throws mirror::Error(kFormat) naming the line: a word
// that is not a host name first, an unknown field, slots/max_slots not a positive integer, slots above
// max_slots, a repeated host, or no host at all.
std::vector<HostEntry> parse_hostfile(const std::string& text, const std::string& name);

// Reads and parses the file. Throws mirror::Error(kIo) when it cannot be read, kFormat when it is empty
// or a line is wrong.
std::vector<HostEntry> read_hostfile(const std::string& path);

// Sum of slots when every entry gives slots=, else nullopt.
std::optional<int> total_slots(const std::vector<HostEntry>& hosts);

}  // namespace mirror::launch
