"""kubera.experiment.run: running a planned workload on a fresh kubera: the runner, op execution, faults, replay."""
