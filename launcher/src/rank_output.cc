// rank_output.cc — RankTagFilter: Open MPI's "[JOB,RANK]<stdout>:" tags found anywhere in the stream,
// replaced by "[rRANK] " at the start of each of the rank's lines (see rank_output.h for the rules).
#include "mirror/launch/rank_output.h"

#include <cctype>

namespace mirror::launch {
namespace {

enum class Match { kNo, kPartial, kFull };

// Matches "[digits,digits]<stdout|stderr|stddiag>:" at data[at]. On kFull sets *rank and *length.
Match match_tag(std::string_view data, std::size_t at, int* rank, std::size_t* length) {
  std::size_t i = at;
  auto more = [&] { return i < data.size(); };
  auto digits = [&](long* value) {  // kFull when at least one digit and a non-digit follows
    const std::size_t start = i;
    *value = 0;
    while (more() && std::isdigit(static_cast<unsigned char>(data[i])) && i - start < 10) {
      *value = *value * 10 + (data[i] - '0');
      ++i;
    }
    if (!more()) return Match::kPartial;
    return i > start ? Match::kFull : Match::kNo;
  };
  auto literal = [&](std::string_view text) {
    for (char c : text) {
      if (!more()) return Match::kPartial;
      if (data[i] != c) return Match::kNo;
      ++i;
    }
    return Match::kFull;
  };
  long job = 0, r = 0;
  Match m = literal("[");
  if (m == Match::kFull) m = digits(&job);
  if (m == Match::kFull) m = literal(",");
  if (m == Match::kFull) m = digits(&r);
  if (m == Match::kFull) m = literal("]<");
  if (m != Match::kFull) return m;
  // One of the three stream names, then ">:".
  const std::size_t name_at = i;
  while (more() && std::islower(static_cast<unsigned char>(data[i])) && i - name_at < 7) ++i;
  const std::string_view name = data.substr(name_at, i - name_at);
  bool is_prefix = false;
  for (std::string_view known : {"stdout", "stderr", "stddiag"}) {
    if (known.substr(0, name.size()) == name) is_prefix = true;
    if (known == name && more()) {
      const Match end = literal(">:");
      if (end != Match::kFull) return end;
      *rank = static_cast<int>(r);
      *length = i - at;
      return Match::kFull;
    }
  }
  return !more() && is_prefix ? Match::kPartial : Match::kNo;
}

}  // namespace

bool reports_fatal_error(std::string_view line) {
  if (line.find("MPI_ABORT was invoked on rank") != std::string_view::npos) return true;
  for (std::size_t at = line.find("[rank "); at != std::string_view::npos; at = line.find("[rank ", at + 1)) {
    std::size_t i = at + 6;
    const std::size_t digits_at = i;
    while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
    if (i > digits_at && line.substr(i, 8) == "] error:") return true;
  }
  return false;
}

void RankTagFilter::emit(char c, std::string& out) {
  if (line_owner_ != kNone && line_owner_ != source_) {  // someone else's line is unfinished: end it
    out += blanks_;
    blanks_.clear();
    out += '\n';
    line_owner_ = kNone;
    at_column0_ = true;
  }
  if (at_column0_ && source_ >= 0 && (c == ' ' || c == '\t')) {  // wait: blanks alone get no prefix
    blanks_ += c;
    line_owner_ = source_;
    return;
  }
  out += blanks_;
  if (c == '\n' || c == '\r') {
    blanks_.clear();
  }
  if (c == '\n') {
    out += '\n';
    line_owner_ = kNone;
    at_column0_ = true;
    source_ = kMpirun;  // the next line is mpirun's unless a tag says otherwise
    return;
  }
  if (c == '\r') {
    out += '\r';
    line_owner_ = source_;
    at_column0_ = true;
    return;
  }
  if (at_column0_ && source_ >= 0) {
    out.resize(out.size() - blanks_.size());  // the prefix goes before the blanks
    out += "[r" + std::to_string(source_) + "] " + blanks_;
  }
  blanks_.clear();
  at_column0_ = false;
  line_owner_ = source_;
  out += c;
}

std::string RankTagFilter::feed(std::string_view chunk) {
  std::string data = std::move(held_);
  held_.clear();
  data.append(chunk);
  std::string out;
  out.reserve(data.size());
  for (std::size_t i = 0; i < data.size();) {
    if (data[i] == '[') {
      int rank = 0;
      std::size_t length = 0;
      const Match m = match_tag(data, i, &rank, &length);
      if (m == Match::kPartial) {
        held_ = data.substr(i);
        break;
      }
      if (m == Match::kFull) {
        source_ = rank;
        i += length;
        continue;
      }
    }
    emit(data[i], out);
    ++i;
  }
  return out;
}

std::string RankTagFilter::finish() {
  std::string out;
  const std::string rest = std::move(held_);
  held_.clear();
  for (char c : rest) emit(c, out);
  out += blanks_;
  blanks_.clear();
  return out;
}

}  // namespace mirror::launch
