"""The HTTP half of the fuzz at a large size, with a token file: 3,000 inputs per shape as
the admin, 1,000 wrong tokens, 2,000 bent requests as a node. Its printout is
docs/results/issue-15/fuzz-http-12000.txt. Run: .venv/bin/python scripts/fuzz_http_large.py"""

from __future__ import annotations

import collections
import logging
import time

from kubera.fuzz import harness, http_inputs

TOKENS = (
    'fuzz-admin,kubera-admin,admin,"system:masters"\nnode-tok,system:node:n1,n1,"system:nodes"\n'
)


def main() -> None:
    errors = harness.ErrorLog()
    root = logging.getLogger()
    root.addHandler(errors)
    for h in [h for h in root.handlers if h is not errors]:
        root.removeHandler(h)
    server = harness.ServerThread(
        config=harness.FUZZ_API_CONFIG, http=True, tokens=TOKENS, record_writes=True
    )
    server.start()
    tally = harness.Tally()
    try:
        admin = http_inputs.HttpCaller(server.url, errors, token="fuzz-admin", writes=server.writes)
        seeded = http_inputs.seed_http(admin)
        start = time.monotonic()
        for shape in ("raw", "random", "crafted"):
            http_inputs.fuzz_http(admin, tally, shape, examples=3000)
        http_inputs.fuzz_http(admin, tally, "tokens", examples=1000)
        node = http_inputs.HttpCaller(server.url, errors, token="node-tok", writes=server.writes)
        http_inputs.fuzz_http(node, tally, "crafted", examples=2000)
        elapsed = time.monotonic() - start
    finally:
        server.stop()
    report = tally.report().splitlines()
    print("\n".join(line for line in report if not line.startswith("  ")))
    codes: collections.Counter[str] = collections.Counter()
    for counted in tally.codes.values():
        codes.update(counted)
    print("status counts:", dict(sorted(codes.items())))
    print(f"{tally.total} inputs in {elapsed:.0f} s ({seeded} seed objects)")


if __name__ == "__main__":
    main()
