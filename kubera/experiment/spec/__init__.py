"""kubera.experiment.spec: the experiment file → frozen dataclasses: ops, templates, test cases, traces."""
