// Hmac.cpp: HMAC-SHA256 and the constant-time comparison from OpenSSL's libcrypto.
#include "distributed/Hmac.h"

#include <climits>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "tensor/DType.h"

namespace dist::detail {

std::array<uint8_t, 32> hmac_sha256(const std::string& key, const std::string& message) {
  if (key.size() > static_cast<size_t>(INT_MAX)) {
    throw tensor::Error(tensor::detail::concat("dist::detail::hmac_sha256: expected a key of at most ", INT_MAX,
                                               " bytes, got ", key.size()));
  }
  std::array<uint8_t, 32> out{};
  unsigned int n = 0;
  // std::string's data() is never null, so an empty key is a zero-length key (not "reuse").
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(), &n) == nullptr ||
      n != out.size()) {
    throw tensor::Error(tensor::detail::concat("dist::detail::hmac_sha256: expected libcrypto's HMAC-SHA256 to give ",
                                               out.size(), " bytes, got ", n, " (HMAC failed)"));
  }
  return out;
}

std::string hex(const uint8_t* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[bytes[i] >> 4];
    s += digits[bytes[i] & 15];
  }
  return s;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace dist::detail
