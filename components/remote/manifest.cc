// The manifest's parser and writer, and the lookup of a dataset's URLs in it (manifest.h).
#include "remote/manifest.h"

#include <mploader/errors.h>

#include "remote/http_transport.h"
#include "remote/url.h"
#include "util/fnv1a.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <optional>
#include <fstream>
#include <sstream>
#include <thread>

namespace mploader::remote::detail {
namespace {

using nlohmann::json;

const char* const kFormat = "mploader-manifest";
const char* const kDefaultName = "mploader-manifest.json";

[[noreturn]] void bad(const std::string& source, const std::string& why) {
  throw OptionError("manifest", "the manifest \"" + source + "\" " + why +
                                    ": write it again with mploader-manifest");
}

int64_t count_field(const json& entry, const char* field, const std::string& source, size_t i) {
  const auto it = entry.find(field);
  if (it == entry.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    bad(source, "has shard " + std::to_string(i) + " without a whole, non-negative \"" + field +
                    "\"");
  }
  return it->get<int64_t>();
}

std::string checksum_field(const json& entry, const std::string& source, size_t i) {
  const auto it = entry.find("sha256");
  if (it == entry.end()) return {};
  const std::string hex = it->is_string() ? it->get<std::string>() : "";
  bool ok = hex.size() == 64;
  for (char c : hex) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) bad(source, "has shard " + std::to_string(i) + " whose sha256 is not 64 lowercase "
                       "hex digits");
  return hex;
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& source) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) bad(source, "is not JSON");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_string() || format->get<std::string>() != kFormat) {
    bad(source, "has no \"format\": \"mploader-manifest\"");
  }
  if (!j.contains("version") || j["version"] != 1) {
    bad(source, "is of a version this mploader cannot read (it reads version 1)");
  }
  const auto shards = j.find("shards");
  if (shards == j.end() || !shards->is_array()) bad(source, "has no \"shards\" list");
  Manifest m;
  m.source = source;
  for (size_t i = 0; i < shards->size(); ++i) {
    const json& e = (*shards)[i];
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        e["name"].get<std::string>().empty()) {
      bad(source, "has shard " + std::to_string(i) + " without a \"name\"");
    }
    ManifestEntry entry{e["name"].get<std::string>(), count_field(e, "bytes", source, i),
                        count_field(e, "samples", source, i), checksum_field(e, source, i)};
    // A tar sample is at least one member: a 512-byte header.
    if (entry.samples > entry.bytes / 512) {
      bad(source, "counts " + std::to_string(entry.samples) + " samples in shard \"" +
                      entry.name + "\" of " + std::to_string(entry.bytes) + " bytes, more than "
                      "one per 512-byte tar header");
    }
    if (!m.by_name.emplace(entry.name, m.shards.size()).second) {
      bad(source, "lists \"" + entry.name + "\" twice");
    }
    m.shards.push_back(std::move(entry));
  }
  return m;
}

std::string manifest_text(const std::vector<ManifestEntry>& shards) {
  std::ostringstream out;
  out << "{\"format\": \"" << kFormat << "\", \"version\": 1, \"shards\": [";
  for (size_t i = 0; i < shards.size(); ++i) {
    const ManifestEntry& e = shards[i];
    json line = {{"name", e.name}, {"bytes", e.bytes}, {"samples", e.samples}};
    if (!e.sha256.empty()) line["sha256"] = e.sha256;
    out << (i ? ",\n  " : "\n  ") << line.dump();
  }
  out << "\n]}\n";
  return out.str();
}

std::string fetch_text(const std::string& url_or_path, const RemoteOptions& options) {
  if (!is_url(url_or_path)) {
    std::ifstream in(url_or_path, std::ios::binary);
    if (!in) {
      throw OptionError("manifest", "cannot read the manifest \"" + url_or_path + "\": check "
                                    "the path (RemoteOptions::manifest)");
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::unique_ptr<Transport> transport = make_transport(url_or_path, options);
  std::string body;
  ReadRequest request;
  request.url = url_or_path;
  transport->read(request, [](const ObjectInfo&) {}, small_body_sink(body, url_or_path));
  return body;
}

namespace {

// The manifest's text, or nullopt when the store says it is not there (HTTP 404, S3 NoSuchKey).
std::optional<std::string> fetch_manifest(const std::string& where, const RemoteOptions& options) {
  for (int attempt = 0;; ++attempt) {
    try {
      return fetch_text(where, options);
    } catch (const TransportError& e) {
      const bool no_bucket = std::string(e.what()).find("NoSuchBucket") != std::string::npos;
      if (e.http_status() == 404 && !no_bucket) return std::nullopt;
      if (!e.transient() || attempt >= options.max_retries) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 5)));
    }
  }
}

}  // namespace

std::vector<ManifestEntry> entries_for(const Manifest& m, const std::vector<std::string>& urls,
                                       const std::string& folder) {
  std::vector<ManifestEntry> out;
  for (const std::string& url : urls) {
    const std::string name = url.compare(0, folder.size(), folder) == 0
                                 ? url.substr(folder.size())
                                 : url.substr(url.rfind('/') + 1);
    const auto it = m.by_name.find(name);
    if (it == m.by_name.end()) {
      throw OptionError("manifest", "the manifest \"" + m.source + "\" does not list \"" +
                        name + "\" (for " + url + "), so its samples cannot be counted without "
                        "downloading it: write the manifest again with `mploader-manifest "
                        "FOLDER` over the shards as they are now");
    }
    out.push_back(m.shards[it->second]);
  }
  return out;
}

std::optional<std::vector<ManifestEntry>> find_manifest_entries(
    const std::vector<std::string>& urls, const RemoteOptions& options) {
  if (urls.empty()) return std::vector<ManifestEntry>{};
  const std::string where =
      options.manifest.empty() ? url_folder(urls[0]) + kDefaultName : options.manifest;
  const std::optional<std::string> text = fetch_manifest(where, options);
  if (!text) {
    if (options.manifest.empty()) return std::nullopt;  // the shards are counted instead
    throw OptionError("manifest", "there is no manifest at \"" + where + "\" (HTTP 404), the "
                      "one RemoteOptions::manifest names: check the URL, or leave it empty to "
                      "look beside the shards");
  }
  return entries_for(parse_manifest(*text, where), urls, url_folder(where));
}

std::string kept_manifest_path(const std::string& cache_dir, const std::string& folder) {
  mploader::detail::Fnv1a hash;
  hash.add(folder);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash.value()));
  return cache_dir + "/.manifests/" + hex + ".json";
}

}  // namespace mploader::remote::detail
