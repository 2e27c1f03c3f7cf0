#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unistd.h>

#include "core/error.hpp"
#include "gates/report.hpp"

namespace ts {

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::string name(".");
  name.append(target.filename().string()).append(".tmp.").append(std::to_string(::getpid()));
  const fs::path tmp = target.parent_path() / name;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path + ": cannot write (cannot create " + tmp.string() + ")");
    out << content;
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw InputError(path + ": cannot write (write failed)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ec2;
    fs::remove(tmp, ec2);
    throw InputError(path + ": cannot write (" + ec.message() + ")");
  }
}

}  // namespace ts
