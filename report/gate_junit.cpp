#include <algorithm>
#include <sstream>

#include "report/markup.hpp"
#include "report/gate_report.hpp"

namespace ts {
namespace {

// CI viewers (Jenkins, GitLab, GitHub's test reporters) read a classname as
// package.class and split it at every dot: a dot inside the gate's or the
// candidate's name ("sol:tau=1.3", "plugin:lib.so") would invent packages.
// Each is written with its dots as '_' (tau=1_3), joined by the one dot that
// makes the gate the package and the candidate the class; the spec as given
// is in the test case's text ("candidate: ...").
std::string junit_name(const std::string& s) {
  std::string o = s;
  std::replace(o.begin(), o.end(), '.', '_');
  return o;
}

}  // namespace

// One test case per candidate x rule (built-in checks included). A failed
// rule is a <failure type="REJECT">, an open or missing one a <failure
// type="INCONCLUSIVE"> (CI must not show it green), an optional rule without
// a figure is <skipped/>, and a candidate that crashed is an <error>.
std::string render_junit(const GateRun& run) {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::ostringstream cases;
  for (const auto& c : run.candidates) {
    for (const auto& o : c.outcomes) {
      ++tests;
      cases << "    <testcase classname=\"" << markup_escape(junit_name(run.gate.name) + "." + junit_name(c.candidate))
            << "\" name=\"" << markup_escape(junit_name(o.id)) << "\">\n";
      // A NaN's count is finite_guard's to say; the rules it failed point there (said once).
      const std::string message = rule_reason(c, o);
      const std::string body = message + (o.bound.empty() ? "" : "\nbound: " + o.bound) +
                               "\ncandidate: " + c.candidate + (c.repro.empty() ? "" : "\nrepro: " + c.repro);
      if (o.id == "run" && o.builtin && o.status == RuleStatus::fail) {
        ++errors;
        cases << "      <error type=\"error\" message=\"" << markup_escape(message) << "\">"
              << markup_escape(body) << "</error>\n";
      } else if (o.status == RuleStatus::fail) {
        ++failures;
        cases << "      <failure type=\"REJECT\" message=\"" << markup_escape(message) << "\">"
              << markup_escape(body) << "</failure>\n";
      } else if (o.status == RuleStatus::inconclusive || (o.status == RuleStatus::missing && !o.optional)) {
        ++failures;
        cases << "      <failure type=\"INCONCLUSIVE\" message=\"" << markup_escape(message) << "\">"
              << markup_escape(body) << "</failure>\n";
      } else if (o.status == RuleStatus::missing) {
        ++skipped;
        cases << "      <skipped message=\"" << markup_escape(message) << "\"/>\n";
      } else {
        cases << "      <system-out>" << markup_escape(message) << "</system-out>\n";
      }
      cases << "    </testcase>\n";
    }
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"touchstone gate\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  out << "  <testsuite name=\"" << markup_escape(run.gate.name) << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  out << cases.str();
  out << "  </testsuite>\n</testsuites>\n";
  return out.str();
}

}  // namespace ts
