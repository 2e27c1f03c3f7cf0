#pragma once
// The width of text off a terminal, one table for the C++ writers (report/terminal.hpp) and
// Python's (python/touchstone/terminal.py, which reads them through `touchstone tables`).
namespace ts {

inline constexpr int kDefaultTerminalWidth = 100;  // a pipe, a file, a CI log
inline constexpr int kMinTerminalWidth = 40;       // never narrower, whatever COLUMNS says

}  // namespace ts
