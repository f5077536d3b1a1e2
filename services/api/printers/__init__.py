"""Table printing, as upstream's pkg/printers: `printers` (the columns of every built-in
kind, what `kubectl get` and the apiserver's Table responses show), `resource` (the
resource.k8s.io kinds' columns) and `columns` (column types and cell helpers).
"""
