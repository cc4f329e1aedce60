// Denormals.h: flushing denormal floats to zero in CPU arithmetic, PyTorch's
// torch.set_flush_denormal. Off by default (IEEE arithmetic, what the nn reference is checked
// with). On x86 a denormal operand or result takes a slow microcode path: in the Fashion-MNIST
// sample's later epochs, as the softmax's small probabilities and the gradients after them
// underflow, an epoch took up to 1.8x its first one's time on an Emerald Rapids Xeon, and none
// longer with flushing (docs/performance.md). Flushing sets the x86 MXCSR's FTZ (results) and DAZ
// (operands) bits; values that would be denormal become zero, everything else is unchanged.
#pragma once

namespace tensor {

// Sets flushing on or off for the calling thread and for every thread of the OpenMP team that
// runs the CPU kernels and OpenBLAS's OpenMP build (threads a program starts itself keep their
// own setting). Returns false, changing nothing, where the CPU has no such mode (not x86-64).
bool set_flush_denormal(bool on);
// Whether the calling thread flushes.
bool flush_denormal();

}  // namespace tensor
