// S3Transport: s3:// URLs mapped to HTTP requests, signed, and listed (s3_transport.h).
#include "remote/s3_transport.h"

#include <mploader/errors.h>

#include "remote/s3_list.h"
#include "remote/url.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace mploader::remote::detail {
namespace {

// "bucket" and "key" of "s3://bucket/key".
std::pair<std::string, std::string> bucket_and_key(const std::string& url) {
  const Url u = parse_url(url);
  return {u.host, u.path.size() > 1 ? u.path.substr(1) : ""};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string uri_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
        hex_value(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string without_trailing_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// The query of a path as sent ("/bucket?list-type=2&prefix=a%2F") as (name, value) pairs,
// decoded as uri_encode wrote them; `path` loses its query.
std::vector<std::pair<std::string, std::string>> query_of(std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t q = path.find('?');
  if (q == std::string::npos) return out;
  const std::string query = path.substr(q + 1);
  path.resize(q);
  size_t start = 0;
  while (start <= query.size()) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string pair = query.substr(start, amp - start);
    const size_t eq = pair.find('=');
    if (!pair.empty()) {
      out.emplace_back(uri_decode(pair.substr(0, eq)),
                       eq == std::string::npos ? "" : uri_decode(pair.substr(eq + 1)));
    }
    start = amp + 1;
  }
  return out;
}

}  // namespace

S3Transport::S3Transport(RemoteOptions options) : HttpTransport(std::move(options)) {
  endpoint_ = this->options().endpoint_url;
  if (endpoint_.empty()) {
    if (const char* env = std::getenv("AWS_ENDPOINT_URL_S3"); env != nullptr && *env) {
      endpoint_ = env;
    } else if (const char* any = std::getenv("AWS_ENDPOINT_URL"); any != nullptr && *any) {
      endpoint_ = any;
    }
  }
  endpoint_ = without_trailing_slash(endpoint_);
  if (!endpoint_.empty() && endpoint_.find("://") == std::string::npos) {
    throw OptionError("endpoint_url", "the S3 endpoint \"" + endpoint_ + "\" has no scheme: "
                                      "write http://host:port or https://host");
  }
  region_ = resolve_aws_region(this->options().region);
}

const AwsCredentials& S3Transport::credentials() {
  if (!credentials_) {
    try {
      credentials_ = resolve_aws_credentials(options().aws_profile);
    } catch (const OptionError& e) {
      throw TransportError(e.what(), false, 0);  // a read's error: the caller's type
    }
  }
  return *credentials_;
}

std::string S3Transport::http_url(const std::string& url) const {
  const auto [bucket, key] = bucket_and_key(url);
  // Path style for an endpoint of one's own (S3-compatible stores serve it); virtual-hosted
  // style for AWS.
  if (!endpoint_.empty()) return endpoint_ + "/" + bucket + "/" + uri_encode(key, false);
  return "https://" + bucket + ".s3." + region_ + ".amazonaws.com/" + uri_encode(key, false);
}

std::vector<std::string> S3Transport::extra_headers(const std::string& http_url,
                                                    const std::string& range) {
  const Url u = parse_url(http_url);
  std::string path = u.path;
  const auto query = query_of(path);
  std::map<std::string, std::string> signed_headers;
  if (!range.empty()) signed_headers["range"] = "bytes=" + range;
  const SignedRequest s =
      sign_v4({"GET", u.host, path, query, signed_headers, amz_date_now(), "UNSIGNED-PAYLOAD"},
              credentials(), region_, "s3");
  return s.headers;
}

std::vector<std::string> S3Transport::put_headers(const std::string& http_url,
                                                  const std::string& sha256) {
  const Url u = parse_url(http_url);
  std::string path = u.path;
  const auto query = query_of(path);
  return sign_v4({"PUT", u.host, path, query, {}, amz_date_now(), sha256}, credentials(),
                 region_, "s3")
      .headers;
}

std::pair<std::string, std::string> S3Transport::named_by(const std::string& url) const {
  if (url.compare(0, 5, "s3://") == 0) return bucket_and_key(url);
  const Url u = parse_url(url);
  std::string path = u.path;
  const auto query = query_of(path);
  std::string bucket, key;
  if (!endpoint_.empty()) {  // path style: /bucket/key
    const size_t slash = path.find('/', 1);
    bucket = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    key = slash == std::string::npos ? "" : uri_decode(path.substr(slash + 1));
  } else {  // virtual-hosted: bucket.s3.region.amazonaws.com/key
    bucket = u.host.substr(0, u.host.find(".s3."));
    key = path.size() > 1 ? uri_decode(path.substr(1)) : "";
  }
  for (const auto& [name, value] : query) {
    if (name == "prefix") key = value;
  }
  return {bucket, key};
}

std::string S3Transport::denied_fix(const std::string& url) const {
  const auto [bucket, key] = named_by(url);
  const bool listing = url.find("list-type=") != std::string::npos;
  std::string id = credentials_ ? credentials_->access_key_id : "";
  if (id.size() > 4) id = "..." + id.substr(id.size() - 4);
  return "the store refused the credentials from " +
         (credentials_ ? credentials_->source : std::string("(none resolved)")) +
         " (access key " + id + ") for bucket \"" + bucket + "\", " +
         (listing ? "listing the prefix \"" : "key \"") + key + "\": check the key and secret, that they may read this bucket, and the region \"" +
         region_ + "\" (AWS_REGION)" + (endpoint_.empty() ? "" : ", at " + endpoint_);
}

std::vector<std::string> S3Transport::list(const std::string& prefix_url) {
  const auto [bucket, prefix] = bucket_and_key(prefix_url);
  std::vector<std::string> urls;
  std::string token;
  for (int page = 0; page < 100000; ++page) {
    const std::string base = !endpoint_.empty()
                                 ? endpoint_ + "/" + bucket
                                 : "https://" + bucket + ".s3." + region_ + ".amazonaws.com";
    std::string query = "?list-type=2&prefix=" + uri_encode(prefix, true);
    if (!token.empty()) query += "&continuation-token=" + uri_encode(token, true);
    const S3ListPage listed = parse_list_objects_v2(get_text(base + "/" + query));
    for (const S3Object& o : listed.objects) urls.push_back("s3://" + bucket + "/" + o.key);
    if (!listed.truncated) break;
    token = listed.next_token;
  }
  std::sort(urls.begin(), urls.end());
  return urls;
}

}  // namespace mploader::remote::detail
