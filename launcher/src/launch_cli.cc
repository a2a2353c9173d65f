// launch_cli.cc — mirrorrun's CLI11 table, the split between mirrorrun's arguments and the program's, and
// the range checks on the values.
#include "mirror/launch/launch_cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include "mirror/error.h"
#include "mirror/launch/command_line.h"

namespace mirror::launch {
namespace {

// Index of the program name in args: the first word that is neither an option of `app` nor the value of
// one. "-np" is rewritten to "--np" on the way (CLI11 names with one dash have one letter).
std::size_t split_at_program(CLI::App& app, std::vector<std::string>& args, bool* saw_separator) {
  *saw_separator = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string& word = args[i];
    if (word == "--") {
      *saw_separator = true;
      return i;
    }
    if (word == "-np") word = "--np";
    if (word.rfind("-np=", 0) == 0) word = "--np=" + word.substr(4);
    if (word.size() < 2 || word[0] != '-') return i;  // the program
    if (word.find('=') != std::string::npos) continue;
    const CLI::Option* opt = app.get_option_no_throw(word);
    if (opt && opt->get_items_expected_max() > 0) ++i;  // skip the option's value
  }
  return args.size();
}

}  // namespace

ParsedCommandLine parse_launch_command_line(const std::vector<std::string>& args_in, std::ostream& out,
                                            std::ostream& err) {
  ParsedCommandLine result;
  LaunchOptions& o = result.options;
  int np = 0;
  CLI::App app{"mirrorrun — start one rank per local GPU (CPU ranks when there is none) under Open MPI's mpirun,\n"
               "pass signals on, return the job's exit code and restart failed jobs.\n\n"
               "  mirrorrun [-np N] [--hostfile F] [--mpi-args \"...\"] [--max-restarts K] [--dry-run] [--verbose] [--]\n"
               "            PROGRAM [ARGS...]",
               "mirrorrun"};
  app.footer("Everything from PROGRAM on is the program's. Environment: MIRROR_MPIRUN (mpirun to use),\n"
             "CUDA_VISIBLE_DEVICES (GPUs counted). See docs/launcher.md.");
  app.add_option("-n,--np", np, "Number of ranks (also -np N). Default: local GPUs, else cores");
  app.add_option("--hostfile", o.hostfile, "Open MPI hostfile ('host slots=N' lines) for a multi-node job");
  app.add_option("--max-restarts", o.max_restarts, "Start the whole job again up to K times after a failure")
      ->capture_default_str();
  app.add_flag("--dry-run", o.dry_run, "Print the mpirun command line and exit");
  app.add_flag("-v,--verbose", o.verbose, "Print the plan and the command line before running");
  app.add_flag("!--no-tag-output", o.tag_output,
               "Do not tag output lines with [rR] (Open MPI's tagging can drop heavy output)");
  app.add_option("--grace-period", o.grace_period_s,
                 "Seconds ranks get after SIGINT/SIGTERM before everything is killed")
      ->capture_default_str();
  app.add_option("--restart-delay", o.restart_delay_s, "Seconds to wait before a restart")->capture_default_str();
  app.add_option("--failure-grace", o.failure_grace_s,
                 "Seconds mpirun gets to end the job after a rank reported a fatal error, before mirrorrun stops it")
      ->capture_default_str();
  std::string mpi_args;
  app.add_option("--mpi-args", mpi_args,
                 "Extra mpirun options, one shell-quoted string, e.g. --mpi-args \"--mca btl_tcp_if_include eth1\"");

  std::vector<std::string> args = args_in;
  bool separator = false;
  const std::size_t program_at = split_at_program(app, args, &separator);
  std::vector<std::string> own(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(program_at));
  o.command.assign(args.begin() + static_cast<std::ptrdiff_t>(program_at + (separator ? 1 : 0)), args.end());
  try {
    std::reverse(own.begin(), own.end());  // CLI11 parses a reversed vector
    app.parse(own);
    if (app.count("--np") && np <= 0) {
      throw CLI::ValidationError("--np", "-np must be a positive number of ranks, got " + std::to_string(np));
    }
    if (app.count("--np")) o.np = np;
    if (o.max_restarts < 0) {
      throw CLI::ValidationError("--max-restarts", "must be 0 or more, got " + std::to_string(o.max_restarts));
    }
    if (o.grace_period_s < 0 || o.restart_delay_s < 0 || o.failure_grace_s < 0) {
      throw CLI::ValidationError("--grace-period/--restart-delay/--failure-grace", "seconds must be 0 or more");
    }
    try {
      o.mpi_args = split_shell_words(mpi_args);
    } catch (const mirror::Error& e) {
      throw CLI::ValidationError("--mpi-args", e.message());
    }
    if (o.command.empty()) throw CLI::ValidationError("PROGRAM", "no program given (mirrorrun [options] PROGRAM ...)");
  } catch (const CLI::ParseError& e) {
    result.exit_code = app.exit(e, out, err);
    return result;
  }
  result.run = true;
  return result;
}

}  // namespace mirror::launch
