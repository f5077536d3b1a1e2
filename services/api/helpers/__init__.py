"""Component helpers, as upstream's k8s.io/component-helpers and the pod utilities every
component shares: words the scheduler, kubelets, controllers and the apiserver all use.

- scheduling: `resources` (pod requests), `taints` (toleration matching), `nodeaffinity`
  (node selectors, required node affinity), `hostports`, `podgroups` (the PodGroup label and
  phases), `wellknown` (labels, taint keys);
- status and reporting: `conditions` (pod conditions), `events` (core/v1 Events as the
  recorder writes them), `disruption` (PodDisruptionBudget selection, pod health, the
  DisruptionAllowed condition), `fencing` (the fencing token);
- the hollow kubelet's pod annotations: `usage` (`kubera.io/usage`) and `stages`
  (`kubera.io/stages`).

It builds on machinery/ and is below printers/.
"""
