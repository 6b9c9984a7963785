# syntax=docker/dockerfile:1
# nvcre-hooks: the Metacontroller hook server (gunicorn + Flask), as a small non-root image.
#   docker build -t nvcre-hooks:0.1.0 .
# The base image is pinned by full version; pin it by digest too in your registry mirror if you can.

# ---- build: install the pinned runtime dependencies into a virtualenv --------------------------
FROM python:3.11.13-slim-bookworm AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
# Every runtime dependency ships binary wheels for this platform: no compiler is needed.
RUN /opt/venv/bin/pip install --no-cache-dir -r /tmp/requirements.txt

# ---- runtime: the virtualenv and the two packages, nothing else ---------------------------------
FROM python:3.11.13-slim-bookworm AS runtime
LABEL org.opencontainers.image.title="nvcre-hooks" \
      org.opencontainers.image.description="Metacontroller hooks for NVCRE Jobs (multi-node GPU training as JobSets)" \
      org.opencontainers.image.version="0.1.0"
# MALLOC_ARENA_MAX: glibc's malloc arenas for the worker's threads, 2 instead of up to 8 per core
# (hooks/server/config.py, MALLOC_ARENA_MAX: 12 MiB less per hooks pod at 8,000 pods, BENCHMARKS.md §4).
# MALLOC_MMAP_THRESHOLD_: blocks of 128 KiB and more get pages of their own and give them back when
# freed (hooks/server/config.py, MALLOC_MMAP_THRESHOLD: the freed list pages no longer stay resident).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH \
    PORT=8080 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=build /opt/venv /opt/venv
COPY hooks/ /app/hooks/
COPY podread/ /app/podread/
# Byte-compile now: the root filesystem is read-only at run time (PYTHONDONTWRITEBYTECODE is set).
RUN python -m compileall -q /app/hooks /app/podread
# A numeric non-root user (the Deployment's runAsUser), so that runAsNonRoot can be verified.
USER 65532:65532
# 8080: the hooks (and probes); 9090: /metrics, served by the gunicorn master (NVCRE_METRICS_PORT).
EXPOSE 8080 9090
CMD ["gunicorn", "--config", "hooks/server/gunicorn.conf.py", "--bind", "0.0.0.0:8080", "hooks.wsgi:production_app()"]
