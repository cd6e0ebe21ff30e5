// remote/: SHA-256 through OpenSSL's libcrypto, over a stream of buffers or a whole file.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>

struct evp_md_ctx_st;

namespace mploader::remote::detail {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex();  // the digest in lowercase hex; ends the hash
  std::array<unsigned char, 32> digest();  // the digest's 32 bytes; ends the hash

 private:
  evp_md_ctx_st* ctx_;
};

// `n` bytes as lowercase hex, two digits each.
std::string hex_of(const unsigned char* bytes, size_t n);

// The SHA-256 of a file's bytes in lowercase hex; throws mploader::Error naming the file
// when it cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace mploader::remote::detail
