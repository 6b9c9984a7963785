# Every target builds .venv from scratch when it is missing or older than the requirements files.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8080

.PHONY: venv test lint run bench soak demo image clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

lint: $(STAMP)
	$(PY) -m ruff check .

test: lint
	$(PY) -m pytest -q

run: $(STAMP)
	$(VENV)/bin/gunicorn --config hooks/gunicorn.conf.py --bind $(HOST):$(PORT) 'hooks.app:create_app()'

bench: $(STAMP)
	$(PY) -m bench

soak: $(STAMP)
	$(PY) -m tests.soak

demo: $(STAMP)
	$(PY) -m hooks demo tests/payloads

image:
	docker build -t nvcre-hooks:dev .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
