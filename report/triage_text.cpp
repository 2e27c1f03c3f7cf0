// The terminal rendering of a triage report (drivers/triage.hpp); every
// figure comes from the report's JSON, so text, JSON and HTML never disagree.
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <sstream>

#include "report/triage_report.hpp"
#include "report/terminal.hpp"

namespace ts {
namespace {

std::string tt_f(const nlohmann::json& v, int digits = 4) {
  if (v.is_number()) {
    char b[40];
    std::snprintf(b, sizeof b, "%.*g", digits, v.get<double>());
    return b;
  }
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "undefined";
  return v.dump();
}

std::string tt_coords(const nlohmann::json& e) {
  std::string s = "token " + tt_f(e["token"]) + " head " + tt_f(e["head"]) + " ch " + tt_f(e["channel"]) + " " +
                  e.value("segment", std::string("?"));
  if (e.contains("t")) s += " (t " + tt_f(e["t"]) + ", h " + tt_f(e["h"]) + ", w " + tt_f(e["w"]) + ")";
  return s;
}

void tt_cells(std::ostringstream& o, const nlohmann::json& ranked, size_t n) {
  for (auto it = ranked.begin(); it != ranked.end(); ++it) {
    o << "  " << it.key() << " (ranked by " << it.value()["ranked_by"].get<std::string>() << "):\n";
    size_t k = 0;
    for (const auto& c : it.value()["worst"]) {
      if (k++ >= n) break;
      o << "    " << c["row"].get<std::string>() << ", " << c["col"].get<std::string>() << ": rel_l2 " << tt_f(c["rel_l2"])
        << ", gain " << tt_f(c["gain"]);
      if (c.contains("floor_rel_l2"))
        o << "; baseline " << tt_f(c["floor_rel_l2"]) << ", ratio " << tt_f(c["ratio_to_floor"], 3);
      o << "\n";
    }
    const auto& g = it.value()["worst_gain"];
    if (!g.empty())
      o << "    largest |gain - 1|: " << g[0]["row"].get<std::string>() << ", " << g[0]["col"].get<std::string>()
        << ": gain " << tt_f(g[0]["gain"]) << "\n";
  }
}

}  // namespace

std::string render_triage_text(const nlohmann::json& r) {
  std::ostringstream o;
  o << "triage " << r["fixture"].get<std::string>() << " " << r["shape"].get<std::string>() << ": candidate "
    << r["candidate"]["spec"].get<std::string>() << ", baseline " << r["baseline"]["spec"].get<std::string>()
    << ", exact " << r["exact"]["spec"].get<std::string>() << "\n";
  const auto& m = r["metrics"];
  o << "vs exact: candidate rel_l2 " << tt_f(m["candidate_vs_exact"]["rel_l2"]) << ", gain "
    << tt_f(m["candidate_vs_exact"]["gain"]) << "; baseline rel_l2 " << tt_f(m["baseline_vs_exact"]["rel_l2"])
    << "; candidate vs baseline " << tt_f(m["candidate_vs_baseline"]["rel_l2"]) << "\n";
  const auto& wg = r["worst_groups_vs_exact"]["candidate"];
  for (const char* k : {"rel_l2_worst_head", "rel_l2_worst_qblock", "rel_l2_worst_frame", "gain_error_worst_head"})
    if (wg.contains(k)) {
      const auto& g = wg[k];
      // The conditioning tokens are one group without an index (as the maps' "cond" column).
      if (g["kind"] == "cond") o << "  " << k << ": the conditioning tokens";
      else o << "  " << k << ": " << g["kind"].get<std::string>() << " " << tt_f(g["index"]);
      if (g.contains("tokens")) o << " (tokens " << tt_f(g["tokens"][0]) << ".." << tt_f(g["tokens"][1]) << ")";
      o << ", rel_l2 " << tt_f(g["rel_l2"]) << ", gain " << tt_f(g["gain"]) << "\n";
    }

  const auto& nf = r["nonfinite"];
  o << "\nnon-finite values in the candidate: " << tt_f(nf["count"]) << "\n";
  for (const auto& run : nf["runs"]) {
    o << "  head " << tt_f(run["head"]) << ", tokens " << tt_f(run["tokens"][0]) << ".." << tt_f(run["tokens"][1]) << ": "
      << tt_f(run["elements"]) << " elements, channels " << run["channels"].dump() << "\n";
  }
  for (const auto& p : nf["positions"]) o << "    " << tt_coords(p) << " = " << tt_f(p["candidate"]) << "\n";

  o << "\nworst elements by |candidate - exact|:\n";
  for (const auto& e : r["worst_elements"])
    o << "  " << tt_coords(e) << ": |err| " << tt_f(e["abs_error"]) << ", candidate " << tt_f(e["candidate"], 6) << ", exact "
      << tt_f(e["exact"], 6) << ", baseline " << tt_f(e["baseline"], 6) << "\n";

  o << "\nworst cells of the maps vs exact (the baseline's own cell is the noise floor):\n";
  tt_cells(o, r["ranked_cells"], 3);

  if (r.contains("against")) {
    const auto& a = r["against"];
    o << "\nA/B against " << a["spec"].get<std::string>() << ": " << tt_f(a["differing_elements"])
      << " elements differ; rel_l2 candidate vs against " << tt_f(a["candidate_vs_against"]["rel_l2"])
      << "; vs exact: candidate " << tt_f(m["candidate_vs_exact"]["rel_l2"]) << ", against "
      << tt_f(a["against_vs_exact"]["rel_l2"]) << "\n";
    for (auto it = a["closer_to_exact"].begin(); it != a["closer_to_exact"].end(); ++it)
      o << "  " << it.key() << ": candidate closer in " << tt_f(it.value()["candidate_closer"]) << " cells, against in "
        << tt_f(it.value()["against_closer"]) << ", equal in " << tt_f(it.value()["equal"]) << "\n";
    size_t k = 0;
    for (const auto& e : a["worst_differences"]) {
      if (k++ >= 5) break;
      o << "  " << tt_coords(e) << ": candidate " << tt_f(e["candidate"], 6) << ", against " << tt_f(e["against"], 6)
        << ", exact " << tt_f(e["exact"], 6) << "\n";
    }
    tt_cells(o, a["ranked_differences"], 2);
  }

  const auto& d = r["decomposition"];
  o << "\ndecomposition: ";
  if (d.contains("skipped")) {
    o << "skipped: " << d["skipped"].get<std::string>() << "\n";
  } else if (d.contains("chain")) {
    const auto& c = d["chain"];
    o << d["emulation"].get<std::string>() << "\n  rule: " << c["rule"].get<std::string>() << "\n";
    o << "  total rel_l2 vs exact " << tt_f(c["total_rel_l2"]) << "\n";
    for (const auto& p : c["parts"])
      o << "  " << p["name"].get<std::string>() << ": rel_l2 " << tt_f(p["rel_l2"]) << ", share " << tt_f(p["share"]) << "\n";
    for (const auto& x : c["cross_terms"])
      o << "  cross 2<" << x["a"].get<std::string>().substr(0, x["a"].get<std::string>().find(' ')) << ", "
        << x["b"].get<std::string>().substr(0, x["b"].get<std::string>().find(' ')) << "> / ||exact||^2 = " << tt_f(x["value"]) << "\n";
    const auto& id = c["identity"];
    o << "  check: sum of squares + cross " << tt_f(id["sum_of_squares_plus_cross"], 8) << " = ||e_total||^2 "
      << tt_f(id["total_squared"], 8) << "; ||sum e_i - e_total|| / ||e_total|| " << tt_f(id["residual_rel"], 3)
      << "; shares sum to " << tt_f(id["share_sum"], 8) << "\n";
    if (d.contains("routing")) {
      const auto& rt = d["routing"];
      o << "  routing: tau " << tt_f(rt["tau"]) << ", density " << tt_f(rt["density"]) << ", mean missed softmax mass "
        << tt_f(rt["mean_missed_mass"]) << "; correlation over head x query block of missed mass with the routing "
        << "error " << tt_f(rt["correlation_missed_mass_vs_routing_error"]) << ", with the total error "
        << tt_f(rt["correlation_missed_mass_vs_total_error"]) << "\n";
    }
  } else if (d.contains("one_off")) {
    const auto& c = d["one_off"];
    o << d["emulation"].get<std::string>() << "\n  rule: " << c["rule"].get<std::string>() << "\n";
    o << "  full rel_l2 vs exact " << tt_f(c["full_rel_l2"]) << "; floor (every quantiser off) rel_l2 "
      << tt_f(c["floor"]["rel_l2"]) << ", share " << tt_f(c["floor"]["share"]) << "\n";
    for (const auto& p : c["parts"])
      o << "  " << p["name"].get<std::string>() << ": rel_l2 " << tt_f(p["rel_l2"]) << ", share " << tt_f(p["share"])
        << " (without it: " << tt_f(p["rel_l2_without"]) << " vs exact)\n";
    o << "  interaction: rel_l2 " << tt_f(c["interaction"]["rel_l2"]) << ", share " << tt_f(c["interaction"]["share"]) << "\n";
    if (d.contains("kernel_vs_emulation"))
      o << "  the stored kernel vs its emulation: rel_l2 " << tt_f(d["kernel_vs_emulation"]["rel_l2"]) << "\n";
  }

  const auto& b = r["block"];
  o << "\nblock: ";
  if (b.contains("skipped")) {
    o << "skipped: " << b["skipped"].get<std::string>() << "\n";
  } else {
    o << b["candidate_set"].get<std::string>() << " vs " << b["baseline_set"].get<std::string>()
      << "; first stage out of bounds: "
      << (b["first_failing"].get<std::string>().empty() ? std::string("none") : b["first_failing"].get<std::string>())
      << "\n";
    for (const auto& s : b["chain"]) {
      o << "  " << s["stage"].get<std::string>() << ": " << s["status"].get<std::string>();
      if (s.contains("rel_l2")) o << ", rel_l2 " << tt_f(s["rel_l2"]);
      o << "\n";
      if (s.contains("failing"))
        for (const auto& l : s["failing"]) o << "    " << l.get<std::string>() << "\n";
    }
    if (b.contains("stage_maps")) {
      o << "  maps of " << b["stage_maps"]["stage"].get<std::string>() << " against "
        << b["stage_maps"]["against"].get<std::string>() << ":\n";
      tt_cells(o, b["stage_maps"]["ranked"], 2);
    }
  }
  o << "\nrepro: " << r["repro"]["command"].get<std::string>() << "\nslice: " << r["repro"]["extract"].get<std::string>()
    << "\n  then: " << r["repro"]["on_slice"].get<std::string>() << "\n";
  // Fitted to the terminal as the gate's report is: long lines broken at
  // spaces, continuation indented under their own line, commands with a
  // shell continuation so that they still paste.
  const int width = terminal_width();
  std::istringstream in(o.str());
  std::string fitted;
  for (std::string line; std::getline(in, line);) {
    const size_t lead = std::min(line.find_first_not_of(' '), line.size());
    const bool command = line.rfind("repro: ", 0) == 0 || line.rfind("slice: ", 0) == 0 || line.rfind("  then: ", 0) == 0;
    fitted += wrap_for_terminal(line, width, static_cast<int>(lead) + 4, command);
  }
  return fitted;
}

}  // namespace ts
