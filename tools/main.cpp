// touchstone: accuracy gates, fixtures and triage for attention and block kernels.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <iostream>
#include <memory>
#include <sstream>
#include <vector>

#include "core/error.hpp"
#include "core/phase.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"
#include "report/terminal.hpp"
#include "tools/command.hpp"

namespace ts::cli {
namespace {

struct Entry {
  std::string path, help;
  Setup setup;
};

std::vector<Entry>& entries() {
  static std::vector<Entry> e;
  return e;
}

// CLI11 writes an option's description from one column on and never wraps it: a long one is
// wrapped under that column; any other long line under its own indent plus 4.
std::string fit_help(const std::string& text, int width) {
  std::ostringstream out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (static_cast<int>(line.size()) <= width) {
      out << line << "\n";
      continue;
    }
    const size_t lead = line.find_first_not_of(' ');
    const size_t gap = lead >= 8 ? lead : line.find("  ", lead);
    const size_t col = gap == std::string::npos ? gap : line.find_first_not_of(' ', gap);
    if (col == std::string::npos || col > 40) {
      out << ts::wrap_each_line(line, width);
      continue;
    }
    const std::string desc = ts::wrap_for_terminal(line.substr(col), width - static_cast<int>(col), 0);
    std::istringstream parts(desc);
    bool first = true;
    for (std::string part; std::getline(parts, part); first = false)
      out << (first ? line.substr(0, col) : std::string(col, ' ')) << part << "\n";
  }
  return out.str();
}

}  // namespace

Registration::Registration(const std::string& path, const std::string& help, Setup setup) {
  entries().push_back({path, help, std::move(setup)});
}

}  // namespace ts::cli

int main(int argc, char** argv) {
  using namespace ts::cli;
  CLI::App app{"touchstone: numerical-accuracy gates, fixtures and triage for attention and "
               "transformer-block kernels of video diffusion models",
               "touchstone"};
  app.set_version_flag("--version", std::string(TOUCHSTONE_VERSION));
  app.require_subcommand(1);

  // Parents first ("fixture" before "fixture synth"), so sort by depth then name.
  auto sorted = entries();
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), ' '); };
    if (depth(a.path) != depth(b.path)) return depth(a.path) < depth(b.path);
    return a.path < b.path;
  });
  std::map<std::string, CLI::App*> apps;
  std::map<CLI::App*, Action> actions;
  for (auto& e : sorted) {
    const auto sp = e.path.rfind(' ');
    CLI::App* parent = &app;
    std::string leaf = e.path;
    if (sp != std::string::npos) {
      const std::string parent_path = e.path.substr(0, sp);
      leaf = e.path.substr(sp + 1);
      auto it = apps.find(parent_path);
      if (it == apps.end()) {
        CLI::App* p = app.add_subcommand(parent_path, parent_path + " commands");
        p->require_subcommand(1);
        it = apps.emplace(parent_path, p).first;
      }
      parent = it->second;
    }
    CLI::App* sub = parent->add_subcommand(leaf, e.help);
    apps[e.path] = sub;
    if (e.setup) actions[sub] = e.setup(*sub);
  }

  // A word where a command belongs that is none, or no word there: say so, with the commands
  // (CLI11 says "A subcommand is required", or takes the word for an extra argument).
  CLI::App* level = &app;
  for (int i = 1;; ++i) {
    auto subs = level->get_subcommands([](CLI::App*) { return true; });
    // Only where a command is required: batch PLAN also has a subcommand (merge).
    if (subs.empty() || level->get_require_subcommand_min() == 0 || (i < argc && argv[i][0] == '-')) break;
    CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (CLI::App* s : subs) {
      if (i < argc && s->get_name() == argv[i]) next = s;
      if (s->get_name().rfind("__", 0) != 0) names.push_back(s->get_name());  // internal ones unlisted
    }
    if (next) {
      level = next;
      continue;
    }
    const std::string where = level == &app ? "touchstone" : "touchstone " + level->get_name();
    if (i >= argc)
      std::fprintf(stderr, "touchstone: %s needs a command (%s; see --help)\n", where.c_str(),
                   ts::join_names(names).c_str());
    else
      std::fprintf(stderr, "touchstone: unknown command '%s' for %s (%scommands: %s; see --help)\n",
                   ts::printable(argv[i]).c_str(), where.c_str(), ts::did_you_mean(argv[i], names).c_str(),
                   ts::join_names(names).c_str());
    return ts::kBadInput;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream help;
    const int rc = app.exit(e, help);
    std::cout << fit_help(help.str(), ts::terminal_width());
    return rc;
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream help;
    const int rc = app.exit(e, help);
    std::cout << fit_help(help.str(), ts::terminal_width());
    return rc;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the flag, and the usual exit code for bad input.
    std::fprintf(stderr, "touchstone: %s (see --help)\n", ts::printable(e.what()).c_str());
    return ts::kBadInput;
  }

  // The deepest parsed subcommand owns the action.
  CLI::App* cur = &app;
  while (true) {
    auto subs = cur->get_subcommands();
    if (subs.empty()) break;
    cur = subs.front();
  }
  auto it = actions.find(cur);
  if (it == actions.end()) {
    std::fprintf(stderr, "touchstone: '%s' needs a subcommand (see --help)\n",
                 cur->get_name().c_str());
    return ts::kBadInput;
  }
  try {
    ts::cli::check_outputs(*cur);
    std::optional<ts::Phase> whole(std::in_place, "command " + cur->get_name());
    const int rc = it->second();
    whole.reset();
    // Results that never reached stdout (a full disk, a closed pipe) are no
    // results: say so rather than exit as if they had been printed.
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout)
      throw ts::InputError(std::string("cannot write the results to stdout: ") + std::strerror(errno));
    return rc;
  } catch (const ts::InputError& e) {
    std::fprintf(stderr, "touchstone: error: %s\n", ts::printable(e.what()).c_str());
    return ts::kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "touchstone: internal error: %s\n", ts::printable(e.what()).c_str());
    return ts::kInternal;
  }
}
