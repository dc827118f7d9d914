// Command-line options of a workload: declared with a default and a help line, parsed strictly, so a
// mistyped or malformed option is an error that names it instead of a silently different run.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace workloads {

// Bad command-line input; main() prints it with the usage and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Options {
 public:
  Options(std::string program, std::string summary);

  // An option taking a value, "--name VALUE" or "--name=VALUE".
  void add(const std::string& name, const std::string& fallback, const std::string& help);
  // An option without a value, false unless given.
  void add_flag(const std::string& name, const std::string& help);

  // Throws UsageError for an unknown option or a missing value. Returns false when --help was asked
  // (the usage is then printed on stdout).
  bool parse(int argc, char** argv);

  std::string text(const std::string& name) const;
  // A non-negative integer within [min, max]; throws UsageError naming the option otherwise.
  std::uint64_t integer(const std::string& name, std::uint64_t min = 0, std::uint64_t max = UINT64_MAX) const;
  // A number within [min, max].
  double real(const std::string& name, double min, double max) const;
  // One of `choices`.
  std::string choice(const std::string& name, const std::vector<std::string>& choices) const;
  bool flag(const std::string& name) const;

  const std::string& program() const { return program_; }
  std::string usage() const;

 private:
  struct Spec {
    std::string fallback;
    std::string help;
    bool is_flag;
  };
  const Spec& spec(const std::string& name) const;

  std::string program_;
  std::string summary_;
  std::vector<std::string> order_;
  std::map<std::string, Spec> specs_;
  std::map<std::string, std::string> values_;
};

}  // namespace workloads
