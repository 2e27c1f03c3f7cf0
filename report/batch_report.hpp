#pragma once
// The writers of `touchstone batch` (docs/batch.md): its report as JSON (schema
// touchstone.batch-report/1), JUnit (each run's suite as `gate` writes it, and one of the
// cases not judged), Markdown, HTML and terminal text (each run as `gate` prints it, then the
// summary). drivers/batch_run.hpp assembles the report they write.
#include <string>

#include "drivers/batch_run.hpp"

namespace ts {

std::string batch_json(const BatchReport& report);
std::string batch_junit(const BatchReport& report);
std::string batch_markdown(const BatchReport& report);
std::string batch_html(const BatchReport& report);
std::string batch_text(const BatchReport& report);

}  // namespace ts
