"""apimachinery, as upstream's k8s.io/apimachinery: how objects are named, encoded, matched
and patched, below every other part of services/api/.

- objects: `kinds` (the kinds table), `codec` (JSON/YAML <-> protobuf, with `zerovalues`: the
  fields upstream always writes), `meta` (object keys), `errors` (ApiError and its
  subclasses), `names`, `quantity`, `duration`, `yamlload`, and `limits` (the limits every
  input meets: nesting depth, batch items, request bytes);
- selection: `labels` (label selectors), `fields` (field selectors);
- patching and apply: `patch` (JSON merge patch), `strategicpatch`, `patching` (the patch
  verbs), `fieldpath`, `listtypes` (list merge strategies), `fieldmanager` (server-side
  apply's managed fields).

It imports nothing else of services/api/ (helpers/ and printers/ build on it).
"""
