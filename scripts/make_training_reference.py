"""Writes PyTorch's numbers for the training machinery's tests (tests/train/test_TrainingReference.cpp),
run from the repository root: python3 scripts/make_training_reference.py
- tests/data/train/training_reference.json (float64 numbers; JSON keeps every double exactly):
  schedules.<name>: the learning rates of two parameter groups (bases 1 and 0.1) at epochs
    0, 1, ... of torch.optim.lr_scheduler's StepLR(2, 0.5), MultiStepLR([2, 5], 0.1),
    SequentialLR(LinearLR(0.5, 2), CosineAnnealingLR(4)) up to its end (warmup_cosine),
    OneCycleLR(max_lr 1, 10 steps) cosine two-phase and linear three-phase, and
    ReduceLROnPlateau(factor 0.5, patience 2, cooldown 1, min_lr 0.3) on plateau.metrics;
  optimizers.<name>: {options, params0, grads (one list per step), params (after each step)}
    for AdamW (lr 0.01, weight decay 0.1), Adam with L2 weight decay 0.05 and SGD with
    Nesterov momentum 0.9 and weight decay 0.01, float64, 6 steps of 7 parameters;
  clip.<case>: {grads (two tensors), max_norm, norm_type, total_norm, clipped} for
    clip_grad_norm_ (norms 2 and inf, above and below max_norm), and clip_grad_value_ (0.3);
  grad_scaler: torch.amp.GradScaler('cpu', growth_interval=3) over 12 steps of SGD (lr 0.1)
    on a float32 parameter whose gradient is the scaled unscaled[k] (Inf at the steps in
    `overflow`): the scale, the parameter and whether it stepped after each step.
The script needs only torch (its CPU path). PyTorch is a reference here; cudnn-nn does not
depend on it.
"""
import json
import os

import torch

torch.manual_seed(20261126)
OUT = os.path.join('tests', 'data', 'train', 'training_reference.json')


def floats(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def two_group_optimizer():
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    return torch.optim.SGD([{'params': [a]}, {'params': [b], 'lr': 0.1}], lr=1.0)


def lrs(opt):
    return [g['lr'] for g in opt.param_groups]


def run_schedule(make, epochs):
    opt = two_group_optimizer()
    sched = make(opt)
    out = []
    for e in range(epochs):
        if e > 0:
            opt.step()
            sched.step()
        out.append(lrs(opt))
    return out


def schedules():
    s = torch.optim.lr_scheduler
    out = {
        'step': run_schedule(lambda o: s.StepLR(o, 2, 0.5), 8),
        'multistep': run_schedule(lambda o: s.MultiStepLR(o, [2, 5], 0.1), 8),
        # ours: WarmupCosineLR(warmup 2, total 6, minLr 0, startFactor 0.5), epochs 0..6
        'warmup_cosine': run_schedule(lambda o: s.SequentialLR(
            o, [s.LinearLR(o, start_factor=0.5, total_iters=2), s.CosineAnnealingLR(o, T_max=4, eta_min=0.0)],
            milestones=[2]), 7),
        'onecycle_cos': run_schedule(lambda o: s.OneCycleLR(o, max_lr=1.0, total_steps=10), 10),
        'onecycle_linear3': run_schedule(lambda o: s.OneCycleLR(o, max_lr=1.0, total_steps=10,
                                                                 anneal_strategy='linear', three_phase=True), 10),
    }
    metrics = [1.0, 0.9, 0.95, 0.9, 0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.5, 0.6, 0.7, 0.8]
    opt = two_group_optimizer()
    plateau = s.ReduceLROnPlateau(opt, mode='min', factor=0.5, patience=2, cooldown=1, min_lr=0.3)
    seq = []
    for m in metrics:
        plateau.step(m)
        seq.append(lrs(opt))
    out['plateau'] = {'metrics': metrics, 'lrs': seq}
    return out


def run_optimizer(make, options, steps=6, n=7):
    p = (torch.rand(n, dtype=torch.float64) * 2 - 1).requires_grad_(True)
    params0 = floats(p)
    opt = make([p])
    grads, params = [], []
    for _ in range(steps):
        g = torch.rand(n, dtype=torch.float64) * 2 - 1
        p.grad = g.clone()
        opt.step()
        grads.append(floats(g))
        params.append(floats(p))
    return {'options': options, 'params0': params0, 'grads': grads, 'params': params}


def optimizers():
    return {
        'adamw': run_optimizer(lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
                               {'lr': 0.01, 'weight_decay': 0.1}),
        'adam_l2': run_optimizer(lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.05),
                                 {'lr': 0.01, 'weight_decay': 0.05}),
        'sgd_nesterov': run_optimizer(
            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
            {'lr': 0.1, 'momentum': 0.9, 'weight_decay': 0.01}),
    }


def clipping():
    out = {}
    for name, max_norm, norm_type, scale in [('norm2_above', 1.0, 2.0, 1.0), ('norm2_below', 10.0, 2.0, 1.0),
                                             ('inf_above', 0.5, float('inf'), 1.0)]:
        gs = [torch.rand(4, 3, dtype=torch.float64) * 2 - 1, torch.rand(5, dtype=torch.float64) * 2 - 1]
        ps = [torch.zeros_like(g, requires_grad=True) for g in gs]
        for p, g in zip(ps, gs):
            p.grad = g.clone() * scale
        total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
        out[name] = {'grads': [floats(g * scale) for g in gs], 'shapes': [list(g.shape) for g in gs],
                     'max_norm': max_norm, 'norm_type': 'inf' if norm_type == float('inf') else norm_type,
                     'total_norm': float(total), 'clipped': [floats(p.grad) for p in ps]}
    gs = [torch.rand(6, dtype=torch.float64) * 2 - 1]
    ps = [torch.zeros_like(g, requires_grad=True) for g in gs]
    ps[0].grad = gs[0].clone()
    torch.nn.utils.clip_grad_value_(ps, 0.3)
    out['value'] = {'grads': [floats(gs[0])], 'clip_value': 0.3, 'clipped': [floats(ps[0].grad)]}
    return out


def grad_scaler():
    steps, overflow = 12, [2, 3, 8]
    p = torch.nn.Parameter(torch.rand(5, dtype=torch.float32) * 2 - 1)
    params0 = floats(p)
    opt = torch.optim.SGD([p], lr=0.1)
    scaler = torch.amp.GradScaler('cpu', init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                                  growth_interval=3)
    unscaled, scales, params, stepped = [], [], [], []
    for k in range(steps):
        g = (torch.rand(5, dtype=torch.float32) * 2 - 1) * 1e-3
        unscaled.append(floats(g))
        opt.zero_grad(set_to_none=True)
        scaler.scale((p * g).sum()).backward()  # grad = g * scale, exact (a power of two)
        if k in overflow:
            with torch.no_grad():
                p.grad[1] = float('inf')
        before = p.detach().clone()
        scaler.step(opt)
        scaler.update()
        stepped.append(not torch.equal(before, p.detach()))
        scales.append(scaler.get_scale())
        params.append(floats(p))
    return {'init_scale': 2.0 ** 16, 'growth_interval': 3, 'lr': 0.1, 'params0': params0, 'unscaled': unscaled,
            'overflow': overflow, 'scales': scales, 'params': params, 'stepped': stepped}


def main():
    doc = {'torch': torch.__version__, 'schedules': schedules(), 'optimizers': optimizers(), 'clip': clipping(),
           'grad_scaler': grad_scaler()}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')
    print(f'wrote {OUT} (torch {torch.__version__})')


if __name__ == '__main__':
    main()
