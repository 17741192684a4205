"""Regenerate the expected impact documents in golden/impact/ (explicit; review the diff):

    cd tests && ../.venv/bin/python -m impact.regen_golden
"""

from __future__ import annotations

import os

from codemod.impact.command import dumps
from codemod.impact.predict import predict_migration

from .conftest import GOLDEN, REPO, TE_CSV, TE_LOG

CASES = {
    "te_sm90_j16/expected_remove_activation_cast.json": dict(
        log_path=TE_LOG, nvcc_time_paths=[TE_CSV], remove_globs=["activation/*.cu", "cast/*.cu"]),
}


def main() -> None:
    os.chdir(REPO)
    for rel, kwargs in CASES.items():
        (GOLDEN / rel).write_text(dumps(predict_migration(**kwargs)), encoding="utf-8")
        print(f"wrote golden/impact/{rel}")


if __name__ == "__main__":
    main()
