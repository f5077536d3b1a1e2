"""kubera.experiment.measure: what a run measures: the collector, its series and histograms, the results model, DataItems."""
