// Numeric option checks whose messages say what was wrong with the value. CLI11's own call
// "5abc" out of range, and print 1.8e308 as the upper bound of a positive number.
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "tools/command.hpp"

namespace ts::cli {
namespace {

std::string shown(const std::string& v) { return "'" + v + "'"; }

// The whole of `v` as a finite number, or nothing.
std::optional<double> finite(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (end != v.c_str() + v.size() || !std::isfinite(x) || errno == ERANGE) return std::nullopt;
  return x;
}

}  // namespace

CLI::Validator integer_in(long long lo, long long hi) {
  const bool open = hi == std::numeric_limits<long long>::max();
  const std::string desc = !open ? std::to_string(lo) + ".." + std::to_string(hi)
                           : lo == 0 ? "NONNEGATIVE"
                           : lo == 1 ? "POSITIVE"
                                     : "AT LEAST " + std::to_string(lo);
  return CLI::Validator(
      [lo, hi, open](std::string& v) -> std::string {
        long long x = 0;
        const char* end = v.data() + v.size();
        const auto [p, ec] = std::from_chars(v.data(), end, x);
        if (v.empty() || p != end || ec == std::errc::invalid_argument)
          return shown(v) + " is not a whole number";
        if (ec == std::errc::result_out_of_range || x < lo || x > hi)
          return v + " is out of range: expected " +
                 (open ? "at least " + std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi));
        return "";
      },
      desc);
}

CLI::Validator number_at_least(double lo, bool strictly) {
  const std::string bound = (strictly ? "> " : ">= ") + CLI::detail::to_string(lo);
  const std::string desc = lo == 0 ? (strictly ? "POSITIVE" : "NONNEGATIVE") : bound;
  return CLI::Validator(
      [lo, strictly, bound](std::string& v) -> std::string {
        const auto x = finite(v);
        if (!x) return shown(v) + " is not a finite number";
        if (strictly ? !(*x > lo) : !(*x >= lo)) return v + " is out of range: expected a number " + bound;
        return "";
      },
      desc);
}

CLI::Validator finite_number(bool list) {
  return CLI::Validator(
      [list](std::string& v) -> std::string {
        if (v.empty()) return list ? "empty: expected numbers separated by commas" : "empty: expected a number";
        return finite(v) ? "" : shown(v) + " is not a finite number";
      },
      "");
}

CLI::Option* add_seed_option(CLI::App& app, uint64_t& seed, const std::string& what) {
  return app.add_option("--seed", seed, what)->capture_default_str()->check(integer_in(0));
}

CLI::Option* add_number_list_option(CLI::App& app, const std::string& flag, std::vector<double>& target,
                                    const std::string& help) {
  std::ostringstream shown_default;
  for (size_t i = 0; i < target.size(); ++i) shown_default << (i ? "," : "") << target[i];
  // The raw values, split here: CLI11's own delimiter drops the empty item of "1,,2".
  return app
      .add_option_function<std::vector<std::string>>(
          flag,
          [&target, flag](const std::vector<std::string>& raw) {
            std::vector<double> out;
            for (const auto& text : raw) {
              if (text.empty()) throw CLI::ValidationError(flag, "empty: expected numbers separated by commas");
              size_t at = 0;
              while (true) {
                const size_t comma = text.find(',', at);
                const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
                if (item.empty())
                  throw CLI::ValidationError(flag, shown(text) + ": an empty item: expected numbers separated by commas");
                const auto x = finite(item);
                if (!x) throw CLI::ValidationError(flag, shown(item) + " is not a finite number");
                // The same value twice would be a row (a schedule) run and listed twice.
                for (double seen : out)
                  if (seen == *x) throw CLI::ValidationError(flag, item + " given twice");
                out.push_back(*x);
                if (comma == std::string::npos) break;
                at = comma + 1;
              }
            }
            target = out;
          },
          help)
      ->type_name("LIST")
      ->default_str(shown_default.str());
}

void refuse_repeats(const std::vector<std::string>& values, const std::string& flag) {
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (values[i] == values[j])
        throw InputError(flag + " " + values[i] + " given twice: each is judged once (give it once)");
}

}  // namespace ts::cli
