// Sha256 and sha256_of_file (sha256.h).
#include "remote/sha256.h"

#include <mploader/errors.h>

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <vector>

namespace mploader::remote::detail {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL cannot start a SHA-256 (out of memory?)");
  }
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t n) { EVP_DigestUpdate(ctx_, data, n); }

std::string hex_of(const unsigned char* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[bytes[i] >> 4]);
    out.push_back(digits[bytes[i] & 15]);
  }
  return out;
}

std::array<unsigned char, 32> Sha256::digest() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx_, out, &n);
  std::array<unsigned char, 32> d{};
  std::memcpy(d.data(), out, d.size());
  return d;
}

std::string Sha256::hex() {
  const std::array<unsigned char, 32> d = digest();
  return hex_of(d.data(), d.size());
}

std::string sha256_of_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot read \"" + path + "\" (" + std::strerror(errno) +
                ") to take its SHA-256");
  }
  Sha256 hash;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hash.update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error("reading \"" + path + "\" failed midway");
  return hash.hex();
}

}  // namespace mploader::remote::detail
