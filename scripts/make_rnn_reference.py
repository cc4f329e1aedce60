"""Writes tests/data/nn/rnn_reference.safetensors: recurrent networks computed by PyTorch (CPU,
float64), so the nn recurrent modules are compared with an implementation written by others.
Run from the repository root: python3 scripts/make_rnn_reference.py

Each case <name> stores
  <name>.config   int64 [mode (0 relu, 1 tanh, 2 lstm, 3 gru), inputDim, hidden, numLayers,
                  bidirectional, batchFirst]
  <name>.lengths  int64 [batch] (variable-length cases only: pack_padded_sequence, enforce_sorted=False)
  <name>.input, .h0, .c0 (LSTM), .output, .hn, .cn (LSTM)
  <name>.param.<state_dict name>   the module's parameters, PyTorch's names
  <name>.gOut, .gHn, .gCn          the fixed random weights of the loss
                                   sum(output * gOut) + sum(hn * gHn) (+ sum(cn * gCn))
  <name>.grad.input, .grad.h0, .grad.c0, .grad.<state_dict name>   its gradients
and tests/data/nn/lstm_state_dict.safetensors is a PyTorch LSTM's state_dict exactly as
safetensors.torch.save_file writes it (the case "lstm_file" holds its input and outputs)."""
import torch
from safetensors.torch import save_file

torch.manual_seed(20261123)
out = {}
MODES = {"relu": 0, "tanh": 1, "lstm": 2, "gru": 3}


def rnd(*shape):
    return torch.rand(*shape, dtype=torch.float64) * 2 - 1


def make(mode, input_dim, hidden, layers, bidirectional, batch_first):
    common = dict(num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, dtype=torch.float64)
    if mode == "lstm":
        return torch.nn.LSTM(input_dim, hidden, **common)
    if mode == "gru":
        return torch.nn.GRU(input_dim, hidden, **common)
    return torch.nn.RNN(input_dim, hidden, nonlinearity=mode, **common)


def case(name, mode, input_dim, hidden, layers, bidirectional, batch_first, seq, batch, lengths=None):
    m = make(mode, input_dim, hidden, layers, bidirectional, batch_first)
    with torch.no_grad():  # a wider range than the default, so the cells leave their linear region
        for p in m.parameters():
            p.uniform_(-0.8, 0.8)
    dirs = 2 if bidirectional else 1
    x = rnd(*((batch, seq, input_dim) if batch_first else (seq, batch, input_dim))).requires_grad_()
    h0 = rnd(layers * dirs, batch, hidden).requires_grad_()
    c0 = rnd(layers * dirs, batch, hidden).requires_grad_()
    state = (h0, c0) if mode == "lstm" else h0
    if lengths is None:
        y, hn = m(x, state)
    else:
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first,
                                                         enforce_sorted=False)
        yp, hn = m(packed, state)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(yp, batch_first=batch_first, total_length=seq)
    cn = None
    if mode == "lstm":
        hn, cn = hn
    g_out, g_hn = rnd(*y.shape), rnd(*hn.shape)
    loss = (y * g_out).sum() + (hn * g_hn).sum()
    if cn is not None:
        g_cn = rnd(*cn.shape)
        loss = loss + (cn * g_cn).sum()
    loss.backward()
    rec = {
        "config": torch.tensor([MODES[mode], input_dim, hidden, layers, int(bidirectional), int(batch_first)]),
        "input": x.detach(), "h0": h0.detach(), "output": y.detach(), "hn": hn.detach(),
        "gOut": g_out, "gHn": g_hn, "grad.input": x.grad, "grad.h0": h0.grad,
    }
    if mode == "lstm":
        rec.update({"c0": c0.detach(), "cn": cn.detach(), "gCn": g_cn, "grad.c0": c0.grad})
    if lengths is not None:
        rec["lengths"] = torch.tensor(lengths, dtype=torch.int64)
    for pname, p in m.named_parameters():
        rec["param." + pname] = p.detach()
        rec["grad." + pname] = p.grad
    out.update({f"{name}.{k}": v.contiguous() for k, v in rec.items()})
    return m


for mode in ("relu", "tanh", "lstm", "gru"):
    # two layers, one direction; two layers, both directions, batch first
    case(f"{mode}_deep", mode, 4, 3, 2, False, False, seq=5, batch=3)
    case(f"{mode}_bi", mode, 3, 4, 2, True, True, seq=4, batch=2)
    # variable lengths, unsorted, with the full length not first
    case(f"{mode}_varlen", mode, 3, 3, 2, True, False, seq=6, batch=4, lengths=[3, 6, 1, 4])

m = case("lstm_file", "lstm", 5, 4, 2, False, False, seq=3, batch=2)
save_file({k: v.detach().contiguous() for k, v in m.state_dict().items()}, "tests/data/nn/lstm_state_dict.safetensors")
save_file(out, "tests/data/nn/rnn_reference.safetensors")
