// remote/: AWS Signature Version 4 for S3 requests (HMAC-SHA256 through OpenSSL's libcrypto).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace mploader::remote::detail {

struct AwsCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty unless temporary credentials
  std::string source;         // where they came from, for messages
};

struct SignedRequest {
  std::vector<std::string> headers;  // "Name: value" lines to send
  std::string canonical_request;     // what was signed, for the tests
  std::string signature;
};

// A request to sign: `path` as sent (already URI-encoded), `query` unencoded (encoded and sorted
// when signed), `extra_headers` by lower-case name (host, x-amz-date and x-amz-content-sha256
// are added and signed); `amz_date` as amz_date_now() writes it.
struct SigV4Request {
  std::string method;
  std::string host;
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::map<std::string, std::string> extra_headers;
  std::string amz_date;
  std::string payload_hash;
};

// Signs `request` for `service` in `region`. Returns the Authorization, x-amz-date,
// x-amz-content-sha256 and, with a session token, x-amz-security-token headers.
SignedRequest sign_v4(const SigV4Request& request, const AwsCredentials& credentials,
                      const std::string& region, const std::string& service);

// RFC 3986: unreserved characters kept, every other byte as %XX; '/' kept unless
// `encode_slash`.
std::string uri_encode(const std::string& s, bool encode_slash);
// The current UTC time as "YYYYMMDDTHHMMSSZ".
std::string amz_date_now();
std::string sha256_hex(const std::string& data);

}  // namespace mploader::remote::detail
