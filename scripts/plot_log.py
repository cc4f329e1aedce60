#!/usr/bin/env python3
"""Draws a training log (train/TrainingLog.h: CSV or JSON lines, as fashion_mnist --log writes)
to a PNG: loss, accuracy, learning rate and loss scale against the step, one panel each (panels
with no values are left out). Epoch records (and samples/gpt's held-out "eval" records) are
drawn as lines with markers, step records as a thin line. matplotlib is needed only here, at run time.

    scripts/plot_log.py run.csv [--out run.png] [--title TEXT]
"""
import argparse
import csv
import json
import sys


def read_log(path):
    """The records as dicts of floats (None where empty), with 'kind' a string."""
    rows = []
    with open(path, newline="") as f:
        if path.endswith(".jsonl") or path.endswith(".json"):
            for line in f:
                if line.strip():
                    rows.append(json.loads(line))
        else:
            for r in csv.DictReader(f):
                rows.append({k: (v if k == "kind" else (float(v) if v not in ("", None) else None)) for k, v in r.items()})
    return rows


def series(rows, kind, key):
    pts = [(r["step"], r[key]) for r in rows if r.get("kind") == kind and r.get(key) is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--out", help="the PNG (default: the log's name with .png)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args(argv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_log.py: matplotlib is needed to draw (pip install matplotlib)", file=sys.stderr)
        return 2
    rows = read_log(a.log)
    if not rows:
        print(f"plot_log.py: {a.log} holds no records", file=sys.stderr)
        return 1
    panels = [("loss", "loss"), ("accuracy", "test accuracy"), ("lr", "learning rate"), ("loss_scale", "loss scale")]
    panels = [p for p in panels if any(r.get(p[0]) is not None for r in rows)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.4 * len(panels)), sharex=True, squeeze=False)
    for ax, (key, label) in zip(axes[:, 0], panels):
        xs, ys = series(rows, "step", key)
        if xs:
            ax.plot(xs, ys, color="C0", linewidth=0.8, alpha=0.6, label="steps")
        xs, ys = series(rows, "epoch", key)
        if xs:
            ax.plot(xs, ys, color="C1", marker="o", label="epochs")
        # samples/gpt's held-out evaluations (kind "eval")
        xs, ys = series(rows, "eval", key)
        if xs:
            ax.plot(xs, ys, color="C2", marker="s", label="held-out")
        ax.set_ylabel(label)
        if key in ("loss_scale",):
            ax.set_yscale("log", base=2)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("step")
    axes[0, 0].legend(loc="best", fontsize="small")
    fig.suptitle(a.title or a.log)
    fig.tight_layout()
    out = a.out or a.log.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=120)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
