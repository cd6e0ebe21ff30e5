// resolve_aws_credentials and resolve_aws_region: the environment, then the shared files'
// INI sections (aws_credentials.h).
#include "remote/aws_credentials.h"

#include "remote/text.h"

#include <mploader/errors.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

namespace mploader::remote::detail {
namespace {

using Sections = std::map<std::string, std::map<std::string, std::string>>;

std::string env_or(const char* name, const std::string& fallback = "") {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// "[name]" sections of "key = value" lines; comments start with '#' or ';'.
Sections read_ini(const std::string& path) {
  Sections out;
  std::ifstream in(path);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    line = trimmed(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = trimmed(line.substr(1, line.size() - 2));
      out[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq != std::string::npos && !section.empty()) {
      out[section][trimmed(line.substr(0, eq))] = trimmed(line.substr(eq + 1));
    }
  }
  return out;
}

std::string home_file(const char* variable, const char* name) {
  const std::string set = env_or(variable);
  return !set.empty() ? set : env_or("HOME", "/root") + "/.aws/" + name;
}

std::string profile_name(const std::string& option) {
  return !option.empty() ? option : env_or("AWS_PROFILE", "default");
}

}  // namespace

AwsCredentials resolve_aws_credentials(const std::string& profile_option) {
  AwsCredentials c;
  c.access_key_id = env_or("AWS_ACCESS_KEY_ID");
  if (!c.access_key_id.empty()) {
    c.secret_access_key = env_or("AWS_SECRET_ACCESS_KEY");
    c.session_token = env_or("AWS_SESSION_TOKEN");
    c.source = "the environment (AWS_ACCESS_KEY_ID)";
    if (c.secret_access_key.empty()) {
      throw OptionError("AWS_SECRET_ACCESS_KEY",
                        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both, or "
                        "neither to use ~/.aws/credentials");
    }
    return c;
  }
  const std::string file = home_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
  const std::string profile = profile_name(profile_option);
  const Sections sections = read_ini(file);
  const auto it = sections.find(profile);
  if (it == sections.end()) {
    std::string names;
    for (const auto& [name, keys] : sections) names += (names.empty() ? "" : ", ") + name;
    throw OptionError(
        "AWS_PROFILE",
        "no AWS credentials: AWS_ACCESS_KEY_ID is not set and \"" + file + "\" has no profile \"" +
        profile + "\"" + (names.empty() ? " (it is missing or empty)" : " (its profiles: " +
        names + ")") + ": set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE "
        "(RemoteOptions::aws_profile) to a profile of that file");
  }
  const auto& keys = it->second;
  auto value = [&](const char* key) {
    const auto k = keys.find(key);
    return k == keys.end() ? std::string() : k->second;
  };
  c.access_key_id = value("aws_access_key_id");
  c.secret_access_key = value("aws_secret_access_key");
  c.session_token = value("aws_session_token");
  c.source = "profile \"" + profile + "\" of " + file;
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    throw OptionError("AWS_PROFILE", "the " + c.source + " lacks aws_access_key_id or "
                                     "aws_secret_access_key: add both to it");
  }
  return c;
}

std::string resolve_aws_region(const std::string& region_option) {
  if (!region_option.empty()) return region_option;
  for (const char* name : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    const std::string set = env_or(name);
    if (!set.empty()) return set;
  }
  const std::string profile = profile_name("");
  const Sections config = read_ini(home_file("AWS_CONFIG_FILE", "config"));
  const auto it = config.find(profile == "default" ? profile : "profile " + profile);
  if (it != config.end()) {
    const auto region = it->second.find("region");
    if (region != it->second.end() && !region->second.empty()) return region->second;
  }
  return "us-east-1";
}

}  // namespace mploader::remote::detail
