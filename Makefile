# make demo / make test: each installs everything it needs on a fresh Debian machine (as root),
# then runs the demo / the whole suite.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEB_PACKAGES := ibsim-utils libumad2sim0 infiniband-diags opensm ibutils perftest python3-pyverbs \
	openssh-server slurmctld slurmd slurm-client prometheus iproute2 tmux openmpi-bin

.PHONY: install debs venv demo test lint typecheck unit bench clean

install: debs venv

# apt only runs when a package is missing, so a second run costs nothing.
debs:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

venv: $(BIN)/ibfab

$(BIN)/ibfab: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@# pyverbs is only packaged by Debian (PyPI's needs a full rdma-core build); expose just that package.
	@site=$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	if [ -d /usr/lib/python3/dist-packages/pyverbs ] && [ ! -e $$site/pyverbs ]; then \
		ln -s /usr/lib/python3/dist-packages/pyverbs $$site/pyverbs; fi
	touch $@

# The demo leaves its lab fabric running and ends in the TUI on it (or prints the same report
# when there is no terminal); `ibfab lab down --name demo` stops the lab.
demo: install
	$(BIN)/ibfab demo && $(BIN)/ibfab tui --lab demo

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: venv
	$(BIN)/mypy

# Unit tests run on every core (pytest-xdist); the lab, sshd and Slurm tests one at a time, as
# they start simulators and servers of their own.
unit: venv
	$(BIN)/pytest -q -n auto -m 'not lab and not sshd and not slurm'

# Each stage says when it starts and how long it took, so a long run shows where it is.
# $(call stage,N/TOTAL NAME,COMMAND)
define stage
	@t0=$$(date +%s); echo "== [$(1)] started $$(date +%H:%M:%S)"; \
	$(2); rc=$$?; t=$$(( $$(date +%s) - t0 )); \
	if [ $$rc -eq 0 ]; then echo "== [$(1)] passed in $$((t / 60)) min $$((t % 60)) s"; \
	else echo "== [$(1)] FAILED (exit $$rc) after $$((t / 60)) min $$((t % 60)) s"; exit $$rc; fi
endef

test: install
	$(call stage,1/4 lint: ruff and import contracts,$(MAKE) --no-print-directory lint)
	$(call stage,2/4 typecheck: mypy,$(MAKE) --no-print-directory typecheck)
	$(call stage,3/4 unit tests: no lab / sshd / Slurm,$(BIN)/pytest -q -ra -n auto -m 'not lab and not sshd and not slurm')
	$(call stage,4/4 lab / sshd / Slurm tests,$(BIN)/pytest -q -ra -m 'lab or sshd or slurm')

bench: install
	for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
