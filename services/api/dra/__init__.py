"""Dynamic Resource Allocation vocabulary shared by the apiserver's validation, the
scheduler's DynamicResources plugin, the resourceclaim controller, the hollow kubelets and
the CLI (upstream's k8s.io/dynamic-resource-allocation and component-helpers):

* ``claims``: which ResourceClaim a pod's entry names, and who a claim is reserved for;
* ``cel``: device selectors in CEL, compiled once and evaluated per device, with
  Kubernetes' CEL libraries (quantity, semver) and its cost limit;
* ``pools``: which ResourceSlices (newest generation, complete) reach a node;
* ``allocator``: structured allocation of a node's devices to claims (pure logic), and
  ``results``: the AllocationResult it answers and why a request did not fit.
"""
