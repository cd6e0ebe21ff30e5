// Running PyTorch's own code as the reference for a test: the project's Python (MPLOADER_PYTHON,
// cmake/python.cmake), whether it can import torch, and a command's output.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

namespace testing_python {

// Runs a shell command; its stdout, or nullopt when it exits non-zero.
inline std::optional<std::string> run(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  return pclose(pipe) == 0 ? std::optional<std::string>(out) : std::nullopt;
}

// Why `python` cannot serve as the torch reference here, or nullopt when it can.
inline std::optional<std::string> torch_missing(const std::string& python) {
  if (access(python.c_str(), X_OK) != 0) {
    return python + " is not there (scripts/install-deps makes .venv with torch)";
  }
  if (!run(python + " -c 'import torch' 2>/dev/null")) {
    return python + " cannot import torch (scripts/install-deps makes .venv)";
  }
  return std::nullopt;
}

// Runs `command` with `input` on its standard input (through a temporary file, removed
// after); its stdout, or nullopt when it exits non-zero or the file cannot be made.
inline std::optional<std::string> run_with_input(const std::string& command,
                                                 const std::string& input) {
  char path[] = "/tmp/mploader-reference-input-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::nullopt;
  close(fd);
  std::ofstream(path) << input;
  auto out = run(command + " < " + path);
  unlink(path);
  return out;
}

}  // namespace testing_python
