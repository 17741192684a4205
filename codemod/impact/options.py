"""Choices of the impact model that the command line offers: ninja's scheduling policies and the
rows of steps[] listed by default. NOTE: no numpy here, so that building the parser of every
`codemod` command stays cheap."""

# policy -> ninja versions it models
POLICIES = {
    "1.11": "ninja <= 1.11: ready edges in manifest order (edge id)",
    "1.12": "ninja 1.12-1.13: critical path with every non-phony edge weighing 1, ties to lower id",
    "master": "ninja master (PR #2686): critical path weighted by previous durations, ties to lower id",
}
POLICY_FOR_LOG_VERSION = {5: "1.11", 6: "1.12", 7: "1.12"}

STEPS_LISTED = 1000  # rows of steps[] by default (the longest steps); --all-steps lists every one


def add_deprecated_jobs(parser) -> None:
    """`-j/--jobs`, the old spelling of `--ninja-jobs` in `impact` and `apply`: still read, with a
    warning, until `-j` can mean the parallelism of codemod's own work there as everywhere else."""
    import argparse

    parser.add_argument("-j", "--jobs", dest="old_jobs", type=int, default=None, metavar="N", help=argparse.SUPPRESS)


def ninja_jobs(args):
    """`--ninja-jobs`, or the deprecated `-j` with a one-line warning on stderr; None when neither."""
    import sys

    from ..errors import UsageError

    old = getattr(args, "old_jobs", None)
    if old is None:
        return args.ninja_jobs
    if args.ninja_jobs is not None:
        raise UsageError("-j and --ninja-jobs both given", hint="-j is the old spelling of --ninja-jobs; keep one")
    print(f"codemod: warning: `-j {old}` as ninja's job count is deprecated; use `--ninja-jobs {old}` "
          "(-j will mean codemod's own parallelism, as in analyze and verify)", file=sys.stderr)
    return old
