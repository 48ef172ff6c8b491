# One image for every service of compose.yaml: the harness (serve, worker, run) and the
# reference agent, installed from this checkout with the base dependencies only.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY harness ./harness
COPY channels ./channels
COPY agents ./agents
RUN pip install --no-cache-dir .
# The bundled suite, and the project file that names its agent ([tool.harness]).
COPY scenarios ./scenarios

RUN useradd --create-home harness && mkdir /reports && chown harness /reports
USER harness
EXPOSE 8000 8080
CMD ["harness", "--help"]
