# `make sim` and `make test` set up first; `make setup` is quick when nothing changed.
VENV ?= .venv
PY := $(VENV)/bin/python
HGPO := $(VENV)/bin/hgpo
# Extra launch arguments, e.g. `make sim ARGS="task:=sort seed:=4"`.
ARGS ?=

.PHONY: setup sim alfworld test test-fast lint clean

setup:
	@VENV=$(VENV) bash tools/setup.sh

sim: setup
	$(HGPO) launch sim record:=true $(ARGS)

# One ALFWorld game end to end over ROS (games are generated once into runs/alfworld/games).
ALFWORLD_GAMES ?= runs/alfworld/games
alfworld: setup
	@test -d $(ALFWORLD_GAMES)/valid_unseen || $(HGPO) alfworld make-games --out $(ALFWORLD_GAMES) --per-type 2
	$(HGPO) launch alfworld games:=$(ALFWORLD_GAMES)/valid_unseen $(ARGS)

lint: setup
	$(PY) -m ruff check .
	$(PY) -m mypy

test: lint
	$(PY) -m pytest -q

# The fast unit tier alone (no ROS graphs, language models, ALFWorld games), for a quick check while editing.
test-fast: setup
	$(PY) -m pytest -q -m "not slow"

clean:
	rm -rf build $(VENV)
