// environment.cc — snapshot of environ as a name -> value map.
#include "mirror/launch/environment.h"

extern char** environ;

namespace mirror::launch {

Environment capture_environment() {
  Environment env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text(*entry);
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(text.substr(0, eq), text.substr(eq + 1));
  }
  return env;
}

std::optional<std::string> lookup(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

}  // namespace mirror::launch
