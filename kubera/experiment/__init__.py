"""Experiments: upstream scheduler_perf's config files, run against a real kubera.

A researcher takes a file from kubernetes' test/integration/scheduler_perf/ (test cases with a
`workloadTemplate` of ops and `workloads` with `params`), optionally adds kubera's own fields
(`cluster:` settings, `sweep:`, the `chaos`, `check` and `traceReplay` opcodes), and runs it with
`kubera experiment run FILE`.

    config.py     the file → frozen dataclasses (`load`, `plan`, `ConfigError`), sweeps
    cases.py      TestCase, Workload, ClusterSettings, Experiment (re-exported by config)
    ops.py        one frozen dataclass per opcode, with its fields typed and documented
    parse_ops.py  the ops' YAML fields and upstream's validity rules; planning one op
    fields.py     typed field readers whose errors name `<file>: <where>`
    templates.py  pod/node/object templates: YAML with upstream's Go text/template actions
    trace.py      Alibaba openb pod/node CSVs (cluster-trace-gpu-v2023) and a synthetic sample
    runner.py … execution, measurements, results and the report (other modules)
"""
