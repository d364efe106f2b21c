"""`python -m cockpit_sim.engine serve MODEL_PATH ...`: one rank of a simulated vLLM lane."""

from __future__ import annotations

import os
import sys

from cockpit_sim.engine import args, runtime


def main() -> None:
    parsed = args.parse(sys.argv[1:])
    sys.exit(runtime.main(parsed, os.environ))


if __name__ == "__main__":
    main()
