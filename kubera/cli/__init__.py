"""The `kubera` command line: `main.py` builds the parser from one module per noun or verb
group (cluster up/down, objects, nodes, scheduling, chaos, check) and the benches of
`kubera.bench`."""
