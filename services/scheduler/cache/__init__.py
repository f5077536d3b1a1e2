"""The scheduler's cache, as upstream's pkg/scheduler/backend/cache: `cache` (assumed and
bound pods per node), `snapshot` (the per-cycle view), `node_tree` (zone-interleaved node
order), `columns` (the node columns the row plugins read) and `equivalence` (pod equivalence
signatures).
"""
