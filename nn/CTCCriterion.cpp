// CTCCriterion.cpp: the checks, then nn/kernels/CTC.h in float64.
#include "nn/CTCCriterion.h"

#include <cmath>
#include <limits>

#include "nn/Buffers.h"

namespace nn {

namespace {
const char* reduction_name(CTCCriterion::Reduction r) {
  switch (r) {
    case CTCCriterion::Reduction::None:
      return "none";
    case CTCCriterion::Reduction::Sum:
      return "sum";
    case CTCCriterion::Reduction::Mean:
      return "mean";
  }
  return "?";
}

// An integer tensor's values on the host (Int64 or UInt8; floating dtypes are refused).
std::vector<int64_t> host_integers(const std::string& w, const Tensor& t, const char* what) {
  if (t.dtype() != tensor::DType::Int64 && t.dtype() != tensor::DType::UInt8) {
    throw Error(w + "expected " + what + " of an integer dtype (int64), got " + t.description());
  }
  return t.to(tensor::Device::cpu(), tensor::DType::Int64).contiguous().to_vector<int64_t>();
}
}  // namespace

std::string CTCCriterion::str() const {
  return type_name() + "(blank=" + std::to_string(blank) + ", reduction=" + reduction_name(reduction) +
         (zeroInfinity ? ", zero_infinity=true" : "") + ")";
}

void CTCCriterion::setLengths(Tensor inputLengths_, Tensor targetLengths_) {
  inputLengths = std::move(inputLengths_);
  targetLengths = std::move(targetLengths_);
}

double CTCCriterion::forward(const Tensor& logProbs, const Tensor& targets, const Tensor& inputLengths_,
                             const Tensor& targetLengths_) {
  setLengths(inputLengths_, targetLengths_);
  return Criterion::forward(logProbs, targets);
}

const Tensor& CTCCriterion::backward(const Tensor& logProbs, const Tensor& targets, const Tensor& inputLengths_,
                                     const Tensor& targetLengths_) {
  setLengths(inputLengths_, targetLengths_);
  return Criterion::backward(logProbs, targets);
}

kernels::CTCProblem CTCCriterion::checkedProblem(const Tensor& input, const Tensor& target, const char* method) const {
  const std::string w = where(method);
  if (input.dim() != 3) {
    throw Error(w + "expected log-probabilities of [T x N x C], got " + tensor::shape_str(input.sizes()));
  }
  kernels::CTCProblem p;
  p.T = input.size(0);
  p.N = input.size(1);
  p.C = input.size(2);
  p.blank = blank;
  if (blank < 0 || blank >= p.C) {
    throw Error(w + "expected blank in [0, " + std::to_string(p.C - 1) + "] (input " +
                tensor::shape_str(input.sizes()) + "), got " + std::to_string(blank));
  }
  const bool padded = target.dim() == 2;
  if (!padded && target.dim() != 1) {
    throw Error(w + "expected targets of [N x S] (padded) or 1-d (concatenated), got " +
                tensor::shape_str(target.sizes()));
  }
  if (padded && target.size(0) != p.N) {
    throw Error(w + "expected padded targets of [" + std::to_string(p.N) + " x S] for input " +
                tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(target.sizes()));
  }
  auto lengths = [&](const Tensor& l, const char* what, int64_t full) {
    if (!l.defined()) return std::vector<int64_t>(static_cast<size_t>(p.N), full);
    if (l.dim() != 1 || l.size(0) != p.N) {
      throw Error(w + "expected " + what + " of [" + std::to_string(p.N) + "] for input " +
                  tensor::shape_str(input.sizes()) + ", got " + tensor::shape_str(l.sizes()));
    }
    return host_integers(w, l, what);
  };
  if (!padded && !targetLengths.defined()) {
    throw Error(w + "expected targetLengths with concatenated targets " + tensor::shape_str(target.sizes()) +
                " (setLengths or the four-argument forward), got none");
  }
  p.inputLengths = lengths(inputLengths, "inputLengths", p.T);
  p.targetLengths = lengths(targetLengths, "targetLengths", padded ? target.size(1) : 0);
  const int64_t S = padded ? target.size(1) : target.numel();
  int64_t total = 0;
  for (int64_t b = 0; b < p.N; ++b) {
    const int64_t il = p.inputLengths[b], tl = p.targetLengths[b];
    if (il < 0 || il > p.T) {
      throw Error(w + "expected input lengths in [0, " + std::to_string(p.T) + "] (input " +
                  tensor::shape_str(input.sizes()) + "), got " + std::to_string(il) + " at inputLengths[" +
                  std::to_string(b) + "]");
    }
    if (tl < 0 || (padded && tl > S)) {
      throw Error(w + "expected target lengths in [0, " + (padded ? std::to_string(S) : std::string("...")) +
                  "] (targets " + tensor::shape_str(target.sizes()) + "), got " + std::to_string(tl) +
                  " at targetLengths[" + std::to_string(b) + "]");
    }
    p.offsets.push_back(padded ? b * S : total);
    total += tl;
  }
  if (!padded && total != target.numel()) {
    throw Error(w + "expected concatenated targets of the target lengths' sum [" + std::to_string(total) + "], got " +
                tensor::shape_str(target.sizes()));
  }
  p.targets = host_integers(w, target, "targets");
  for (int64_t b = 0; b < p.N; ++b) {
    for (int64_t i = 0; i < p.targetLengths[b]; ++i) {
      const int64_t at = p.offsets[b] + i, v = p.targets[static_cast<size_t>(at)];
      if (v < 0 || v >= p.C || v == blank) {
        const std::string pos = padded ? std::to_string(b) + ", " + std::to_string(i) : std::to_string(at);
        throw Error(w + "expected target labels in [0, " + std::to_string(p.C - 1) + "] other than blank " +
                    std::to_string(blank) + " (input " + tensor::shape_str(input.sizes()) + "), got " +
                    std::to_string(v) + " at targets[" + pos + "]");
      }
    }
  }
  return p;
}

double CTCCriterion::reduce(const kernels::CTCProblem& p, std::vector<double>& perSample) const {
  if (zeroInfinity) {
    for (double& l : perSample) {
      if (l == std::numeric_limits<double>::infinity()) l = 0;
    }
  }
  double s = 0;
  for (int64_t b = 0; b < p.N; ++b) {
    s += reduction == Reduction::Mean ? perSample[b] / static_cast<double>(std::max<int64_t>(p.targetLengths[b], 1))
                                      : perSample[b];
  }
  return reduction == Reduction::Mean && p.N > 0 ? s / static_cast<double>(p.N) : s;
}

std::vector<double> CTCCriterion::gradScales(const kernels::CTCProblem& p) const {
  std::vector<double> scale(static_cast<size_t>(p.N), 1.0);
  if (reduction == Reduction::Mean) {
    for (int64_t b = 0; b < p.N; ++b) {
      scale[b] = 1.0 / (static_cast<double>(std::max<int64_t>(p.targetLengths[b], 1)) * static_cast<double>(p.N));
    }
  }
  return scale;
}

double CTCCriterion::updateOutput(const Tensor& input, const Tensor& target) {
  check_float(where("updateOutput"), input);
  const kernels::CTCProblem p = checkedProblem(input, target, "updateOutput");
  std::vector<double> perSample;
  kernels::ctc_loss(p, input.to(tensor::DType::Float64).contiguous(), perSample, nullptr, false, nullptr);
  output = reduce(p, perSample);
  losses = tensor::from_vector<double>(perSample, {p.N});
  return output;
}

const Tensor& CTCCriterion::updateGradInput(const Tensor& input, const Tensor& target) {
  check_float(where("updateGradInput"), input);
  const kernels::CTCProblem p = checkedProblem(input, target, "updateGradInput");
  std::vector<double> perSample;
  const std::vector<double> scale = gradScales(p);
  Tensor g = tensor::empty(input.sizes(), tensor::DType::Float64);
  kernels::ctc_loss(p, input.to(tensor::DType::Float64).contiguous(), perSample, &scale, zeroInfinity, &g);
  ensure(gradInput, input.sizes(), input.dtype(), input.device()).copy_(g);
  return gradInput;
}

}  // namespace nn
