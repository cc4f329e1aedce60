"""Writes tests/data/nn/criteria2_reference.safetensors: PyTorch (CPU, float64) losses and input
gradients of the elementwise criteria (BCE, BCEWithLogits, SmoothL1, Abs, DistKLDiv,
HingeEmbedding, MultiLabelSoftMargin) with each of their options, and of F.ctc_loss with
several blanks, padded and concatenated targets, input and target lengths, every reduction and
zero_infinity, an impossible alignment (an infinite loss) among them. tests/nn/test_NewCriteria.cpp
and tests/nn/test_CTCCriterion.cpp compare nn with it.

Each case `<Type>.<i>` has `.input`, `.target`, `.loss` ([1]), `.gradInput` and `.config`
(float64): for the elementwise criteria [sizeAverage, beta, margin, logTarget, batchMean] and
optional `.weights` / `.posWeight`; for CTC `.config` = [blank, reduction (0 none, 1 sum, 2 mean),
zero_infinity], `.inputLengths`, `.targetLengths` (int64) and `.losses` (each sample's). The
gradient is that of the reduced loss (for reduction 'none', of the losses' sum).

Run from the repository root: python3 scripts/make_criterion_reference2.py
"""
import warnings

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(20260147)
warnings.filterwarnings("ignore", message=".*batchmean.*")  # KLDivLoss's mean: we want it
out = {}
D = torch.float64


def put(name, i, x, t, loss, grad, config, **extra):
    key = f"{name}.{i}"
    out[key + ".input"] = x.detach().clone().contiguous()
    out[key + ".target"] = t.detach().clone().contiguous()
    out[key + ".loss"] = loss.detach().reshape(1).clone()
    out[key + ".gradInput"] = grad.detach().clone().contiguous()
    out[key + ".config"] = torch.tensor(config, dtype=D)
    for k, v in extra.items():
        if v is not None:
            out[f"{key}.{k}"] = v.detach().clone().contiguous()


def elementwise(name, shapes, make_x, make_t, configs, fn, first=0):
    i = first
    for shape in shapes:
        for cfg in configs:
            x = make_x(shape).requires_grad_()
            t = make_t(shape)
            w = cfg.get("weights")
            pw = cfg.get("pos_weight")
            w = torch.rand(shape[-1:] if w == "last" else shape, dtype=D) + 0.5 if w else None
            pw = torch.rand(shape[-1:], dtype=D) * 2 + 0.2 if pw else None
            avg = cfg.get("avg", True)
            loss = fn(x, t, w, pw, cfg)
            loss.backward()
            put(name, i, x, t, loss, x.grad,
                [float(avg), cfg.get("beta", 1.0), cfg.get("margin", 1.0), float(cfg.get("log_target", False)),
                 float(cfg.get("batchmean", False))], weights=w, posWeight=pw)
            i += 1


def red(cfg):
    if cfg.get("batchmean") and cfg.get("avg", True):
        return "batchmean"
    return "mean" if cfg.get("avg", True) else "sum"


shapes = [(4, 5), (7,), (2, 3, 4)]
prob = lambda s: torch.rand(s, dtype=D) * 0.9 + 0.05
anyx = lambda s: torch.randn(s, dtype=D) * 2
elementwise("BCECriterion", shapes, prob, lambda s: torch.rand(s, dtype=D),
            [{}, {"avg": False}, {"weights": "last"}, {"weights": "full", "avg": False}],
            lambda x, t, w, pw, c: F.binary_cross_entropy(x, t, weight=w, reduction=red(c)))
# probabilities of exactly 0 and 1: the logs clamped at -100
x = torch.tensor([0.0, 1.0, 0.5, 1.0, 0.0], dtype=D, requires_grad=True)
t = torch.tensor([1.0, 0.0, 0.5, 1.0, 0.0], dtype=D)
loss = F.binary_cross_entropy(x, t)
loss.backward()
put("BCECriterion", 100, x, t, loss, x.grad, [1.0, 1.0, 1.0, 0.0, 0.0])
elementwise("BCEWithLogitsCriterion", shapes + [(3, 4)], lambda s: torch.randn(s, dtype=D) * 4,
            lambda s: torch.rand(s, dtype=D),
            [{}, {"avg": False}, {"weights": "last"}, {"pos_weight": True}, {"weights": "full", "pos_weight": True,
                                                                              "avg": False}],
            lambda x, t, w, pw, c: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw,
                                                                      reduction=red(c)))
# large logits: the stable form
x = torch.tensor([[80.0, -80.0, 30.0], [-700.0, 700.0, 0.0]], dtype=D, requires_grad=True)
t = torch.tensor([[0.0, 1.0, 0.3], [1.0, 0.0, 0.5]], dtype=D)
loss = F.binary_cross_entropy_with_logits(x, t)
loss.backward()
put("BCEWithLogitsCriterion", 100, x, t, loss, x.grad, [1.0, 1.0, 1.0, 0.0, 0.0])
elementwise("SmoothL1Criterion", shapes, anyx, anyx,
            [{}, {"avg": False}, {"beta": 0.5}, {"beta": 2.5, "avg": False}, {"beta": 0.0}],
            lambda x, t, w, pw, c: F.smooth_l1_loss(x, t, beta=c.get("beta", 1.0), reduction=red(c)))
elementwise("AbsCriterion", shapes, anyx, anyx, [{}, {"avg": False}],
            lambda x, t, w, pw, c: F.l1_loss(x, t, reduction=red(c)))
elementwise("DistKLDivCriterion", shapes, lambda s: torch.randn(s, dtype=D).log_softmax(-1),
            lambda s: torch.rand(s, dtype=D) * (torch.rand(s, dtype=D) > 0.2),  # some zeros
            [{}, {"avg": False}, {"batchmean": True}],
            lambda x, t, w, pw, c: F.kl_div(x, t, reduction=red(c)))
elementwise("DistKLDivCriterion", [(3, 6)], lambda s: torch.randn(s, dtype=D).log_softmax(-1),
            lambda s: torch.randn(s, dtype=D).log_softmax(-1),
            [{"log_target": True}, {"log_target": True, "avg": False}, {"log_target": True, "batchmean": True}],
            lambda x, t, w, pw, c: F.kl_div(x, t, reduction=red(c), log_target=True), first=50)
elementwise("HingeEmbeddingCriterion", shapes, anyx, lambda s: torch.randint(0, 2, s).to(D) * 2 - 1,
            [{}, {"avg": False}, {"margin": 2.0}, {"margin": 0.5, "avg": False}],
            lambda x, t, w, pw, c: F.hinge_embedding_loss(x, t, margin=c.get("margin", 1.0), reduction=red(c)))
elementwise("MultiLabelSoftMarginCriterion", [(4, 5), (7,), (3, 2)], anyx,
            lambda s: torch.randint(0, 2, s).to(D),
            [{}, {"avg": False}, {"weights": "last"}, {"weights": "last", "avg": False}],
            lambda x, t, w, pw, c: F.multilabel_soft_margin_loss(x, t, weight=w, reduction=red(c)))


# CTC
def ctc_case(i, T, N, C, blank, input_lengths, target_lengths, padded, reduction, zero_inf, targets=None):
    lp = torch.randn(T, N, C, dtype=D).log_softmax(2).requires_grad_()
    labels = [c for c in range(C) if c != blank]
    S = max(target_lengths) if target_lengths else 0
    if targets is None:
        rows = [[labels[j] for j in torch.randint(0, len(labels), (S,)).tolist()] for _ in range(N)]
    else:
        rows = targets
    il = torch.tensor(input_lengths, dtype=torch.int64)
    tl = torch.tensor(target_lengths, dtype=torch.int64)
    if padded:
        tg = torch.tensor(rows, dtype=torch.int64).reshape(N, S)
    else:
        tg = torch.tensor([v for r, l in zip(rows, target_lengths) for v in r[:l]], dtype=torch.int64)
    red_name = ["none", "sum", "mean"][reduction]
    losses = F.ctc_loss(lp, tg, il, tl, blank=blank, reduction="none", zero_infinity=zero_inf)
    loss = F.ctc_loss(lp, tg, il, tl, blank=blank, reduction=red_name, zero_infinity=zero_inf)
    (loss.sum() if reduction == 0 else loss).backward()
    put("CTCCriterion", i, lp, tg, loss.sum() if reduction == 0 else loss, lp.grad,
        [float(blank), float(reduction), float(zero_inf)], inputLengths=il, targetLengths=tl, losses=losses)


ctc_case(0, 12, 3, 5, 0, [12, 12, 12], [3, 4, 2], True, 2, False)
ctc_case(1, 12, 3, 5, 0, [12, 9, 7], [3, 4, 2], True, 1, False)
ctc_case(2, 10, 2, 6, 3, [10, 8], [4, 3], False, 0, False)
ctc_case(3, 10, 2, 6, 5, [10, 10], [5, 2], True, 2, False)
ctc_case(4, 8, 4, 4, 0, [8, 8, 5, 6], [2, 0, 3, 1], False, 2, False)
# repeated labels (a blank is needed between them) and an impossible alignment: sample 1's
# labels 1 1 1 need 5 steps and it has 4; with and without zero_infinity
rep = [[1, 2, 2], [1, 1, 1], [2, 1, 2]]
ctc_case(5, 6, 3, 4, 0, [6, 4, 6], [3, 3, 3], True, 0, False, targets=rep)
ctc_case(6, 6, 3, 4, 0, [6, 4, 6], [3, 3, 3], True, 2, True, targets=rep)
ctc_case(7, 6, 3, 4, 0, [6, 4, 6], [3, 3, 3], True, 1, True, targets=rep)
ctc_case(8, 6, 3, 4, 3, [6, 4, 6], [3, 3, 3], True, 1, False, targets=rep)
ctc_case(9, 30, 2, 8, 0, [30, 25], [12, 10], True, 2, False)

save_file(out, "tests/data/nn/criteria2_reference.safetensors")
print(len(out), "tensors")
