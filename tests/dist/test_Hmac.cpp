// HMAC-SHA256 (libcrypto's, distributed/Hmac.h) against the published test vectors (RFC 4231,
// all seven cases), an empty key and message, bytes past a NUL, and the constant-time
// comparison.
#include <doctest/doctest.h>

#include <string>

#include "distributed/Hmac.h"

using dist::detail::hex;
using dist::detail::hmac_sha256;

namespace {
std::string bytes_from(int first, int last) {  // first, first + 1, ..., last
  std::string s;
  for (int b = first; b <= last; ++b) s += static_cast<char>(b);
  return s;
}
}  // namespace

TEST_CASE("hmac_sha256: RFC 4231 test cases 1-7") {
  CHECK(hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  CHECK(hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(hex(hmac_sha256(std::string(20, '\xaa'), std::string(50, '\xdd'))) ==
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  CHECK(hex(hmac_sha256(bytes_from(0x01, 0x19), std::string(50, '\xcd'))) ==
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Case 5 publishes the first 128 bits only.
  CHECK(hex(hmac_sha256(std::string(20, '\x0c'), "Test With Truncation")).substr(0, 32) ==
        "a3b6167473100ee06e0c796c2955552b");
  // Cases 6 and 7: a key longer than a block (hashed first).
  CHECK(hex(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")) ==
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  CHECK(hex(hmac_sha256(std::string(131, '\xaa'),
                        "This is a test using a larger than block-size key and a larger than block-size data. "
                        "The key needs to be hashed before being used by the HMAC algorithm.")) ==
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("hmac_sha256: an empty key and message, and bytes past a NUL") {
  CHECK(hex(hmac_sha256("", "")) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  // An empty key is the all-zero block key (RFC 2104), not "no key".
  CHECK(hmac_sha256("", "x") == hmac_sha256(std::string(64, '\0'), "x"));
  CHECK(hex(hmac_sha256("key", std::string("a\0b", 3))) ==
        "29c5f0eea2d0a51b661193b3a56191192b2861f543ea0499a7f9725f7e7062fc");
  CHECK(hmac_sha256("key", std::string("a\0b", 3)) != hmac_sha256("key", "a"));
}

TEST_CASE("constant_time_equal") {
  CHECK(dist::detail::constant_time_equal("abc", "abc"));
  CHECK_FALSE(dist::detail::constant_time_equal("abc", "abd"));
  CHECK_FALSE(dist::detail::constant_time_equal("abc", "ab"));
  CHECK_FALSE(dist::detail::constant_time_equal(std::string("a\0c", 3), std::string("a\0d", 3)));
  CHECK(dist::detail::constant_time_equal("", ""));
}
