// The triage page: self-contained HTML (inline CSS and SVG, no scripts),
// heatmaps of every map (gates/triage_heatmap.hpp), the same figures as the text.
#include <sstream>

#include "drivers/triage.hpp"
#include "gates/markup.hpp"
#include "gates/triage_heatmap.hpp"

namespace ts {

std::string render_triage_html(const nlohmann::json& r) {
  std::ostringstream o;
  const std::string title = "touchstone triage " + r["candidate"]["spec"].get<std::string>();
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << markup_escape(title)
    << "</title>\n<style>body{font-family:sans-serif;margin:1.5em;max-width:80em}pre{white-space:pre-wrap;"
       "background:#f6f6f6;padding:.6em}svg{display:block;margin:.4em 0 1.2em}h2{border-bottom:1px solid #ccc}"
       "</style></head><body>\n<h1>" << markup_escape(title) << "</h1>\n";
  o << "<p>fixture <code>" << markup_escape(r["fixture"].get<std::string>()) << "</code>, shape "
    << markup_escape(r["shape"].get<std::string>()) << ", baseline <code>" << markup_escape(r["baseline"]["spec"].get<std::string>())
    << "</code>, exact <code>" << markup_escape(r["exact"]["spec"].get<std::string>()) << "</code></p>\n";
  o << "<h2>Summary</h2>\n<pre>" << markup_escape(render_triage_text(r)) << "</pre>\n";
  auto maps = [&](const nlohmann::json& list, const std::string& who) {
    for (const auto& m : list) {
      o << heatmap_svg(who + ": rel_l2 " + m["name"].get<std::string>(), m["row_axis"].get<std::string>(),
                       m["col_axis"].get<std::string>(), m["rows"], m["cols"], m["rel_l2"], HeatScale::log);
      o << heatmap_svg(who + ": gain " + m["name"].get<std::string>(), m["row_axis"].get<std::string>(),
                       m["col_axis"].get<std::string>(), m["rows"], m["cols"], m["gain"], HeatScale::around_one);
    }
  };
  o << "<h2>Maps vs exact: candidate</h2>\n";
  maps(r["maps"]["candidate"], "candidate");
  o << "<h2>Maps vs exact: baseline (the noise floor)</h2>\n";
  maps(r["maps"]["baseline"], "baseline");
  if (r.contains("against")) {
    o << "<h2>Maps vs exact: against</h2>\n";
    maps(r["against"]["maps_against_vs_exact"], "against");
  }
  if (r["block"].contains("stage_maps")) {
    o << "<h2>Block stage " << markup_escape(r["block"]["stage_maps"]["stage"].get<std::string>()) << "</h2>\n";
    maps(r["block"]["stage_maps"]["maps"], "stage");
  }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace ts
