// touchstone fixture extract F --heads LIST --tokens A:B -o SMALL: a slice of a fixture for a bug report.
#include <iostream>
#include <memory>

#include "drivers/fixture_extract.hpp"
#include "tools/command.hpp"

namespace cmd_fixture_extract {

struct Opts {
  std::string in, out, heads, tokens;
  ts::ExtractOptions e;
};

ts::cli::Registration reg{
    "fixture extract",
    "Write a small fixture of some heads and a token range of F that still shows a failure (docs/triage.md)",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->in, "fixture file to slice")->required();
      app.add_option("--heads", o->heads, "heads to keep, comma-separated (default: every head)");
      app.add_option("--tokens", o->tokens, "packed tokens A:B to keep, [A, B): whole latent frames of a video "
                                            "segment, any part of a conditioning one (default: all)");
      app.add_option("--with", o->e.with, "a backend spec run on the full sequence of the kept heads and stored "
                                          "sliced (repeatable; the candidate and baseline of a triage)");
      app.add_option("--exact", o->e.exact, "how /outputs/exact is computed when F has none")->capture_default_str();
      ts::cli::mark_output(app.add_option("-o,--output", o->out, "the slice (HDF5)")->required(), false);
      app.add_flag("--force", o->e.force, "replace an existing file at -o");
      ts::cli::set_example(app, "touchstone fixture extract ci.h5 --heads 2 --tokens 192:384 --with sol:tau=1.3 -o small.h5");
      return [o]() -> int {
        if (!o->heads.empty()) o->e.heads = ts::parse_head_list(o->heads);
        if (!o->tokens.empty()) {
          const auto r = ts::parse_token_range(o->tokens);
          o->e.token_begin = r.first;
          o->e.token_end = r.second;
        }
        std::cout << ts::extract_fixture(o->in, o->out, o->e) << "\n";
        return 0;
      };
    }};

}  // namespace cmd_fixture_extract
