# One image for the control process and the Ray nodes that run the shards.
#   docker build -t optimist:latest .
FROM python:3.11-slim

RUN useradd --create-home --uid 1000 optimist
WORKDIR /opt/optimist
COPY pyproject.toml setup.py README.md ./
COPY cluster cluster
COPY dispatcher dispatcher
COPY shards shards
COPY binder binder
COPY optimist optimist
RUN pip install --no-cache-dir . && rm -rf /root/.cache

USER 1000
ENTRYPOINT ["optimist"]
CMD ["--help"]
