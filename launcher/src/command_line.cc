// command_line.cc — the rank plan and the mpirun argv (horovodrun-style), both pure functions.
#include "mirror/launch/command_line.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "mirror/error.h"

namespace mirror::launch {
namespace {

bool has_prefix(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// TCP keepalive on Open MPI's run-time connections, so that a daemon cut off from mpirun (a host whose link
// went down) notices within ~35 s and ends its ranks, instead of after Open MPI's default 300 s + 9 x 20 s.
// A live but idle peer answers the probes, so a healthy job is never affected. The user's own setting wins.
struct KeepaliveDefault {
  const char* param;
  const char* value;
};
constexpr KeepaliveDefault kKeepalive[] = {
    {"oob_tcp_keepalive_time", "20"}, {"oob_tcp_keepalive_intvl", "5"}, {"oob_tcp_keepalive_probes", "3"}};

}  // namespace

RankPlan plan_ranks(const LaunchOptions& options, const HostFacts& facts, const std::vector<HostEntry>& hosts) {
  RankPlan plan;
  const int cores = std::max(1, facts.cores);
  const auto slots = total_slots(hosts);
  if (options.np) {
    MIRROR_CHECK(*options.np > 0, kInvalidArgument, "-np must be at least 1, got " << *options.np);
    plan.ranks = *options.np;
    plan.on_gpus = facts.gpus > 0;
  } else if (!hosts.empty()) {
    MIRROR_CHECK(slots.has_value(), kInvalidArgument,
                 "the hostfile '" << options.hostfile << "' does not give slots=N for every host; "
                                  << "add slots= (ranks per machine, usually its GPU count) or give -np");
    plan.ranks = *slots;
    plan.on_gpus = facts.gpus > 0;
  } else if (facts.gpus > 0) {
    plan.ranks = facts.gpus;
    plan.on_gpus = true;
  } else {
    plan.ranks = cores;
    plan.note = "no GPU found" + (facts.gpu_summary.empty() ? "" : " (" + facts.gpu_summary + ")") +
                "; starting " + std::to_string(cores) + " CPU rank(s), one per core";
  }

  if (hosts.empty() && plan.on_gpus && plan.ranks > facts.gpus) {
    plan.note = std::to_string(plan.ranks) + " ranks but " + std::to_string(facts.gpus) +
                " GPU(s) here: ranks past the GPU count have no GPU of their own";
  }
  if (hosts.empty()) {
    plan.ranks_per_node = plan.ranks;
    plan.oversubscribe = plan.ranks > cores;
  } else {
    int max_slots = 0;
    for (const auto& h : hosts) max_slots = std::max(max_slots, h.slots.value_or(cores));
    const int nodes = static_cast<int>(hosts.size());
    plan.ranks_per_node = std::max(std::min(plan.ranks, max_slots), ceil_div(plan.ranks, nodes));
    plan.oversubscribe = plan.ranks_per_node > cores || (slots && plan.ranks > *slots);
  }
  plan.threads_per_rank = std::max(1, cores / plan.ranks_per_node);
  return plan;
}

std::vector<std::string> build_mpirun_command(const std::string& mpirun, const LaunchOptions& options,
                                              const RankPlan& plan, const HostFacts& facts, int restart) {
  std::vector<std::string> argv = {mpirun, "-np", std::to_string(plan.ranks)};
  if (!options.hostfile.empty()) {
    argv.insert(argv.end(), {"--hostfile", options.hostfile});
  }
  if (plan.oversubscribe) {
    argv.insert(argv.end(), {"--bind-to", "none", "--oversubscribe"});
  } else {
    argv.insert(argv.end(), {"--bind-to", "core"});
    if (plan.threads_per_rank > 1) {  // give each rank as many cores as it runs threads
      argv.insert(argv.end(), {"--map-by", "slot:PE=" + std::to_string(plan.threads_per_rank)});
    }
  }
  if (facts.is_root) argv.push_back("--allow-run-as-root");
  if (options.tag_output) argv.push_back("--tag-output");
  for (const auto& k : kKeepalive) {
    if (!facts.env.count(std::string("OMPI_MCA_") + k.param)) argv.insert(argv.end(), {"--mca", k.param, k.value});
  }

  // Thread counts: the user's own setting wins (exported by name); otherwise cores / ranks per machine.
  for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    argv.push_back("-x");
    argv.push_back(facts.env.count(var) ? std::string(var) : std::string(var) + "=" +
                                                                 std::to_string(plan.threads_per_rank));
  }
  argv.insert(argv.end(), {"-x", "MIRROR_RESTART_COUNT=" + std::to_string(restart)});
  for (const auto& [name, value] : facts.env) {  // std::map: sorted, so the line is stable
    const bool mirror_var = has_prefix(name, "MIRROR_") && name != "MIRROR_RESTART_COUNT";
    if (mirror_var || has_prefix(name, "NCCL_") || name == "PATH" || name == "LD_LIBRARY_PATH") {
      argv.insert(argv.end(), {"-x", name});
    }
  }
  argv.insert(argv.end(), options.mpi_args.begin(), options.mpi_args.end());
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

std::string shell_quote(const std::string& word) {
  if (word.empty()) return "''";
  const bool safe = std::all_of(word.begin(), word.end(), [](unsigned char c) {
    return std::isalnum(c) || std::string_view("@%+=:,./_-").find(static_cast<char>(c)) != std::string_view::npos;
  });
  if (safe) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string format_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(word);
  }
  return out;
}

std::vector<std::string> split_shell_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;  // ' or " while inside quotes
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      else word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\') {
      MIRROR_CHECK(i + 1 < text.size(), kInvalidArgument, "'" << text << "' ends with a lone backslash");
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  MIRROR_CHECK(quote == 0, kInvalidArgument, "'" << text << "' has an unterminated " << quote << " quote");
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace mirror::launch
