// End-to-end reliability on the JSON side: inputs that once crashed,
// gave exit 3, or took minutes are exit 2 with one line (or quick), and the
// output file a failed run names is left as it was.
#include <sys/resource.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;
using ts::test::CliResult;
using ts::test::read_file;
using ts::test::run_cli;
using ts::test::scratch_dir;

namespace {

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string write(const std::string& name, const std::string& text) {
  const std::string p = scratch_dir() + "/" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

// Fails the test unless the run is bad input, reported on one line, and the
// output file it was given still holds what it held.
void require_bad_input(const std::string& args, const std::string& out_file, const std::string& want) {
  const std::string before = read_file(out_file);
  const CliResult r = run_cli(args);
  INFO(args << "\nstderr: " << r.err.substr(0, 400));
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(want) != std::string::npos);
  CHECK(read_file(out_file) == before);
}

const std::string kGate = R"({"schema": "touchstone.gate/1", "name": "g", "rules": [{"id": "a", "metric": "rel_l2", "max": 0.1}]})";
const std::string kMeas = R"({"schema": "touchstone.measurements/1", "entries": [
  {"backend": "sage2", "quantity": "attention", "value": 10, "unit": "ms", "level": "block", "provenance": "t"},
  {"backend": "k", "quantity": "attention", "value": 5, "unit": "ms", "level": "block", "provenance": "t"},
  {"backend": "k", "quantity": "rel_l2", "against": "sage2", "value": VALUE, "unit": "", "level": "quality", "provenance": "t"}]})";

std::string meas(const std::string& value) {
  std::string m = kMeas;
  return m.replace(m.find("VALUE"), 5, value);
}

double child_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("reliability CLI: a report nested 200 000 levels deep is exit 2, not a crash") {
  const std::string out = write("deep.out.json", "kept\n");
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const std::string report = write("deep.report.json", R"({"representative_block_24_p50_milliseconds": {"a": {"attention": 1}}, "x": )" + deep + "}");
  require_bad_input("import-report " + report + " -o " + out, out, "deep.report.json: x[0][0]");
  require_bad_input("import-report " + report + " -o " + out, out, "nested deeper than 128 levels");
}

TEST_CASE("reliability CLI: numbers a double cannot hold are exit 2 naming the path") {
  const std::string out = write("num.out.json", "kept\n");
  const std::string m = write("ok.measurements.json", meas("0.01"));
  std::string g = kGate;
  const std::string big = write("big.gate.json", g.replace(g.find("0.1"), 3, "1e999"));
  require_bad_input("gate --gate " + big + " --measurements " + m + " --json " + out, out,
                    "big.gate.json: rules[0].max: number 1e999 is too large for a double");
  g = kGate;
  const std::string tiny = write("tiny.gate.json", g.replace(g.find("0.1"), 3, "1e-400"));
  require_bad_input("gate --gate " + tiny + " --measurements " + m + " --json " + out, out,
                    "tiny.gate.json: rules[0].max: number 1e-400 is too small for a double (it would read as 0)");
  const std::string neg = write("neg.measurements.json", meas("-1e999"));
  require_bad_input("gate --gate sparse_acceptance --measurements " + neg + " --json " + out, out,
                    "neg.measurements.json: entries[2].value: number -1e999 is too large for a double");
  const std::string rep = write("big.report.json", R"({"representative_block_24_p50_milliseconds": {"a": {"attention": 1e999}}})");
  require_bad_input("import-report " + rep + " -o " + out, out,
                    "big.report.json: representative_block_24_p50_milliseconds.a.attention: number 1e999 is too large");
}

TEST_CASE("reliability CLI: bad data that used to be judged is exit 2") {
  const std::string out = write("bad.out.json", "kept\n");
  const std::string m = write("negative.measurements.json", meas("-0.5"));
  require_bad_input("gate --gate sparse_acceptance --measurements " + m + " --json " + out, out,
                    "entries[2].value: rel_l2 -0.5 is impossible");
  const std::string rep = write("neg.report.json", R"({"representative_block_24_p50_milliseconds": {"sage2": {"attention": 10}, "k": {"attention": 5}},
    "quality_gates": {"k_relative_l2_vs_sage2": -0.6}})");
  require_bad_input("import-report " + rep + " -o " + out, out, "quality_gates.k_relative_l2_vs_sage2: rel_l2 -0.6 is impossible");
  const std::string arr = write("arr.report.json", R"({"representative_block_24_p50_milliseconds": {"sage2": {"attention": 10}}, "sampling_total_seconds": [1, 2]})");
  require_bad_input("import-report " + arr + " -o " + out, out, "sampling_total_seconds: a timing section is an object");
  std::string g = kGate;
  const std::string bound = write("bound.gate.json", g.replace(g.find("\"max\": 0.1"), 10, "\"min\": -5"));
  const std::string ok = write("ok2.measurements.json", meas("0.01"));
  require_bad_input("gate --gate " + bound + " --measurements " + ok + " --json " + out, out,
                    "rules[0].min: min -5 can never fail (rel_l2 is always in [0, inf))");
}

TEST_CASE("reliability CLI: invalid UTF-8 and newlines are escaped in the one error line") {
  const std::string out = write("utf.out.json", "kept\n");
  const std::string ok = write("ok3.measurements.json", meas("0.01"));
  const std::string g = write("utf8.gate.json", std::string(R"({"schema": "touchstone.gate/1", "name": "g)") + "\xff\xfe" + R"(", "rules": []})");
  const CliResult r = run_cli("gate --gate " + g + " --measurements " + ok);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find('\xff') == std::string::npos);
  CHECK(r.err.find("\\xFF") != std::string::npos);
  const std::string nl = write("nl.gate.json", R"({"schema": "touchstone.gate/1", "name": "g", "rules": [{"id": "a", "metric": "rel\nl2\u001b[31m", "max": 1}]})");
  require_bad_input("gate --gate " + nl + " --measurements " + ok + " --json " + out, out, "unknown metric 'rel\\nl2\\x1B[31m'");
}

TEST_CASE("reliability CLI: a gate of 100 000 rules is judged and printed in seconds of CPU") {
  std::string rules;
  for (int i = 0; i < 100000; ++i)
    rules += std::string(i ? "," : "") + R"({"id": "r)" + std::to_string(i) + R"(", "metric": "rel_l2", "max": 0.1})";
  const std::string g = write("many.gate.json", R"({"schema": "touchstone.gate/1", "name": "many", "rules": [)" + rules + "]}");
  const std::string m = write("many.measurements.json", meas("0.01"));
  const double cpu0 = child_cpu_s();
  const CliResult r = run_cli("gate --gate " + g + " --measurements " + m + " --markdown " + scratch_dir() + "/many.md");
  const double cpu = child_cpu_s() - cpu0;
  INFO("CPU " << cpu << " s; stderr: " << r.err.substr(0, 300));
  CHECK(r.code == 0);
  // Quadratic rendering took over a minute of CPU at this size;
  // linear takes a few seconds, and CPU time does not depend on the machine's load.
  CHECK(cpu < 30);
}
