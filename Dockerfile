# syntax=docker/dockerfile:1
# Two images of the app; the data (SQLite database, media, model downloads) live in the /data volume.
#   CPU (the default, last stage):  docker build -t tradlab .
#   CUDA (a GPU machine):           docker build --target cuda -t tradlab:cuda .
#   run:  docker run -d -p 7860:7860 -v tradlab-data:/data -e TRADLAB_ADMIN_PASSWORD=... tradlab
#         (add --gpus all for tradlab:cuda)
# Build arguments:
#   TORCH_INDEX_URL  the PyTorch wheel index torch comes from (cpu target: the CPU build, which keeps
#                    the image free of the multi-GB CUDA libraries; cuda target: the CUDA 13.0 build,
#                    as torch 2.13.0 on PyPI; the wheels bring their own CUDA libraries, so the
#                    host needs only an NVIDIA driver that supports that CUDA release)
#   CUDA_IMAGE       the cuda target's base image (an nvidia/cuda runtime image on Ubuntu 22.04,
#                    which packages Python 3.11)
#   APT_EXTRA        more Debian packages, e.g. "chromium" for PNG copies of the analysis figures
#                    (kaleido renders them with Chromium; without it the figures are HTML only)
# The app needs espeak-ng (speech synthesis for Portuguese and the fallback voice), ffmpeg (the fallback
# decoder of WebM/Opus recordings when PyAV is missing) and fonts-dejavu-core (DA text images).
ARG CUDA_IMAGE=nvidia/cuda:13.0.0-runtime-ubuntu22.04

# ---- cuda: an NVIDIA CUDA runtime image with Ubuntu's Python 3.11 in a virtual environment ----------
FROM ${CUDA_IMAGE} AS cuda
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu130
ARG APT_EXTRA=""
ENV DEBIAN_FRONTEND=noninteractive PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends python3.11 python3.11-venv \
        ca-certificates espeak-ng ffmpeg fonts-dejavu-core ${APT_EXTRA} \
    && rm -rf /var/lib/apt/lists/* \
    && python3.11 -m venv /opt/venv
RUN useradd --create-home --uid 1000 --user-group app && mkdir -p /data && chown 1000:1000 /data
WORKDIR /app
COPY requirements.txt ./
# torch first, at requirements.txt's pin, with TORCH_INDEX_URL as an extra index (its 2.13.0+cpu or
# +cu130 wheel outranks PyPI's plain 2.13.0, and requirements.txt's torch==2.13.0 then finds it
# installed); then the rest; then unbabel-comet and mistral-common without their dependencies, as
# `make setup` does (their metadata pin transformers<5 and numpy<2, numpy<2.4: see the Makefile).
# hadolint ignore=SC2046
RUN pip install --extra-index-url "${TORCH_INDEX_URL}" $(grep -oE '^torch==[^ #]+' requirements.txt) \
    && pip install -r requirements.txt \
    && pip install --no-deps unbabel-comet==2.2.7 mistral-common==1.13.1
# the code stays root-owned: the app user writes only to /data (and /tmp)
COPY . .
ENV TRADLAB_DB=/data/tradlab.db TRADLAB_MEDIA=/data/media HF_HOME=/data/huggingface \
    TRADLAB_HOST=0.0.0.0 TRADLAB_PORT=7860 TRADLAB_DEVICE=auto GRADIO_ANALYTICS_ENABLED=False
VOLUME /data
USER 1000:1000
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/' % os.environ.get('TRADLAB_PORT', '7860'), timeout=8)"]
CMD ["python", "app.py", "--demo"]

# ---- cpu (the default target): Debian bookworm's slim Python 3.11 image ------------------------------
FROM python:3.11-slim-bookworm AS cpu
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG APT_EXTRA=""
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends \
        espeak-ng ffmpeg fonts-dejavu-core ${APT_EXTRA} \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --create-home --uid 1000 --user-group app && mkdir -p /data && chown 1000:1000 /data
WORKDIR /app
COPY requirements.txt ./
# hadolint ignore=SC2046
RUN pip install --extra-index-url "${TORCH_INDEX_URL}" $(grep -oE '^torch==[^ #]+' requirements.txt) \
    && pip install -r requirements.txt \
    && pip install --no-deps unbabel-comet==2.2.7 mistral-common==1.13.1
# the code stays root-owned: the app user writes only to /data (and /tmp)
COPY . .
ENV TRADLAB_DB=/data/tradlab.db TRADLAB_MEDIA=/data/media HF_HOME=/data/huggingface \
    TRADLAB_HOST=0.0.0.0 TRADLAB_PORT=7860 TRADLAB_DEVICE=cpu GRADIO_ANALYTICS_ENABLED=False
VOLUME /data
USER 1000:1000
EXPOSE 7860
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/' % os.environ.get('TRADLAB_PORT', '7860'), timeout=8)"]
CMD ["python", "app.py", "--demo"]
