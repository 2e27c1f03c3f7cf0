#pragma once
// Writing a whole file at once (reports, batch results, imported measurements).
#include <string>

namespace ts {

// Writes to a temporary file beside `path` and renames it over `path`, so a
// failed write never leaves a truncated report. InputError naming the path.
void write_file_atomic(const std::string& path, const std::string& content);

}  // namespace ts
