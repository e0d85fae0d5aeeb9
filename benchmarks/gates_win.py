"""The long-lag recall task on which a gate is seen winning (notebook 09, section 5).

    OMP_NUM_THREADS=1 python benchmarks/gates_win.py                 # writes the shipped result
    OMP_NUM_THREADS=1 python benchmarks/gates_win.py --seeds 0 1 2 --out /tmp/win.json --models ''

Trains the scratch RNN, GRU and LSTM of `d2lmini.recall.RECALL_CELLS` (about 5,300 parameters
each) on the recall source at lag 30 (`d2lmini.recall.RecallSource`), with the settings of
`d2lmini.recall.RECALL_SETTINGS`, and records each cell's echo loss in bits on the validation
part every 100 minibatches. At the end it measures, once, the echo loss and the perplexity on
the test part (drawn with its own seed, never used to choose anything). It writes the result as
JSON (`d2lmini/data/gates_win.json`, which notebook 09 reads and whose first points it
reproduces) and the first seed's trained models (`d2lmini/data/gates_win_models.pt`, whose
forget gates and Jacobians notebook 09 measures).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

from d2lmini.recall import (
    RECALL_CELLS,
    RECALL_EVERY,
    RECALL_SETTINGS,
    SHIPPED_MODELS,
    SHIPPED_RESULT,
    RecallSource,
    echo_bits,
    recall_data,
    shipped_result,
    train_recall,
)
from d2lmini.train import evaluate_perplexity


def run_cell(cell, source, data, minibatches, seed):
    """Train one cell and return (model, its row of the result)."""
    start = time.perf_counter()
    model, curve = train_recall(cell, source, data, minibatches, seed)
    seconds = time.perf_counter() - start
    cue = data["vocab"].indices(source.cue)[0]
    row = {"cell": cell, "seed": seed, "hiddens": RECALL_CELLS[cell][1],
           "parameters": sum(p.numel() for p in model.parameters()),
           "curve_minibatches": [RECALL_EVERY * (i + 1) for i in range(len(curve))],
           "valid_echo_bits": [round(v, 6) for v in curve],
           "test_echo_bits": round(echo_bits(model, data["test"], cue), 6),
           "test_perplexity": round(evaluate_perplexity(model, data["test"], data["valid"]), 6),
           "seconds": round(seconds, 1)}
    print(f"{cell:5} seed {seed}: echo {row['valid_echo_bits'][-1]:.3f} bits (valid), "
          f"{row['test_echo_bits']:.3f} (test), perplexity {row['test_perplexity']:.3f} (test), "
          f"{seconds:.0f} s", flush=True)
    return model, row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lag", type=int, default=30)
    parser.add_argument("--minibatches", type=int, default=3000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--cells", nargs="+", default=list(RECALL_CELLS), choices=list(RECALL_CELLS))
    parser.add_argument("--out", default=str(SHIPPED_RESULT))
    parser.add_argument("--append", action="store_true",
                        help="add these runs (and models) to those already in --out (and --models)")
    parser.add_argument("--models", default=str(SHIPPED_MODELS),
                        help="where the first seed's models go ('' for nowhere)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    source = RecallSource(lag=args.lag)
    data = recall_data(source)
    rows, models = [], {}
    for seed in args.seeds:
        for cell in args.cells:
            model, row = run_cell(cell, source, data, args.minibatches, seed)
            rows.append(row)
            if seed == args.seeds[0]:
                models[cell] = {name: p.detach().cpu() for name, p in model.state_dict().items()}
    command = "OMP_NUM_THREADS=1 python benchmarks/gates_win.py " + " ".join(argv or sys.argv[1:])
    for row in rows:
        row["command"] = command
    if args.append and Path(args.out).exists():
        rows = shipped_result(args.out)["runs"] + rows
        command = " && ".join(dict.fromkeys(row["command"] for row in rows))
    if args.append and args.models and Path(args.models).exists():
        models = {**torch.load(args.models, weights_only=True), **models}
    result = {"command": command,
              "torch": torch.__version__, "source": {"keys": source.keys, "noise": source.noise,
                                                      "cue": source.cue, "lag": source.lag},
              "minibatches": args.minibatches, "settings": RECALL_SETTINGS, "every": RECALL_EVERY,
              "floor_bits_per_char": round(source.floor_bits(), 6),
              "forgetful_echo_bits": round(source.forgetful_bits(), 6), "runs": rows}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    if args.models:
        torch.save(models, args.models)
    print(f"floor {2 ** source.floor_bits():.3f} (perplexity), "
          f"forgotten key {source.forgetful_bits():.0f} bits; "
          f"wrote {args.out}" + (f" and {args.models}" if args.models else ""))
    assert all(math.isfinite(row["test_echo_bits"]) for row in rows)


if __name__ == "__main__":
    main()
