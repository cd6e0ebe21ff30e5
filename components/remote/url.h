// remote/: URLs split into their parts, for the transports and for messages.
#pragma once

#include <string>

namespace mploader::remote::detail {

struct Url {
  std::string scheme;  // "https", "s3"
  std::string host;    // with ":port" when one was given; the bucket for s3://
  std::string path;    // from the first '/' after the host ("/a/b.tar"); "/" when none
};

// Splits `url` ("scheme://host[:port]/path"); throws OptionError naming it when it has no
// "://" or no host.
Url parse_url(const std::string& url);

// The folder part of `url`: everything up to and including its last '/'.
std::string url_folder(const std::string& url);

}  // namespace mploader::remote::detail
