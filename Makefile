# `make sim` and `make test` set up first; `make setup` is quick when nothing changed.
VENV ?= .venv
PY := $(VENV)/bin/python
HGPO := $(VENV)/bin/hgpo
# Extra launch arguments, e.g. `make sim ARGS="task:=sort seed:=4"`.
ARGS ?=

.PHONY: setup sim test lint clean

setup:
	@VENV=$(VENV) bash tools/setup.sh

sim: setup
	$(HGPO) launch sim $(ARGS)

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest -q

clean:
	rm -rf build $(VENV)
