// mirror/launch/environment.h — a snapshot of the process environment, taken once in main() and passed down,
// so that no launcher code reads getenv() deep inside and tests can hand in any environment they like.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace mirror::launch {

using Environment = std::map<std::string, std::string>;

// The current process environment (environ), name -> value.
Environment capture_environment();

// The value of `name`, or nullopt when it is not set (set-but-empty is "").
std::optional<std::string> lookup(const Environment& env, const std::string& name);

}  // namespace mirror::launch
