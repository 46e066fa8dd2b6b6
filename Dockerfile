# CPU image that serves the demo study. Data lives in the /data volume.
# (Not built in CI here: these machines have no Docker engine.)
FROM python:3.11-slim

RUN apt-get update && apt-get install -y --no-install-recommends espeak-ng sox curl fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 app
WORKDIR /app
COPY requirements.txt .
# the CPU build of torch, so the image does not pull the multi-GB CUDA build
RUN pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/cpu -r requirements.txt
COPY --chown=app:app . .

ENV TRADLAB_DB=/data/tradlab.db TRADLAB_MEDIA=/data/media TRADLAB_HOST=0.0.0.0 TRADLAB_PORT=7860
RUN mkdir -p /data && chown app:app /data
VOLUME /data
USER app
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s CMD curl -fs http://127.0.0.1:7860/ || exit 1
CMD ["python", "app.py", "--demo"]
