"""The project's tools: the GPU runbook (:mod:`tools.gpu`, run as ``tools/gpu_run.py``), the NVRTC
resource table (``tools/nvrtc_resources.py``) and the GPU tests' recorder (``tools/gpu_check.py``)."""
