"""Experiments: upstream scheduler_perf's config files, run against a real kubera.

A researcher takes a file from kubernetes' test/integration/scheduler_perf/ (test cases with a
`workloadTemplate` of ops and `workloads` with `params`), optionally adds kubera's own fields
(`cluster:` settings, `sweep:`, the `chaos`, `check` and `traceReplay` opcodes), and runs it with
`kubera experiment run FILE`. `kubera bench NAME` runs examples/experiments/NAME.yaml the same
way, with its command-line flags mapped to the file's params.

The package is four stages; each imports only the stages before it (spec ← run → measure ←
output; run never imports output):

    spec/     the file → frozen dataclasses: config (`load`, `plan`, `ConfigError`), cases,
              ops, parse_ops, fields, templates, objects, trace (Alibaba openb CSVs)
    run/      a planned workload on a fresh kubera: runner, opexec, faults, replay, dra,
              progress, bench (`kubera bench NAME`: a named file with overrides)
    measure/  what a run measures: collect (the background loops), measures, histograms,
              model (RunResult, ExperimentResult), dataitems (upstream's DataItems and
              kubera's), cpu (CPU per pod per component), capacity (the capacity model)
    output/   what a run writes: results (results.json, series CSVs), plots, report
              (report.html), compare
"""
