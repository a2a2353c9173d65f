// host_name.h — this machine's name, as event file names and timeline tracks show it (internal).
#pragma once

#include <unistd.h>

#include <string>

namespace mirror::telemetry {

inline std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace mirror::telemetry
