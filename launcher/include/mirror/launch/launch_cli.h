// mirror/launch/launch_cli.h — mirrorrun's command line: one CLI11 table gives both the parser and --help.
// Arguments up to the program name are mirrorrun's (a lone "--" may end them); the program name and
// everything after it belong to the program. "-np N" is accepted as Open MPI and horovodrun spell it.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "mirror/launch/options.h"

namespace mirror::launch {

struct ParsedCommandLine {
  bool run = false;       // false: --help was printed or the line was wrong; exit with exit_code
  int exit_code = 0;
  LaunchOptions options;  // valid when run is true
};

// args excludes argv[0]. Prints help to `out` and parse errors to `err`; never calls exit().
// Range checks (-np > 0, --max-restarts >= 0, a program given) are errors here too.
ParsedCommandLine parse_launch_command_line(const std::vector<std::string>& args, std::ostream& out,
                                            std::ostream& err);

}  // namespace mirror::launch
