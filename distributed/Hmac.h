// Hmac.h: SHA-256 and HMAC-SHA256 (FIPS 180-4, RFC 2104), for the rendezvous's token proof
// (Note [Rendezvous protocol] in Rendezvous.cpp). Host code, no dependency; not a general
// cryptographic library: nothing else here needs one.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace dist::detail {

std::array<uint8_t, 32> sha256(const std::string& bytes);
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
