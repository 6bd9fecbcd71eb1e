# blkstack: one command runs every test.
#   make test      Rust tests, then build and install the Python package (editable), then its tests
#   make install   build and install the Python package

PYTHON ?= python3
CARGO ?= cargo

.PHONY: test install

test:
	$(CARGO) test --quiet
	$(PYTHON) -m pip install -q -e '.[test]'
	$(PYTHON) -m pytest -q

install:
	$(PYTHON) -m pip install .
