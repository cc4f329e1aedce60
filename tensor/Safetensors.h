// Safetensors.h: reading and writing the safetensors format (huggingface/safetensors):
// 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape,
// data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the raw little-endian data.
// Files from other frameworks load as they are; a malformed or truncated file gets an
// Error naming the file and the problem, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tensor/Tensor.h"

namespace tensor {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // CPU tensors
  std::map<std::string, std::string> metadata;
};

// `what` names the source in error messages (a path, "buffer").
SafetensorsFile parse_safetensors(const uint8_t* data, size_t size, const std::string& what = "buffer");
SafetensorsFile load_safetensors(const std::string& path);

std::vector<uint8_t> serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                           const std::map<std::string, std::string>& metadata = {});
// Through tensor::write_file_atomic (FileIO.h): `path` ends up holding either its previous
// bytes or the complete new file, never half a file, and no temporary file is left behind.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace tensor
