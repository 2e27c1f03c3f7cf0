#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <unistd.h>

#include "core/error.hpp"
#include "core/write_file.hpp"

namespace ts {

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code sec;
  const fs::file_status status = fs::status(target, sec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A device or FIFO (/dev/null, /dev/stdout, a pipe) is written in place:
    // renaming a temporary over it would replace the device node itself.
    if (fs::is_directory(status)) throw InputError(path + ": cannot write: is a folder");
    std::ofstream out(target, std::ios::binary);
    if (!out) throw InputError(path + ": cannot write (cannot open it)");
    out << content;
    out.flush();
    if (!out) throw InputError(path + ": cannot write (write failed: " + std::strerror(errno) + ")");
    return;
  }
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
      throw InputError(path + ": cannot write (write failed: " + std::strerror(errno) + ")");
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
