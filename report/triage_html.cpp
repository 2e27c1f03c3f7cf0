// The triage page: self-contained HTML (inline CSS and SVG, no scripts),
// heatmaps of every map (report/triage_heatmap.hpp), the same figures as the text.
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "report/triage_report.hpp"
#include "report/markup.hpp"
#include "report/triage_heatmap.hpp"

namespace ts {

std::string render_triage_html(const nlohmann::json& r) {
  std::ostringstream o;
  const std::string title = "touchstone triage " + r["candidate"]["spec"].get<std::string>();
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << markup_escape(title)
    << "</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:80em}pre{white-space:pre;overflow-x:auto;"
       "background:#f6f6f6;padding:.6em}svg{display:block;margin:.4em 0 1.2em}div.wide{max-width:100%;overflow-x:auto}h2{border-bottom:1px solid #ccc}"
       "</style></head><body>\n<h1>" << markup_escape(title) << "</h1>\n";
  o << "<p>fixture <code>" << markup_escape(r["fixture"].get<std::string>()) << "</code>, shape "
    << markup_escape(r["shape"].get<std::string>()) << ", baseline <code>" << markup_escape(r["baseline"]["spec"].get<std::string>())
    << "</code>, exact <code>" << markup_escape(r["exact"]["spec"].get<std::string>()) << "</code></p>\n";
  o << "<h2>Summary</h2>\n<pre>" << markup_escape(render_triage_text(r)) << "</pre>\n";
  // The maps compared on the page (the candidate's, the baseline's and
  // --against's, each against exact) share one colour scale per map and
  // figure; the block stage's maps are a comparison of their own.
  using Scales = std::map<std::string, std::pair<HeatRange, HeatRange>>;  // map name -> (rel_l2, gain)
  auto scales_of = [](const std::vector<std::pair<const nlohmann::json*, std::string>>& lists) {
    Scales s;
    std::string who;  // "the candidate's, the baseline's and against's"
    for (size_t i = 0; i < lists.size(); ++i)
      who += (i == 0 ? "" : i + 1 == lists.size() ? " and " : ", ") + lists[i].second;
    for (const auto& [list, name] : lists)
      for (const auto& m : *list) {
        const std::string n = m["name"].get<std::string>();
        const std::string shared = lists.size() > 1 ? who + " " + n + " maps" : "";
        auto it = s.try_emplace(n, HeatRange(HeatScale::log, shared), HeatRange(HeatScale::around_one, shared)).first;
        it->second.first.add(m["rel_l2"]);
        it->second.second.add(m["gain"]);
      }
    return s;
  };
  auto maps = [&](const nlohmann::json& list, const std::string& who, const Scales& scales) {
    for (const auto& m : list) {
      const auto& sc = scales.at(m["name"].get<std::string>());
      // A map wider than the window scrolls in its own box (a frame x tile map of block24 is
      // wider than any screen); the page's text keeps its width.
      o << "<div class=\"wide\">"
        << heatmap_svg(who + ": rel_l2 " + m["name"].get<std::string>(), m["row_axis"].get<std::string>(),
                       m["col_axis"].get<std::string>(), m["rows"], m["cols"], m["rel_l2"], sc.first)
        << "</div>\n<div class=\"wide\">"
        << heatmap_svg(who + ": gain " + m["name"].get<std::string>(), m["row_axis"].get<std::string>(),
                       m["col_axis"].get<std::string>(), m["rows"], m["cols"], m["gain"], sc.second)
        << "</div>\n";
    }
  };
  std::vector<std::pair<const nlohmann::json*, std::string>> compared = {{&r["maps"]["candidate"], "the candidate's"},
                                                                        {&r["maps"]["baseline"], "the baseline's"}};
  if (r.contains("against")) compared.emplace_back(&r["against"]["maps_against_vs_exact"], "against's");
  const Scales vs_exact = scales_of(compared);
  o << "<h2>Maps vs exact: candidate</h2>\n";
  maps(r["maps"]["candidate"], "candidate", vs_exact);
  o << "<h2>Maps vs exact: baseline (the noise floor)</h2>\n";
  maps(r["maps"]["baseline"], "baseline", vs_exact);
  if (r.contains("against")) {
    o << "<h2>Maps vs exact: against</h2>\n";
    maps(r["against"]["maps_against_vs_exact"], "against", vs_exact);
  }
  if (r["block"].contains("stage_maps")) {
    const auto& sm = r["block"]["stage_maps"];
    o << "<h2>Block stage " << markup_escape(sm["stage"].get<std::string>()) << "</h2>\n";
    maps(sm["maps"], "stage", scales_of({{&sm["maps"], "the stage's"}}));
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace ts
