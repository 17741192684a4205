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
