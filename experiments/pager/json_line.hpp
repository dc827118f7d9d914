// A flat JSON object built field by field and printed as one line: the benchmark's output format.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace bench {

class JsonLine {
 public:
  JsonLine& add(const std::string& key, const std::string& value) {
    field(key) += '"' + value + '"';
    return *this;
  }
  JsonLine& add(const std::string& key, const char* value) { return add(key, std::string(value)); }
  JsonLine& add(const std::string& key, bool value) {
    field(key) += value ? "true" : "false";
    return *this;
  }
  JsonLine& add(const std::string& key, std::uint64_t value) {
    field(key) += std::to_string(value);
    return *this;
  }
  JsonLine& add(const std::string& key, unsigned value) { return add(key, static_cast<std::uint64_t>(value)); }
  JsonLine& add(const std::string& key, double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.6g", value);
    field(key) += text;
    return *this;
  }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string& field(const std::string& key) {
    if (!body_.empty()) body_ += ", ";
    body_ += '"' + key + "\": ";
    return body_;
  }
  std::string body_;
};

}  // namespace bench
