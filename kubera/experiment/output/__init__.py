"""kubera.experiment.output: what a run writes: results.json and series, plots, report.html, comparisons."""
