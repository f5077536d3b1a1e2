"""The HTTP half of the fuzz at a large size with a token file: 3,000 inputs per shape as the
admin, 1,000 wrong tokens, 2,000 bent requests as a node (docs/results/issue-15/fuzz-http-12000.txt)."""

import logging, time
from kubera.fuzz import harness, http_inputs

errors = harness.ErrorLog()
root = logging.getLogger()
root.addHandler(errors)
for h in [h for h in root.handlers if h is not errors]:
    root.removeHandler(h)
TOK = 'fuzz-admin,kubera-admin,admin,"system:masters"\nnode-tok,system:node:n1,n1,"system:nodes"\n'
server = harness.ServerThread(
    config=harness.FUZZ_API_CONFIG, http=True, tokens=TOK, record_writes=True
)
server.start()
tally = harness.Tally()
try:
    c = http_inputs.HttpCaller(server.url, errors, token="fuzz-admin", writes=server.writes)
    seeded = http_inputs.seed_http(c)
    t = time.monotonic()
    for shape in ("raw", "random", "crafted"):
        http_inputs.fuzz_http(c, tally, shape, examples=3000)
    http_inputs.fuzz_http(c, tally, "tokens", examples=1000)
    node = http_inputs.HttpCaller(server.url, errors, token="node-tok", writes=server.writes)
    http_inputs.fuzz_http(node, tally, "crafted", examples=2000)
    el = time.monotonic() - t
finally:
    server.stop()
rep = tally.report().splitlines()
print(rep[0])
print("\n".join(l for l in rep if not l.startswith("  ")))
import collections

codes = collections.Counter()
for m, cs in tally.codes.items():
    codes.update(cs)
print("status counts:", dict(sorted(codes.items())))
print(
    f"{tally.total} inputs in {el:.0f} s ({seeded} seed objects), with a token file: admin 9,000, wrong tokens 1,000, a node's token 2,000"
)
