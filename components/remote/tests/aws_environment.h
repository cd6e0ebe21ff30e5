// The AWS variables (and HOME) cleared for a test and put back after it, for the tests of
// credentials, regions and S3.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace shard_test {

// Clears every variable the resolvers read and puts them back afterwards, so a developer's
// own AWS settings neither leak into a test nor get lost by one.
class AwsEnvironment {
 public:
  AwsEnvironment() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  ~AwsEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }
  void unset(const char* name) { unsetenv(name); }

 private:
  static constexpr const char* kNames[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
      "AWS_PROFILE",       "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE",
      "AWS_REGION",        "AWS_DEFAULT_REGION",    "AWS_ENDPOINT_URL",
      "AWS_ENDPOINT_URL_S3", "HOME"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

}  // namespace shard_test
