// sign_v4: the canonical request, the string to sign and the derived key, as AWS specifies
// them for Signature Version 4 (sigv4.h).
#include "remote/sigv4.h"

#include "remote/sha256.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

namespace mploader::remote::detail {
namespace {

std::string hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<const char*>(out), n);
}

// A header value as AWS signs it: trimmed, runs of spaces made one.
std::string canonical_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == ' ' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string canonical_query(std::vector<std::pair<std::string, std::string>> query) {
  for (auto& [name, value] : query) {
    name = uri_encode(name, true);
    value = uri_encode(value, true);
  }
  std::sort(query.begin(), query.end());
  std::string out;
  for (const auto& [name, value] : query) out += (out.empty() ? "" : "&") + name + "=" + value;
  return out;
}

}  // namespace

std::string sha256_hex(const std::string& data) {
  Sha256 hash;
  hash.update(data.data(), data.size());
  return hash.hex();
}

std::string uri_encode(const std::string& s, bool encode_slash) {
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
        c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encode_slash)) {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

std::string amz_date_now() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[20];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

SignedRequest sign_v4(const SigV4Request& request, const AwsCredentials& credentials,
                      const std::string& region, const std::string& service) {
  const auto& [method, host, path, query, extra_headers, amz_date, payload_hash] = request;
  std::map<std::string, std::string> headers = extra_headers;  // sorted by name
  headers["host"] = host;
  headers["x-amz-content-sha256"] = payload_hash;
  headers["x-amz-date"] = amz_date;
  if (!credentials.session_token.empty()) {
    headers["x-amz-security-token"] = credentials.session_token;
  }
  std::string canonical_headers, signed_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + canonical_value(value) + "\n";
    signed_headers += (signed_headers.empty() ? "" : ";") + name;
  }
  SignedRequest out;
  out.canonical_request = method + "\n" + path + "\n" + canonical_query(query) + "\n" +
                          canonical_headers + "\n" + signed_headers + "\n" + payload_hash;
  const std::string day = amz_date.substr(0, 8);
  const std::string scope = day + "/" + region + "/" + service + "/aws4_request";
  const std::string to_sign = "AWS4-HMAC-SHA256\n" + amz_date + "\n" + scope + "\n" +
                              sha256_hex(out.canonical_request);
  const std::string key = hmac(hmac(hmac(hmac("AWS4" + credentials.secret_access_key, day),
                                         region), service), "aws4_request");
  const std::string signature = hmac(key, to_sign);
  out.signature =
      hex_of(reinterpret_cast<const unsigned char*>(signature.data()), signature.size());
  out.headers.push_back("Authorization: AWS4-HMAC-SHA256 Credential=" +
                        credentials.access_key_id + "/" + scope + ", SignedHeaders=" +
                        signed_headers + ", Signature=" + out.signature);
  for (const auto& [name, value] : headers) {
    if (name.compare(0, 6, "x-amz-") == 0) out.headers.push_back(name + ": " + value);
  }
  return out;
}

}  // namespace mploader::remote::detail
