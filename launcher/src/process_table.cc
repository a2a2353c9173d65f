// process_table.cc — /proc scans: members of a session, and a variable in a process's environment.
#include "process_table.h"

#include <dirent.h>

#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>

namespace mirror::launch::detail {

std::vector<pid_t> processes_in_session(pid_t sid) {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (!proc) return pids;
  while (const dirent* entry = readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');  // the command name may hold spaces and parentheses
    if (paren == std::string::npos) continue;
    std::istringstream fields(text.substr(paren + 1));
    char state = 0;
    long ppid = 0, pgrp = 0, session = 0;
    if (!(fields >> state >> ppid >> pgrp >> session)) continue;
    if (session == sid && state != 'Z') pids.push_back(static_cast<pid_t>(std::stol(entry->d_name)));
  }
  closedir(proc);
  return pids;
}

bool process_has_env_var(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  if (!in) return false;
  const std::string prefix = name + "=";
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    if (entry.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace mirror::launch::detail
