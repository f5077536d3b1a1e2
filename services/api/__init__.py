"""The shared Kubernetes vocabulary, below every component (as upstream's k8s.io/api,
apimachinery and component-helpers): any component may import it, it imports no component.

- objects: `kinds` (the kinds table), `codec` (JSON/YAML <-> protobuf), `meta` (object
  keys), `conditions`, `disruption` (PodDisruptionBudget selection, pod health, the
  DisruptionAllowed condition), `errors` (ApiError and its subclasses), `limits`, `names`,
  `quantity`, `duration`, `labels` (selectors), `validation`, `yamlload`;
- scheduling words: `resources` (pod requests), `taints` (toleration matching),
  `nodeaffinity` (node selectors, required node affinity), `wellknown` (labels, taint keys);
- kubera's own: `fencing` (the fencing token), `patch` (JSON merge patch), `usage` and
  `stages` (the `kubera.io/usage` and `kubera.io/stages` pod annotations).

The etcd key layout is services/storage/keys.py; timestamps are services/clock.py.
"""
