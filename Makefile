# blkstack: one command runs every test.
#   make test      Rust tests, then build and install the Python package (editable, with the
#                  Ray extra the sweep tests use), then its tests
#   make install   build and install the Python package
#   make validate     the validation suite: every validate/scenarios/ scenario on
#                     real Debian 5.10, 6.1, 6.12 and 7.2 kernels under qemu, compared
#                     with blkstack (about 10 minutes once the downloads are cached)
#   make validate-ci  the suite's CI subset (a few scenarios on 6.1, one on 6.12;
#                     .ci/run runs it after make test)
#   make validate-deps  install what validation needs (qemu, a C compiler, a static libc, nbdkit)

PYTHON ?= python3
CARGO ?= cargo
SUDO ?= $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: test install validate validate-ci validate-deps

test:
	$(CARGO) test --quiet
	$(PYTHON) -m pip install -q -e '.[test,ray]'
	$(PYTHON) -m pytest -q

install:
	$(PYTHON) -m pip install .

validate-deps:
	@command -v qemu-system-x86_64 >/dev/null 2>&1 && command -v cc >/dev/null 2>&1 && \
	  command -v nbdkit >/dev/null 2>&1 && [ -e /usr/lib/x86_64-linux-gnu/libc.a ] || \
	  { $(SUDO) apt-get update -qq && \
	    $(SUDO) apt-get install -y -qq --no-install-recommends qemu-system-x86 gcc libc6-dev nbdkit </dev/null; }

validate: validate-deps
	BLKSTACK_VALIDATE=full $(PYTHON) -m pytest -q -rA tests/python/test_validate_suite.py

validate-ci: validate-deps
	BLKSTACK_VALIDATE=ci $(PYTHON) -m pytest -q -rA tests/python/test_validate_suite.py
