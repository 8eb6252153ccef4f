"""``duckrank fuse RUN... -o FUSED``: the command line's ``fuse`` (docs/fusion.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from duckrank.fusion import METHODS, NORMALISATIONS
from duckrank.reports.command_line import memory_limit_option


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _param(text: str) -> tuple[str, int | float]:
    name, equals, value = text.partition("=")
    if not equals or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, _number(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{name}'s value must be a number, got {value!r}") from None


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Add ``fuse`` to the ``duckrank`` command's subparsers."""
    parser = commands.add_parser(
        "fuse", description="Fuse runs into one (rank fusion, docs/fusion.md): every method of "
        "ranx 0.3.21 as DuckDB SQL. Runs and the output are TREC run files or Parquet (by "
        "extension); each run is named by its file's stem.")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="the runs to fuse (two or more)")
    parser.add_argument("-o", "--output", required=True, metavar="FUSED",
                        help="the fused run: Parquet for .parquet, else a TREC run file")
    parser.add_argument("--method", default="wsum", choices=[m.name for m in METHODS],
                        help="the fusion method, as ranx names it (default wsum, ranx's)")
    parser.add_argument("--norm", default="min-max", choices=[n.name for n in NORMALISATIONS],
                        help="the score normalisation per run and query (default min-max, "
                        "ranx's)")
    parser.add_argument("--param", action="append", type=_param, default=[], metavar="NAME=VALUE",
                        help="a parameter of the method: --param k=60 (rrf), --param phi=0.8")
    parser.add_argument("--weights", type=float, nargs="+", default=None, metavar="W",
                        help="one weight per run, in the order of the runs (wsum, wmnz, mixed, "
                        "w_bordafuse, w_condorcet)")
    parser.add_argument("--qrels", default=None,
                        help="judgments to train a supervised method on (posfuse, probfuse, "
                        "segfuse, slidefuse, bayesfuse, mapfuse)")
    parser.add_argument("--n-segments", type=int, default=None,
                        help="probfuse's number of segments (trained with --qrels)")
    memory_limit_option(parser)
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from duckrank.reports.fusion.api import fuse, fusion_connection

    params: dict[str, Any] = dict(args.param)
    if args.weights is not None:
        params["weights"] = args.weights
    if args.qrels is not None:
        from duckrank.reports.fusion.training import train_fusion

        # Trained under --memory-limit too (checked here, before the training's work).
        training = train_fusion(args.runs, args.qrels, args.method,
                                connection=fusion_connection(None, args.memory_limit),
                                **({} if args.n_segments is None
                                   else {"n_segments": args.n_segments}))
        params.update(training.params)
        sys.stdout.write(f"{args.method} trained on {training.description()}\n")
    norm = None if args.norm == "none" else args.norm
    path = fuse(args.runs, args.method, norm, params, output=args.output,
                memory_limit=args.memory_limit)
    sys.stdout.write(f"wrote {path}\n")
    return 0
