#include "options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace workloads {

Options::Options(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void Options::add(const std::string& name, const std::string& fallback, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{fallback, help, false};
}

void Options::add_flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{"", help, true};
}

const Options::Spec& Options::spec(const std::string& name) const {
  auto found = specs_.find(name);
  if (found == specs_.end()) throw std::logic_error("option --" + name + " was never declared");
  return found->second;
}

bool Options::parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << usage();
      return false;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "' (options start with --)");
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto found = specs_.find(name);
    if (found == specs_.end()) throw UsageError("unknown option --" + name);
    if (found->second.is_flag) {
      if (has_value) throw UsageError("option --" + name + " takes no value");
      values_[name] = "1";
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0) {
        throw UsageError("option --" + name + " needs a value");
      }
      value = argv[++i];
    }
    values_[name] = value;
  }
  return true;
}

std::string Options::text(const std::string& name) const {
  const Spec& s = spec(name);
  auto given = values_.find(name);
  return given == values_.end() ? s.fallback : given->second;
}

std::uint64_t Options::integer(const std::string& name, std::uint64_t min, std::uint64_t max) const {
  const std::string value = text(name);
  errno = 0;
  char* end = nullptr;
  const unsigned long long parsed = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || value[0] == '-' || *end != '\0' || errno == ERANGE || parsed < min || parsed > max) {
    std::ostringstream message;
    message << "option --" << name << " must be an integer in [" << min << ", " << max << "], got '" << value << "'";
    throw UsageError(message.str());
  }
  return parsed;
}

double Options::real(const std::string& name, double min, double max) const {
  const std::string value = text(name);
  char* end = nullptr;
  const double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(parsed) || parsed < min || parsed > max) {
    std::ostringstream message;
    message << "option --" << name << " must be a number in [" << min << ", " << max << "], got '" << value << "'";
    throw UsageError(message.str());
  }
  return parsed;
}

std::string Options::choice(const std::string& name, const std::vector<std::string>& choices) const {
  const std::string value = text(name);
  std::string allowed;
  for (const auto& c : choices) {
    if (c == value) return value;
    allowed += (allowed.empty() ? "" : ", ") + c;
  }
  throw UsageError("option --" + name + " must be one of " + allowed + ", got '" + value + "'");
}

bool Options::flag(const std::string& name) const {
  spec(name);
  return values_.count(name) != 0;
}

std::string Options::usage() const {
  std::ostringstream out;
  out << "usage: " << program_ << " [options]\n" << summary_ << "\n\noptions:\n";
  for (const auto& name : order_) {
    const Spec& s = specs_.at(name);
    std::string left = "--" + name + (s.is_flag ? "" : " VALUE");
    out << "  " << left << std::string(left.size() < 24 ? 24 - left.size() : 1, ' ') << s.help;
    if (!s.is_flag && !s.fallback.empty()) out << " (default " << s.fallback << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace workloads
