// test-only: running the CLI and the converter as shell commands
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include <sys/wait.h>

namespace mb::test {

// `s` as one single-quoted shell word
inline std::string quote(const std::string & s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// runs `cmd` through the shell, stdout discarded, stderr written to `log` (appended when `append`);
// the exit code, or -1 when the command did not exit normally
inline int run(const std::string & cmd, const std::string & log, bool append = false) {
    const int st = std::system((cmd + " >/dev/null 2>" + (append ? ">" : "") + quote(log)).c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// the whole file, "" when it cannot be read
inline std::string slurp(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
}

} // namespace mb::test
