"""The shared Kubernetes vocabulary, below every component (as upstream's k8s.io/api,
apimachinery and component-helpers): any component may import it, it imports no component.

- machinery/ (apimachinery): the kinds table, the codec (JSON/YAML <-> protobuf), object
  keys, errors, names, quantities and durations, label and field selectors, the input limits,
  YAML loading, merge and strategic merge patches, and server-side apply's field manager;
- helpers/ (component helpers): scheduling words (pod requests, taints and tolerations, node
  affinity, host ports, PodGroups, well-known labels), pod conditions, events, disruption
  budgets, the fencing token, and the hollow kubelet's `kubera.io/usage` and
  `kubera.io/stages` pod annotations;
- printers/: the `kubectl get` columns of every kind;
- validation/: the apiserver's validation of every kind;
- dra/: Dynamic Resource Allocation (claims, pools, CEL, the allocator).

machinery/ imports nothing else here; helpers/ builds on it, printers/ on both. The etcd key
layout is services/storage/keys.py; timestamps are services/clock.py.
"""
