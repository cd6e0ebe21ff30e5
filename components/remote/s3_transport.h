// remote/: the Transport for s3:// URLs: HttpTransport's requests, signed with AWS SigV4, sent
// to AWS S3 or to an S3-compatible store (RemoteOptions::endpoint_url, AWS_ENDPOINT_URL).
#pragma once

#include "remote/aws_credentials.h"
#include "remote/http_transport.h"
#include "remote/sigv4.h"

#include <optional>
#include <string>
#include <vector>

namespace mploader::remote::detail {

class S3Transport : public HttpTransport {
 public:
  // Resolves the endpoint and region now, and the credentials at the first request (so that a
  // missing one is an error of the read that needs it).
  explicit S3Transport(RemoteOptions options);

  // ListObjectsV2 under `prefix_url` ("s3://bucket/prefix/"), every page.
  std::vector<std::string> list(const std::string& prefix_url) override;

 protected:
  std::string http_url(const std::string& url) const override;
  std::vector<std::string> extra_headers(const std::string& http_url,
                                         const std::string& range) override;
  std::vector<std::string> put_headers(const std::string& http_url,
                                       const std::string& sha256) override;
  std::string denied_fix(const std::string& url) const override;

 private:
  const AwsCredentials& credentials();
  // The bucket and key `url` names: an s3:// URL, or the HTTP URL of a request (path style at
  // an endpoint, virtual-hosted at AWS); a listing's key is its prefix.
  std::pair<std::string, std::string> named_by(const std::string& url) const;

  std::string endpoint_;  // "http://127.0.0.1:9000", or empty: AWS, virtual-hosted
  std::string region_;
  std::optional<AwsCredentials> credentials_;
};

}  // namespace mploader::remote::detail
