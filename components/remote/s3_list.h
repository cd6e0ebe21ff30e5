// remote/: the XML of S3's ListObjectsV2 pages and error bodies, read by a small tag scanner
// (no XML library: the shapes are fixed and small, and the scanner is fuzzed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mploader::remote::detail {

struct S3Object {
  std::string key;
  int64_t size = 0;
  std::string etag;
};

struct S3ListPage {
  std::vector<S3Object> objects;
  bool truncated = false;
  std::string next_token;  // NextContinuationToken when truncated
};

// Throws mploader::Error saying what is wrong for a page that is not a listing: a
// <Contents> without its end, or without a <Key>, or a <Size> that is no non-negative number,
// or a truncated page without a continuation token.
S3ListPage parse_list_objects_v2(const std::string& xml);

struct S3Error {
  std::string code;
  std::string message;
};

// The <Code> and <Message> of an <Error> body; nothing when `xml` is none.
std::optional<S3Error> parse_s3_error(const std::string& xml);

}  // namespace mploader::remote::detail
