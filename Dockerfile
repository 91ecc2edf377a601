# One image for the API, the worker and the `mandatum` CLI (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what `pip install .` needs (never .venv/ or var/, which holds development secrets).
# A new top-level package listed in pyproject.toml must be added here too.
COPY pyproject.toml README.md ./
COPY api ./api
COPY workflows ./workflows
COPY activities ./activities
COPY services ./services
COPY orchestration ./orchestration
COPY adapters ./adapters
COPY wire ./wire
COPY store ./store
COPY core ./core
COPY cli ./cli
COPY trust ./trust
COPY policy ./policy
COPY worker ./worker

RUN pip install . \
    && useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin mandatum \
    && mkdir -p /app/var \
    && chown mandatum /app/var \
    && chmod 0700 /app/var

USER mandatum
ENV MANDATUM_ENVIRONMENT=production \
    MANDATUM_VAR_DIR=/app/var

EXPOSE 8000
CMD ["uvicorn", "api.app:serve_app", "--factory", "--host", "0.0.0.0", "--port", "8000", "--no-access-log", "--no-server-header"]
