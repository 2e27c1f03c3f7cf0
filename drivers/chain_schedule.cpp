#include "drivers/chain_schedule.hpp"

#include <algorithm>
#include <cctype>

#include "core/error.hpp"

namespace ts {
namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

int whole(const std::string& s, const std::string& where) {
  if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw InputError(where + ": '" + s + "' is not a whole number");
  return std::stoi(s);
}

// One condition into the rule's ranges (intersected with what earlier ones set).
void apply(ScheduleRule& r, const std::string& cond, const std::string& where) {
  const std::string c = trim(cond);
  const bool step = c.rfind("step", 0) == 0, block = c.rfind("block", 0) == 0;
  if (!step && !block)
    throw InputError(where + ": condition '" + c + "' names neither step nor block (step<K, step>=K, step=A-B, block...)");
  std::string rest = trim(c.substr(step ? 4 : 5));
  int lo = 0, hi = -1;
  if (rest.rfind("<=", 0) == 0) {
    hi = whole(trim(rest.substr(2)), where) + 1;
  } else if (rest.rfind(">=", 0) == 0) {
    lo = whole(trim(rest.substr(2)), where);
  } else if (rest.rfind('<', 0) == 0) {
    hi = whole(trim(rest.substr(1)), where);
  } else if (rest.rfind('>', 0) == 0) {
    lo = whole(trim(rest.substr(1)), where) + 1;
  } else if (rest.rfind('=', 0) == 0) {
    rest = trim(rest.substr(1));
    const auto dash = rest.find('-');
    lo = whole(trim(rest.substr(0, dash)), where);
    hi = (dash == std::string::npos ? lo : whole(trim(rest.substr(dash + 1)), where)) + 1;
    if (hi <= lo) throw InputError(where + ": the range '" + rest + "' is empty");
  } else {
    throw InputError(where + ": condition '" + c + "' has no comparison (<, <=, >, >=, =)");
  }
  int& rlo = step ? r.step_lo : r.block_lo;
  int& rhi = step ? r.step_hi : r.block_hi;
  rlo = std::max(rlo, lo);
  if (hi >= 0) rhi = rhi < 0 ? hi : std::min(rhi, hi);
}

}  // namespace

bool ScheduleRule::matches(int block, int step) const {
  return step >= step_lo && (step_hi < 0 || step < step_hi) && block >= block_lo && (block_hi < 0 || block < block_hi);
}

const std::string& Schedule::at(int block, int step) const {
  for (const auto& r : rules)
    if (r.matches(block, step)) return r.spec;
  throw InputError("schedule '" + text + "': no rule covers block " + std::to_string(block) + " of step " +
                   std::to_string(step) + " (end with a rule without 'if')");
}

void Schedule::check_covers(int blocks, int steps) const {
  for (int s = 0; s < steps; ++s)
    for (int b = 0; b < blocks; ++b) at(b, s);
}

std::vector<std::string> Schedule::specs() const {
  std::vector<std::string> out;
  for (const auto& r : rules)
    if (std::find(out.begin(), out.end(), r.spec) == out.end()) out.push_back(r.spec);
  return out;
}

Schedule parse_schedule(const std::string& text, const std::string& dense_spec) {
  Schedule s;
  s.text = trim(text);
  if (s.text.empty()) throw InputError("a schedule must name at least one backend spec");
  size_t start = 0;
  int n = 0;
  while (start <= text.size()) {
    const auto end = text.find(';', start);
    const std::string part = trim(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    start = end == std::string::npos ? text.size() + 1 : end + 1;
    ++n;
    const std::string where = "schedule '" + s.text + "', rule " + std::to_string(n);
    if (part.empty()) throw InputError(where + ": empty rule (two ';' in a row, or one at the end)");
    ScheduleRule r;
    const auto at_if = part.find(" if ");
    r.spec = trim(part.substr(0, at_if));
    if (r.spec.empty() || r.spec.find(' ') != std::string::npos)
      throw InputError(where + ": '" + r.spec + "' is not one backend spec (write SPEC if COND and COND)");
    if (r.spec == "dense") r.spec = dense_spec;
    if (at_if != std::string::npos) {
      std::string conds = part.substr(at_if + 4);
      size_t cs = 0;
      while (true) {
        const auto ce = conds.find(" and ", cs);
        apply(r, conds.substr(cs, ce == std::string::npos ? std::string::npos : ce - cs), where);
        if (ce == std::string::npos) break;
        cs = ce + 5;
      }
    }
    s.rules.push_back(std::move(r));
  }
  return s;
}

}  // namespace ts
