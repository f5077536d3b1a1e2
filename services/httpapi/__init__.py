"""The Kubernetes HTTP API beside kubera's gRPC API: discovery, OpenAPI, JSON verbs, watch, Table."""
