// Npy.h: reading NumPy's .npy (one array) and .npz (a zip of .npy files, np.savez) formats.
// dtypes: float16/32/64, int64, uint8 and bool (as uint8) as they are; int8/16/32 and
// uint16/32 widen to int64. C or Fortran order (a Fortran array comes back row-major).
// Note [Untrusted npy]: these read files from anywhere, so nothing in a header is trusted:
// the header length, the shape (digits, rank, the element count's overflow) and the data size
// are checked against the bytes actually there before anything is allocated; a zip's
// directory offsets and sizes likewise. Errors name the file (`what`) and the problem.
// Not supported (a clear error): big-endian data, object and structured dtypes, compressed
// .npz (np.savez_compressed), zip64 archives of more than 65535 entries.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "tensor/Tensor.h"

namespace tensor {

// One .npy array (CPU tensor); `what` names the source in errors.
Tensor parse_npy(const uint8_t* data, size_t size, const std::string& what = "buffer");
Tensor load_npy(const std::string& path);
// Every array of an .npz, keyed by its name without ".npy" (np.savez's keyword names).
std::map<std::string, Tensor> parse_npz(const uint8_t* data, size_t size, const std::string& what = "buffer");
std::map<std::string, Tensor> load_npz(const std::string& path);

}  // namespace tensor
