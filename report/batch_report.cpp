// The writers of `touchstone batch` (drivers/batch_run.hpp assembles the report from records).
#include "report/batch_report.hpp"

#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "report/gate_report.hpp"
#include "report/markup.hpp"

namespace ts {
namespace {

VerdictCounts verdicts_of(const BatchReport& r) {
  std::vector<CandidateVerdict> all;
  for (const auto& run : r.runs) all.insert(all.end(), run.candidates.begin(), run.candidates.end());
  return count_verdicts(all);
}

nlohmann::json summary_of(const BatchReport& r) {
  const VerdictCounts v = verdicts_of(r);
  nlohmann::json j = v.to_json();
  j.update({{"cases", r.plan.cases.size()}, {"judged", v.total}, {"not_judged", r.not_judged.size()},
            {"exit_code", r.exit_code()}});
  return j;
}

std::string summary_line(const BatchReport& r) {
  std::ostringstream o;
  o << "batch " << r.plan.name << ": " << r.plan.cases.size() << " cases, " << verdicts_of(r).text(true) << ", "
    << r.not_judged.size() << " not judged";
  return o.str();
}

std::string case_words(const BatchCase& c) {
  return c.id + " " + c.candidate + " on " + c.fixture + " (gate " + c.gate + ", baseline " + c.baseline + ")";
}

}  // namespace

std::string batch_json(const BatchReport& report) {
  nlohmann::json j;
  j["schema"] = kBatchReportSchema;
  j["plan"] = {{"path", report.plan.path}, {"name", report.plan.name}, {"digest", report.plan.digest}};
  j["summary"] = summary_of(report);
  j["runs"] = nlohmann::json::array();
  for (const auto& r : report.runs) j["runs"].push_back(r.to_json());
  j["not_judged"] = nlohmann::json::array();
  for (const auto& n : report.not_judged) {
    nlohmann::json c = n.c.to_json();
    c.erase("key");
    c.erase("cost_core_s");
    c["reason"] = n.reason;
    j["not_judged"].push_back(c);
  }
  j["execution"] = report.execution;
  return j.dump(2) + "\n";
}

std::string batch_junit(const BatchReport& report) {
  // Each run's suite as `gate --junit` writes it, named for its fixture and
  // baseline too (suites of one gate on many fixtures would read alike), and
  // a suite of the cases that were not judged, as errors.
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  auto attr = [](const std::string& doc, const std::string& name) {
    const std::string k = " " + name + "=\"";
    const size_t p = doc.find(k);
    return p == std::string::npos ? 0 : std::atoi(doc.c_str() + p + k.size());
  };
  std::ostringstream suites;
  for (const auto& r : report.runs) {
    const std::string doc = render_junit(r);
    // The suites between <testsuites ...> and </testsuites>, whatever their indentation.
    const size_t a = doc.find("<testsuite ");
    const size_t b = doc.rfind("</testsuites>");
    if (a == std::string::npos || b == std::string::npos) throw InternalError("unexpected JUnit layout");
    std::string suite = "  " + doc.substr(a, b - a);
    const std::string old = "<testsuite name=\"" + markup_escape(r.gate.name) + "\"";
    const size_t n = suite.find(old);
    if (n != std::string::npos)
      suite.replace(n, old.size(),
                    "<testsuite name=\"" + markup_escape(r.gate.name + " " + r.input + " vs " + r.baseline) + "\"");
    tests += attr(suite, "tests");
    failures += attr(suite, "failures");
    errors += attr(suite, "errors");
    skipped += attr(suite, "skipped");
    suites << suite;
  }
  if (!report.not_judged.empty()) {
    suites << "  <testsuite name=\"not judged\" tests=\"" << report.not_judged.size() << "\" failures=\"0\" errors=\""
           << report.not_judged.size() << "\" skipped=\"0\">\n";
    for (const auto& n : report.not_judged) {
      suites << "    <testcase classname=\"" << markup_escape(n.c.gate + "." + n.c.candidate) << "\" name=\""
             << markup_escape(n.c.id + " " + n.c.fixture) << "\">\n"
             << "      <error type=\"not judged\" message=\"" << markup_escape(n.reason) << "\">"
             << markup_escape(case_words(n.c) + ": " + n.reason) << "</error>\n    </testcase>\n";
    }
    suites << "  </testsuite>\n";
    tests += static_cast<int>(report.not_judged.size());
    errors += static_cast<int>(report.not_judged.size());
  }
  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"touchstone batch " << markup_escape(report.plan.name) << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\">\n";
  out << suites.str() << "</testsuites>\n";
  return out.str();
}

std::string batch_markdown(const BatchReport& report) {
  std::ostringstream o;
  o << "## " << summary_line(report) << "\n\n";
  for (const auto& r : report.runs) o << render_markdown(r) << "\n";
  if (!report.not_judged.empty()) {
    o << "### Not judged\n\n";
    for (const auto& n : report.not_judged) o << "- `" << n.c.id << "` `" << n.c.candidate << "` on `" << n.c.fixture
                                       << "` (gate `" << n.c.gate << "`, baseline `" << n.c.baseline
                                       << "`): " << n.reason << "\n";
  }
  return o.str();
}

std::string batch_html(const BatchReport& report) {
  std::vector<const GateRun*> ptrs;
  for (const auto& r : report.runs) ptrs.push_back(&r);
  std::vector<std::string> notes = {summary_line(report)};
  for (const auto& n : report.not_judged) notes.push_back("not judged: " + case_words(n.c) + ": " + n.reason);
  return render_html(ptrs, "touchstone batch " + report.plan.name, notes);
}

std::string batch_text(const BatchReport& report) {
  std::ostringstream o;
  for (const auto& r : report.runs) o << render_terminal(r) << "\n";
  for (const auto& n : report.not_judged) o << "NOT JUDGED " << case_words(n.c) << ": " << n.reason << "\n";
  o << summary_line(report) << "\n";
  return o.str();
}


}  // namespace ts
