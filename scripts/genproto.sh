#!/usr/bin/env bash
# Regenerates protos/kubera/v1/*_pb2*.py from the .proto files. The output is committed;
# CI runs this and fails when the tree changes (drift).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
rm -f protos/kubera/v1/*_pb2.py protos/kubera/v1/*_pb2.pyi protos/kubera/v1/*_pb2_grpc.py protos/kubera/v1/descriptors.binpb
"$PY" -m grpc_tools.protoc -I . \
  --python_out=. --pyi_out=. --grpc_python_out=. \
  protos/kubera/v1/*.proto
# The .proto comments as data (services/httpapi/openapi.py reads them for OpenAPI
# descriptions): a descriptor set with source info, committed like the code.
"$PY" -m grpc_tools.protoc -I . --include_source_info \
  --descriptor_set_out=protos/kubera/v1/descriptors.binpb \
  protos/kubera/v1/*.proto
