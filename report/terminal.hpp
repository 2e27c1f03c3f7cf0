#pragma once
// Text for a terminal: its width, and lines wrapped to it (every terminal report, and the
// CLI's help and listings around them).
#include <string>

#include "core/terminal_defaults.hpp"

namespace ts {

// COLUMNS when it holds a positive number, else the width of the terminal on
// stdout, else kDefaultTerminalWidth (a pipe, a file, a CI log); never less
// than kMinTerminalWidth.
int terminal_width();
// `text` broken at spaces into lines of at most `width` columns, continuation
// lines indented by `indent` (the terminal report's wrapping, for the other
// lines a command prints around it).
// With `shell`, broken lines end in a backslash (a command that still pastes).
std::string wrap_for_terminal(const std::string& text, int width, int indent = 4, bool shell = false);
// Each line of `text` wrapped as above, its continuations indented 4 past the line's own
// leading spaces (listings: fixture inspect, tables).
std::string wrap_each_line(const std::string& text, int width);

}  // namespace ts
