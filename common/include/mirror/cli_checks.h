// mirror/cli_checks.h — small CLI11 validators and transformers shared by Mirror's programs (trainer,
// mirror-eval, mirror-ckpt, mirror-data), so that a bad value reads as a sentence ("--batch-size must be a positive integer, got 0") and a choice among names
// becomes a typed enum at the command line (enum_choice), never a string compared later. Header-only; the
// programs link CLI11 themselves. install_sentence_errors() makes an app print validation errors that way.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace mirror::cli {

namespace detail {

inline std::optional<long long> parse_integer(const std::string& text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || p != end || text.empty()) return std::nullopt;
  return v;
}

inline std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// "0.1", "86400", "1e-08": the shortest form that reads back.
inline std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// ", got 0" for a number, ", got 'abc'" for anything else.
inline std::string got(const std::string& text) {
  return parse_number(text) ? ", got " + text : ", got '" + text + "'";
}

}  // namespace detail

// An integer >= 1.
inline CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = detail::parse_integer(s);
        return v && *v >= 1 ? "" : "must be a positive integer" + detail::got(s);
      },
      "INT>0", "positive_integer");
}

// An integer >= 0.
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = detail::parse_integer(s);
        return v && *v >= 0 ? "" : "must be a non-negative integer" + detail::got(s);
      },
      "INT>=0", "non_negative_integer");
}

// An integer in [lo, hi].
inline CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        const auto v = detail::parse_integer(s);
        if (v && *v >= lo && *v <= hi) return "";
        return "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + detail::got(s);
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", "integer_in");
}

// A finite number > 0.
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = detail::parse_number(s);
        return v && *v > 0 ? "" : "must be a number > 0" + detail::got(s);
      },
      "NUM>0", "positive_number");
}

// A finite number >= 0.
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = detail::parse_number(s);
        return v && *v >= 0 ? "" : "must be a number >= 0" + detail::got(s);
      },
      "NUM>=0", "non_negative_number");
}

// A finite number in [lo, hi].
inline CLI::Validator number_in(double lo, double hi) {
  const std::string range = "[" + detail::number_text(lo) + ", " + detail::number_text(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        const auto v = detail::parse_number(s);
        return v && *v >= lo && *v <= hi ? "" : "must be a number in " + range + detail::got(s);
      },
      "NUM in " + range, "number_in");
}

// A probability-like factor in [0, 1) (momentum, Adam's betas, dropout).
inline CLI::Validator probability() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const auto v = detail::parse_number(s);
        return v && *v >= 0 && *v < 1 ? "" : "must be a number in [0, 1)" + detail::got(s);
      },
      "NUM in [0, 1)", "probability");
}

// A transformer from names to enum values: add_option(..., enum_var)->transform(enum_choice(table)). The
// value is rewritten to the enum's integer, which CLI11 then stores; a name not in the table is refused with
// "must be one of a, b, c, got 'x'". The table's order is the order shown in --help.
template <typename E>
CLI::Validator enum_choice(std::vector<std::pair<std::string, E>> table) {
  std::string names;
  for (const auto& [name, value] : table) names += (names.empty() ? "" : ", ") + name;
  return CLI::Validator(
      [table, names](std::string& s) -> std::string {
        for (const auto& [name, value] : table) {
          if (name == s) {
            s = std::to_string(static_cast<long long>(value));
            return "";
          }
        }
        return "must be one of " + names + detail::got(s);
      },
      "{" + names + "}", "enum_choice");
}

// The name of `value` in `table` (for JSON, messages and the default shown by --help).
template <typename E>
std::string enum_name(const std::vector<std::pair<std::string, E>>& table, E value) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return "?";
}

// An enum flag: parsed by its table, its default shown by name.
template <typename E>
CLI::Option* add_choice(CLI::App& app, const std::string& flag, E& value,
                        const std::vector<std::pair<std::string, E>>& table, const std::string& help) {
  return app.add_option(flag, value, help)->transform(enum_choice(table))->default_str(enum_name(table, value));
}

// Makes `app` print a failed validation as one sentence: "error: --batch-size must be a positive integer,
// got 0" (CLI11's own form is "--batch-size: Value 0 not in range ..."); other parse errors as CLI11 says
// them. Both followed by "Run with --help for more information."
inline void install_sentence_errors(CLI::App& app) {
  app.failure_message([](const CLI::App* a, const CLI::Error& e) -> std::string {
    std::string what = e.what();
    if (dynamic_cast<const CLI::ValidationError*>(&e) != nullptr) {
      const auto colon = what.find(": ");
      if (colon != std::string::npos && what.rfind("--", 0) == 0) what.replace(colon, 2, " ");
    }
    (void)a;
    return "error: " + what + "\nRun with --help for more information.\n";
  });
}

}  // namespace mirror::cli
