// Hmac.h: HMAC-SHA256 (RFC 2104) and a constant-time comparison, for the rendezvous's token
// proof (Note [Rendezvous protocol] in Rendezvous.cpp), from OpenSSL's libcrypto (HMAC,
// CRYPTO_memcmp). Host code; this header names no OpenSSL type.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace dist::detail {

std::array<uint8_t, 32> hmac_sha256(const std::string& key, const std::string& message);
std::string hex(const uint8_t* bytes, size_t n);
template <size_t N>
std::string hex(const std::array<uint8_t, N>& a) {
  return hex(a.data(), N);
}
// Equal strings, in a time that depends on the lengths only (no early exit on the first
// differing byte, so a peer cannot find a proof byte by byte from response times).
bool constant_time_equal(const std::string& a, const std::string& b);

}  // namespace dist::detail
