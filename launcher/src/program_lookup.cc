// program_lookup.cc — execvp-style search for the program and for mpirun, with messages that say why not.
#include "mirror/launch/program_lookup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

#include "mirror/error.h"

namespace mirror::launch {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_executable(const std::string& name, const std::optional<std::string>& path_var) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
    return std::nullopt;
  }
  std::stringstream dirs(path_var ? *path_var : kDefaultPath);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;  // empty entry = cwd
    if (is_executable_file(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string resolve_program(const std::string& name, const Environment& env) {
  MIRROR_CHECK(!name.empty(), kInvalidArgument, "no program given: usage is mirrorrun [options] PROGRAM [ARGS...]");
  if (auto found = find_executable(name, lookup(env, "PATH"))) return *found;
  if (name.find('/') != std::string::npos) {
    struct stat st {};
    MIRROR_CHECK(stat(name.c_str(), &st) == 0, kInvalidArgument, "program '" << name << "' does not exist");
    MIRROR_THROW(kInvalidArgument, "program '" << name << "' is not an executable file (check its path and "
                                                         "chmod +x)");
  }
  MIRROR_THROW(kInvalidArgument, "program '" << name << "' not found on PATH (give its path, e.g. ./" << name
                                             << ", or add its folder to PATH)");
}

std::string find_mpirun(const Environment& env) {
  if (const auto chosen = lookup(env, "MIRROR_MPIRUN"); chosen && !chosen->empty()) {
    auto found = find_executable(*chosen, lookup(env, "PATH"));
    MIRROR_CHECK(found.has_value(), kInvalidArgument,
                 "MIRROR_MPIRUN='" << *chosen << "' is not an executable (expected the path of Open MPI's mpirun)");
    return *found;
  }
  auto found = find_executable("mpirun", lookup(env, "PATH"));
  MIRROR_CHECK(found.has_value(), kInvalidArgument,
               "mpirun not found on PATH: install Open MPI (Debian: openmpi-bin, see scripts/install-deps.sh) "
               "or set MIRROR_MPIRUN to its path");
  return *found;
}

}  // namespace mirror::launch
