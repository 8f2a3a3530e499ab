# Two entry points (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test test-fast bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

demo: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	$(BIN)/fairjudge demo

test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pytest -q

# The same without the tests marked `slow` (each over ~2 s).
test-fast: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	$(BIN)/python -m pytest -q -m "not slow"

bench: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[bench,openai]'
	$(BIN)/python benchmarks/bench_fit.py
	$(BIN)/python benchmarks/bench_judge.py

clean:
	rm -rf $(VENV) .venv-lower build src/*.egg-info
