"""apimachinery, as upstream's k8s.io/apimachinery: how objects are named, encoded, matched
and patched, below every other part of services/api/.

- objects: `kinds` (the kinds table), `codec` (JSON/YAML <-> protobuf, with `zerovalues`: the
  fields upstream always writes), `meta` (object keys), `errors` (ApiError and its
  subclasses), `names`, `quantity`, `duration`, `yamlload`, and `limits` (the limits every
  input meets: nesting depth, batch items, request bytes);
- any object: `kubeobject` (the KubeObject protocol: the type and object meta of every kind,
  and the checked narrowings from a Message to it or to its kind's class);
- selection: `labels` (label selectors), `fields` (field selectors), `listoptions` (what a
  list or watch asks for);
- patching and apply: `patch` (JSON merge patch), `strategicpatch`, `patching` (the patch
  verbs), `fieldpath`, `listtypes` (list merge strategies), `fieldmanager` (server-side
  apply's managed fields).

It imports nothing else of services/api/ (helpers/ and printers/ build on it).
"""
