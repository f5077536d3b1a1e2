"""The scheduling queue, as upstream's pkg/scheduler/backend/queue: `scheduling_queue`
(active, backoff and unschedulable pods; queueing hints), `heap`, `events` (the cluster
events that move pods between queues) and `nomination` (nominated pods and their nodes).
"""
